#!/usr/bin/env python3
"""The HTML reports (--html FILE) in a real browser: Debian's chromium, headless, loads each page
offline, and the test fails on any console message, a script error the page caught, or a chart
that drew other than what the command's own JSON (or trace) says it must: one bar per pipeline
stage and memory part, one slice per step-time part, one bar per trace event, one point per
evaluated run, one point per swept value with a plan, one point per cell of a search's timed plans and per plan of its Pareto front
(itself checked against the page's points). A page is also written for a plan that does not fit, and for a recipe whose file
name is markup (it must show as text).

Usage: html_report_test.py PARAPLAN SCRATCH_DIR [--screenshots DIR]
Without chromium the test is skipped (exit 77) unless PARAPLAN_REQUIRE_BROWSER=1 (CI sets it).
--screenshots DIR also saves each page as DIR/<name>.png (docs/report/ holds them).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(message):
    print(f"html_report: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def run_paraplan(paraplan, arguments, allowed=(0,)):
    run = subprocess.run([paraplan, *arguments], capture_output=True, text=True, timeout=600)
    if run.returncode not in allowed:
        fail(f"paraplan {' '.join(arguments)}: exit {run.returncode}: {run.stderr.strip()}")
    return run


class Browser:
    def __init__(self, binary, scratch):
        self.binary = binary
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=scratch)

    def arguments(self):
        return [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", "--enable-logging=stderr", "--v=0"]

    def load(self, page, fragment=""):
        """The DOM after the page's scripts ran, and every console message the page logged."""
        run = subprocess.run([*self.arguments(), "--dump-dom", page.resolve().as_uri() + fragment],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fail(f"chromium could not load {page}: exit {run.returncode}: {run.stderr[-2000:]}")
        console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
        return run.stdout, console

    def screenshot(self, page, png, height):
        subprocess.run([*self.arguments(), f"--window-size=1280,{height}", f"--screenshot={png.resolve()}",
                        page.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=True)


def drawn_charts(dom):
    return {name: int(count) for name, count in re.findall(r'data-chart="([^"]+)" data-drawn="(\d+)"', dom)}


def check_page(browser, page, expected, screenshots, height, fragment=""):
    dom, console = browser.load(page, fragment)
    if console:
        fail(f"{page.name}: console messages:\n  " + "\n  ".join(console))
    errors = re.search(r'<div id="paraplan-errors">(.*?)</div>', dom, re.S)
    if errors is None or errors.group(1).strip():
        fail(f"{page.name}: the page reported script errors: {errors.group(1) if errors else 'no error element'}")
    if 'data-report-drawn="true"' not in dom:
        fail(f"{page.name}: the report script did not finish")
    charts = drawn_charts(dom)
    if charts != expected:
        fail(f"{page.name}: charts drawn {charts}, expected {expected}")
    if screenshots:
        browser.screenshot(page, screenshots / (page.stem + ".png"), height)
    print(f"html_report: {page.name}: {charts}")
    return dom


def embedded_data(page):
    """The JSON the page carries (its data script element)."""
    text = page.read_text()
    found = re.search(r'<script id="paraplan-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def memory_marks(report):
    """Bars of the memory chart: a part per stage, from the report's own stages (or peaks)."""
    if "stages" in report:
        return 5 * len(report["stages"])
    if "peak_bytes" in report["memory"]:
        return len(report["memory"]["peak_bytes"])
    return 5


def time_marks(report):
    """Slices of the step-time bar: compute, each exposed communication, then the other parts."""
    time = report["time"]
    parts = [time["compute_s"]] + [v for v in time.get("exposed_comm_s", {}).values() if v > 0]
    parts += [time[k] for k in ("bubble_s", "optimizer_s", "host_wait_s", "overlap_contention_s") if time.get(k, 0) > 0]
    rest = time["step_s"] - sum(parts)
    return len(parts) + (1 if abs(rest) > 0.005 * time["step_s"] else 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("paraplan")
    parser.add_argument("scratch")
    parser.add_argument("--screenshots", type=pathlib.Path)
    args = parser.parse_args()

    binary = chromium_binary()
    if binary is None:
        if os.environ.get("PARAPLAN_REQUIRE_BROWSER") == "1":
            fail("no chromium, and PARAPLAN_REQUIRE_BROWSER=1 (install it: .ci/install-deps.sh --browser)")
        print("html_report: skipped: no chromium (.ci/install-deps.sh --browser installs Debian's)")
        return SKIP
    pathlib.Path(args.scratch).mkdir(parents=True, exist_ok=True)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="run.", dir=args.scratch))
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    browser = Browser(binary, scratch)
    paraplan = args.paraplan

    try:
        # evaluate: a pipelined dense plan, every stage's memory broken down.
        page = scratch / "evaluate.html"
        report = json.loads(run_paraplan(paraplan, ["evaluate", "seed1-llama2-70b-4k-64xh100", "--json", "--html", str(page)]).stdout)
        check_page(browser, page, {"memory": memory_marks(report), "step-time": time_marks(report)}, args.screenshots, 1300)

        # simulate: the timeline has every event of the trace the same run writes.
        page, trace = scratch / "simulate.html", scratch / "simulate-trace.json"
        report = json.loads(run_paraplan(paraplan, ["simulate", "simulate/llama2-7b-interleaved-fsdp3-32xh100", "--json",
                                                    "--trace", str(trace), "--html", str(page)]).stdout)
        events = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X"]
        check_page(browser, page, {"memory": memory_marks(report), "step-time": time_marks(report), "timeline": len(events)},
                   args.screenshots, 1900)

        # A step of 392,000 events: the page keeps each micro-batch's passes (category "step").
        page, trace = scratch / "simulate-large.html", scratch / "simulate-large-trace.json"
        report = json.loads(run_paraplan(paraplan, ["simulate", "seed1-llama2-70b-4k-64xh100", "--json",
                                                    "--trace", str(trace), "--html", str(page)]).stdout)
        steps = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "step"]
        dom = check_page(browser, page, {"memory": memory_marks(report), "step-time": time_marks(report), "timeline": len(steps)},
                         None, 0)
        if "op-level events within them are left out" not in dom:
            fail("simulate-large.html: the page does not say that it left the op-level events out")

        # validate: one point per evaluated run, one chart per metric.
        page = scratch / "validate.html"
        report = json.loads(run_paraplan(paraplan, ["validate", "published", "nemo-h100-fp8", "--json", "--html", str(page)]).stdout)
        expected = {}
        for row in report["rows"]:
            if row.get("predicted") is not None:
                expected["validate-" + row["metric"]] = expected.get("validate-" + row["metric"], 0) + 1
        check_page(browser, page, expected, args.screenshots, 1100)

        # search: a point per cell of timed plans and per plan of the Pareto front; the cells hold
        # every timed plan, the front is what no other point beats on both figures, and the winner
        # (the fastest) is on it. Below, the winner's report; "#front-N" selects a front plan.
        page = scratch / "search.html"
        report = json.loads(run_paraplan(paraplan, ["search", "search/gpt3-175b-512xa100", "--json", "--html", str(page)]).stdout)
        data = embedded_data(page)
        cells, front = data["cells"], data["front"]
        if sum(cell["plans"] for cell in cells) != report["valid_plans"]:
            fail(f"search.html: the cells hold {sum(c['plans'] for c in cells)} plans, the search timed {report['valid_plans']}")
        points = [(p["memory_per_gpu_bytes"], p["step_s"]) for p in cells + front]
        for plan in front:
            m, s = plan["memory_per_gpu_bytes"], plan["step_s"]
            if any(pm <= m and ps <= s and (pm < m or ps < s) for pm, ps in points):
                fail(f"search.html: front plan at {m} B, {s} s is beaten on both figures by a point of the page")
        winner = report["top"][0]
        if not any(p["step_s"] == winner["step_s"] and p["memory_per_gpu_bytes"] == winner["memory_per_gpu_bytes"] for p in front):
            fail("search.html: the winner is not on the Pareto front")
        check_page(browser, page, {"search": len(cells) + len(front), "memory": memory_marks(report["winner"]),
                                   "step-time": time_marks(report["winner"])}, args.screenshots, 1500)
        chosen = len(front) // 2
        dom = check_page(browser, page, {"search": len(cells) + len(front), "memory": memory_marks(front[chosen]["report"]),
                                         "step-time": time_marks(front[chosen]["report"])}, None, 0, f"#front-{chosen}")
        if "The selected plan's report" not in dom:
            fail("search.html#front-N: the selected plan's report is not shown")
        # Every front plan's report carries its range, as the winner's does.
        if any("uncertainty" not in plan["report"] for plan in front if "report" in plan):
            fail("search.html: a front plan's report has no uncertainty")
        if "Ranges: where" not in dom:
            fail("search.html#front-N: the selected plan's ranges are not shown")

        # A sweep: a point per value that has a plan, in each of its two charts.
        page = scratch / "sweep.html"
        report = json.loads(run_paraplan(paraplan, ["evaluate", "seed1-llama2-70b-4k-64xh100", "--sweep",
                                                    "cluster.num_gpus=16,32,64,128,256,512,1000", "--json", "--html", str(page)],
                                         allowed=(1,)).stdout)
        planned = sum(1 for point in report["sweep"]["points"] if "report" in point)
        check_page(browser, page, {"sweep-throughput": planned, "sweep-mfu": planned}, args.screenshots, 900)

        # A plan that does not fit still gets its page (exit 1), which says so.
        page = scratch / "does-not-fit.html"
        report = json.loads(run_paraplan(paraplan, ["evaluate", "seed7-llama2-70b-fsdp3-4xb200", "--json", "--html", str(page)],
                                         allowed=(1,)).stdout)
        dom = check_page(browser, page, {"memory": memory_marks(report), "step-time": time_marks(report)}, None, 0)
        if "The plan does not fit in GPU memory" not in dom:
            fail("does-not-fit.html: the page does not say that the plan does not fit")

        # A recipe whose file name is markup: its name shows as text, no element is made of it.
        shipped = json.loads(run_paraplan(paraplan, ["recipes", "--json"]).stdout)["recipes"]
        hostile = scratch / "<img src=x onerror=alert(1)>.toml"
        shutil.copy(next(r["path"] for r in shipped if r["name"] == "llama2-7b-fsdp-64xh100"), hostile)
        page = scratch / "hostile.html"
        report = json.loads(run_paraplan(paraplan, ["evaluate", str(hostile), "--json", "--html", str(page)]).stdout)
        dom = check_page(browser, page, {"memory": memory_marks(report), "step-time": time_marks(report)}, None, 0)
        if "<img" in dom or "&lt;img src=x onerror=alert(1)&gt;" not in dom:
            fail("hostile.html: the recipe's file name was not shown as text")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("html_report: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
