#!/usr/bin/env python3
"""Issue 6's scale check: one step of GPT-3 175B on 512 GPUs (TP 8, PP 8, DP 8, 64 micro-batches)
with every rank simulated, in under 2 s of wall time, start-up and plan composition included.

    simulate_speed_test.py PARAPLAN RECIPES_DIR

The machines are shared and noisy: the best of three runs counts. Not run in sanitizer builds.
"""
import json
import subprocess
import sys
import time

LIMIT_S = 2.0


def main() -> int:
    paraplan, recipes = sys.argv[1], sys.argv[2]
    command = [paraplan, "simulate", f"{recipes}/simulate/gpt3-175b-512xa100.toml", "--ranks", "all", "--json"]
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            print(f"FAIL: exit {done.returncode}: {done.stderr.strip()}")
            return 1
    report = json.loads(done.stdout)
    ranks = report["simulation"]["ranks"]
    print(f"{ranks:.0f} ranks, step {report['time']['step_s']:.3f} s simulated; "
          f"wall {', '.join(f'{w:.2f}' for w in walls)} s (limit {LIMIT_S} s)")
    if ranks != 512:
        print("FAIL: not every rank was simulated")
        return 1
    if min(walls) >= LIMIT_S:
        print("FAIL: too slow")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
