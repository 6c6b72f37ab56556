#!/usr/bin/env python3
"""The trace renderer (docs/simulate/render_trace.py) reads the trace's format version: a simulated
trace (format 2, memory in args.GB) and the same trace written as format 1 (no otherData, memory in
args.GiB) draw the same picture; a trace of a newer format than the script knows is refused with a
one-line error, not drawn wrong.

    render_trace_test.py PARAPLAN RENDER_TRACE SCRATCH_DIR
"""
import json
import pathlib
import subprocess
import sys


def fail(message: str) -> int:
    print(f"FAIL: {message}")
    return 1


def main() -> int:
    paraplan, renderer, scratch = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    scratch.mkdir(parents=True, exist_ok=True)
    trace = scratch / "format2.json"
    subprocess.run([paraplan, "simulate", "simulate/llama2-7b-interleaved-fsdp3-32xh100", "--trace", str(trace), "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    document = json.loads(trace.read_text())
    if document.get("otherData", {}).get("trace_format") != 2:
        return fail(f"the trace states format {document.get('otherData')}, not 2")

    old = dict(document)
    del old["otherData"]
    old["traceEvents"] = [dict(e, args={"GiB": e["args"]["GB"] * 1e9 / 2**30}) if e["ph"] == "C" else e
                          for e in document["traceEvents"]]
    (scratch / "format1.json").write_text(json.dumps(old))
    newer = dict(document, otherData={"generator": "paraplan", "trace_format": 99})
    (scratch / "format99.json").write_text(json.dumps(newer))

    pictures = {}
    for name in ("format2", "format1"):
        subprocess.run([sys.executable, renderer, str(scratch / f"{name}.json"), "-o", str(scratch / f"{name}.svg")],
                       check=True)
        pictures[name] = (scratch / f"{name}.svg").read_text()
    if pictures["format1"] != pictures["format2"]:
        return fail("a format-1 trace (GiB) draws differently from the same step in format 2 (GB)")
    refused = subprocess.run([sys.executable, renderer, str(scratch / "format99.json"), "-o", str(scratch / "x.svg")],
                             capture_output=True, text=True)
    if refused.returncode == 0 or "trace format 99 is newer" not in refused.stderr:
        return fail(f"a format-99 trace was not refused: exit {refused.returncode}, {refused.stderr.strip()}")
    print("render_trace: formats 1 and 2 draw alike; format 99 refused:", refused.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
