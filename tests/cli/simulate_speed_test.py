#!/usr/bin/env python3
"""Issue 6's scale check: one step of GPT-3 175B on 512 GPUs (TP 8, PP 8, DP 8, 64 micro-batches)
with every rank simulated, in under 2 s, start-up and plan composition included.

    simulate_speed_test.py PARAPLAN RECIPES_DIR

The machines are shared and noisy: what counts is the command's CPU time (user + system, which
another job on the machine does not inflate the way it inflates wall time), best of three runs;
the wall times are printed beside it. Not run in sanitizer builds.
"""
import json
import resource
import subprocess
import sys
import time

LIMIT_S = 2.0


def main() -> int:
    paraplan, recipes = sys.argv[1], sys.argv[2]
    command = [paraplan, "simulate", f"{recipes}/simulate/gpt3-175b-512xa100.toml", "--ranks", "all", "--json"]
    walls, cpus = [], []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            print(f"FAIL: exit {done.returncode}: {done.stderr.strip()}")
            return 1
    report = json.loads(done.stdout)
    ranks = report["simulation"]["ranks"]
    print(f"{ranks:.0f} ranks, step {report['time']['step_s']:.3f} s simulated; "
          f"CPU {', '.join(f'{c:.2f}' for c in cpus)} s (limit {LIMIT_S} s); "
          f"wall {', '.join(f'{w:.2f}' for w in walls)} s")
    if ranks != 512:
        print("FAIL: not every rank was simulated")
        return 1
    if min(cpus) >= LIMIT_S:
        print("FAIL: too slow")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
