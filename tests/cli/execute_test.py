#!/usr/bin/env python3
"""paraplan execute and calibrate on real MPI ranks (issue 8's checks).

  execute_test.py <paraplan> <tests source dir>

- --verify passes for every strategy composition in tests/data/execute (DP, FSDP-3, TP+SP,
  PP 1F1B and interleaved, CP ring, EP all-to-all, even and uneven) at 2 and 4 ranks: every collective's and
  message's result was compared with what its group must have contributed;
- the verifier is not vacuous: a rank that numbers its collectives one ahead fails the job;
- no job hangs: a rank that never starts is ended by --timeout, with no process left behind;
- a rank count that is not the plan's is refused; under the user's own mpirun the job prints one
  report; --trace writes every rank's measured step in Chrome's format;
- calibrate writes a profile the toml hardware plugin loads, and execute predicts with it.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

paraplan = os.path.realpath(sys.argv[1])
data = Path(sys.argv[2]) / "data" / "execute"
failures = []


def run(*args, timeout=180, launcher=()):
    started = time.monotonic()
    done = subprocess.run([*launcher, paraplan, *args], capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))
    if not condition:
        failures.append(name)


def leftover_ranks():
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines()
            if line.split() and line.split()[0] in (paraplan, "mpirun") and " execute " in line]


# Every composition, both sizes, verified.
recipes = sorted(data.glob("*.toml"))
check("verify recipes present", len(recipes) >= 14, f"found {len(recipes)}")
for recipe in recipes:
    done, _ = run("execute", str(recipe), "--verify", "--steps", "2", "--json")
    name = f"verify {recipe.stem}"
    if done.returncode != 0:
        check(name, False, f"exit {done.returncode}: {done.stderr.strip()[-400:]}")
        continue
    report = json.loads(done.stdout)
    gpus = report["plan"]["num_gpus"]
    verify, measured = report["verify"], report["measured"]
    check(name, verify["passed"] is True and verify["checked_transfers"] > 0 and verify["checked_values"] > 0
          and report["execution"]["ranks"] == gpus
          and measured["step_min_s"] <= measured["step_s"] <= measured["step_max_s"]
          and len([k for k in measured["busy_fraction"]]) == gpus,
          json.dumps(report.get("verify")) + " " + json.dumps(measured))
    # Dropless routing with imbalance runs the expert exchanges with per-peer counts.
    if "uneven" in recipe.stem:
        check(name + " used MPI_Alltoallv", verify.get("uneven_all_to_alls", 0) > 0, json.dumps(verify))

# The verifier catches a rank whose collectives do not line up with its group's.
done, _ = run("execute", str(data / "tp-2.toml"), "--verify", "--set", 'executor.mpi.fault="sequence"')
check("a misnumbered collective fails verification", done.returncode == 3
      and "verification failed on rank" in done.stderr and "the failing rank's reason is above" in done.stderr,
      f"exit {done.returncode}: {done.stderr[-600:]}")

# A rank that never starts: the timeout ends every process of the job.
done, seconds = run("execute", str(data / "pp1f1b-4.toml"), "--timeout", "3", "--set", 'executor.mpi.fault="stall"',
                    timeout=60)
check("a stalled job ends at its timeout", done.returncode == 3 and seconds < 30
      and "did not finish within 3 s" in done.stderr, f"exit {done.returncode} after {seconds:.1f} s: {done.stderr[-400:]}")
time.sleep(0.5)
check("no rank left behind", not leftover_ranks(), "\n".join(leftover_ranks()))

# The plan's GPU count is the job's rank count.
done, _ = run("execute", str(data / "dp-2.toml"), "--ranks", "4")
check("--ranks other than the plan's GPUs", done.returncode == 3
      and re.search(r"runs on 2 GPUs, so it needs 2 ranks, not 4", done.stderr) is not None, done.stderr)

# The user's own launcher: one report, from rank 0.
mpirun = ["mpirun", "-np", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
done, _ = run("execute", str(data / "dp-2.toml"), "--json", "--steps", "2", launcher=mpirun)
reports = done.stdout.count('"measured"')
check("under the user's mpirun: one report", done.returncode == 0 and reports == 1,
      f"exit {done.returncode}, {reports} reports: {done.stderr[-400:]}")

with tempfile.TemporaryDirectory() as scratch:
    # The trace: every rank, every step of the schedule, in Chrome's event format.
    trace = Path(scratch) / "trace.json"
    done, _ = run("execute", str(data / "pp1f1b-2.toml"), "--steps", "1", "--trace", str(trace), "--json")
    ok = done.returncode == 0 and trace.exists()
    if ok:
        events = json.loads(trace.read_text())["traceEvents"]
        steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "step"]
        pids = {e["pid"] for e in events if e.get("ph") == "X"}
        # 1F1B, 2 stages, 8 samples over 1 data-parallel rank of micro-batch 1: 8 forward and
        # 8 backward steps on each of the 2 ranks.
        ok = pids == {0, 1} and len(steps) == 2 * 8 * 2 and all(e["dur"] >= 0 for e in steps)
    check("--trace: every rank's schedule steps", ok, f"exit {done.returncode}: {done.stderr[-300:]}")

    # Calibrate, then predict with the measured profile.
    profile = Path(scratch) / "machine.toml"
    done, seconds = run("calibrate", "--ranks", "2", "--out", str(profile), timeout=300)
    check("calibrate writes a profile", done.returncode == 0 and profile.exists() and "[[tiers]]" in profile.read_text(),
          f"exit {done.returncode}: {done.stderr[-400:]}")
    print(f"     (calibrate --ranks 2 took {seconds:.1f} s)")
    if profile.exists():
        done, _ = run("execute", str(data / "dp-2.toml"), "--json", "--set", f'cluster.hardware="{profile}"')
        ok = done.returncode == 0
        if ok:
            report = json.loads(done.stdout)
            ok = report["plan"]["hardware"] != "h100-sxm" and report["predicted"]["step_s"] > 0
        check("execute predicts with the calibrated profile", ok, f"exit {done.returncode}: {done.stderr[-300:]}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
