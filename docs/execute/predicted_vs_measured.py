#!/usr/bin/env python3
"""Measured against predicted: docs/execute.md's table, reproduced on this machine.

  docs/execute/predicted_vs_measured.py build/default/bin/paraplan [--profile FILE.toml] [--steps N]

Calibrates this machine at 2 ranks (unless --profile names a profile already measured), executes
the three plans of recipes/execute with that profile, and prints a Markdown table of the measured
step (median of N steps after a warm-up) against what simulate and evaluate predict for the same
plan. Exits 1 when a prediction misses by more than 30 % or the plans' order by predicted step
is not their order by measured step: issue 8's acceptance check. Run it on a quiet machine:
other load slows the measurement, not the prediction.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

RECIPES = ["dp2-2ranks", "tp2-2ranks", "pp2-1f1b-2ranks"]
TOLERANCE_PCT = 30.0

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("paraplan")
parser.add_argument("--profile", help="a profile from paraplan calibrate (default: calibrate now, 2 ranks)")
parser.add_argument("--steps", type=int, default=5)
arguments = parser.parse_args()
recipes_dir = Path(__file__).resolve().parents[2] / "recipes" / "execute"


def paraplan(*args):
    done = subprocess.run([arguments.paraplan, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"paraplan {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


with tempfile.TemporaryDirectory() as scratch:
    profile = arguments.profile
    if not profile:
        profile = str(Path(scratch) / "machine.toml")
        paraplan("calibrate", "--ranks", "2", "--out", profile)
    # The shared-memory tier's bandwidth: the last bandwidth in the file ([[tiers]] comes last).
    tier = [line for line in Path(profile).read_text().splitlines() if line.startswith("bandwidth_gb_s =")][-1]
    rows = []
    for name in RECIPES:
        report = json.loads(paraplan("execute", str(recipes_dir / f"{name}.toml"), "--json", "--steps",
                                     str(arguments.steps), "--set", f'cluster.hardware="{profile}"'))
        measured, predicted = report["measured"], report["predicted"]
        rows.append({
            "name": name,
            "measured": measured["step_s"], "low": measured["step_min_s"], "high": measured["step_max_s"],
            "compute": measured["compute_s"], "comm": sum(measured["exposed_comm_s"].values()),
            "wait": measured["pipeline_wait_s"],
            "simulate": predicted["simulate"]["step_s"], "simulate_err": predicted["simulate"]["error_pct"],
            "evaluate": predicted["evaluate"]["step_s"], "evaluate_err": predicted["evaluate"]["error_pct"],
        })

print(f"profile: {profile} ({tier.split('#')[0].strip()} for the shared-memory tier)\n")
print("| recipe | measured step (min-max) | compute | exposed comm | pipeline wait | simulate | error | evaluate | error |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['name']} | {r['measured']*1e3:.1f} ms ({r['low']*1e3:.1f}-{r['high']*1e3:.1f}) | {r['compute']*1e3:.1f} ms "
          f"| {r['comm']*1e3:.1f} ms | {r['wait']*1e3:.1f} ms | {r['simulate']*1e3:.1f} ms | {r['simulate_err']:+.1f} % "
          f"| {r['evaluate']*1e3:.1f} ms | {r['evaluate_err']:+.1f} % |")

failures = [f"{r['name']}: simulate misses by {r['simulate_err']:+.1f} %" for r in rows
            if abs(r["simulate_err"]) > TOLERANCE_PCT]
by_prediction = [r["name"] for r in sorted(rows, key=lambda r: r["simulate"])]
by_measurement = [r["name"] for r in sorted(rows, key=lambda r: r["measured"])]
print(f"\nfastest to slowest, predicted: {', '.join(by_prediction)}; measured: {', '.join(by_measurement)}")
if by_prediction != by_measurement:
    failures.append("the predicted order is not the measured order")
for failure in failures:
    print("FAIL " + failure)
sys.exit(1 if failures else 0)
