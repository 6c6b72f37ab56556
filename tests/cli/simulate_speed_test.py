#!/usr/bin/env python3
"""Issue 6's scale check: one step of GPT-3 175B on 512 GPUs (TP 8, PP 8, DP 8, 64 micro-batches)
with every rank simulated, in under 2 s, start-up and plan composition included. And issue 20's
memory bound: weak-scaled from 64 to 1,024 ranks (data parallelism grown, 64 micro-batches per
rank), the command's peak memory grows by at most 20 KiB per simulated rank.

    simulate_speed_test.py PARAPLAN RECIPES_DIR

The machines are shared and noisy: what counts is the command's CPU time (user + system, which
another job on the machine does not inflate the way it inflates wall time), best of three runs;
the wall times are printed beside it. Not run in sanitizer builds.
"""
import json
import os
import resource
import subprocess
import sys
import time

LIMIT_S = 2.0
LIMIT_BYTES_PER_RANK = 20 * 1024


def peak_memory_bytes(command: list) -> int:
    """The command's own peak resident memory (Linux reports ru_maxrss in KiB)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {os.waitstatus_to_exitcode(status)}: {child.stderr.read()}")
    return usage.ru_maxrss * 1024


def memory_per_rank(paraplan: str, recipes: str) -> int:
    def run(ranks: int) -> int:
        return peak_memory_bytes([paraplan, "simulate", f"{recipes}/simulate/gpt3-175b-512xa100.toml", "--ranks", "all",
                                  "--set", f"cluster.num_gpus={ranks}", "--set", f"training.global_batch={ranks}", "-q"])
    small, large = run(64), run(1024)
    per_rank = (large - small) / (1024 - 64)
    print(f"peak memory {small / 2**20:.1f} MiB at 64 ranks, {large / 2**20:.1f} MiB at 1,024: "
          f"{per_rank / 1024:.2f} KiB per rank (limit {LIMIT_BYTES_PER_RANK / 1024:.0f} KiB)")
    return 0 if per_rank <= LIMIT_BYTES_PER_RANK else 1


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
    if memory_per_rank(paraplan, recipes) != 0:
        print("FAIL: memory grows too fast with the ranks")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
