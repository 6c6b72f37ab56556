#!/usr/bin/env python3
"""paraplan beside Calculon (Isaev et al., SC'23; github.com/calculon-ai/calculon) on the same plan
and the same search, on this machine, in one run: issue 20's comparison, reproducible.

    tests/bench/calculon_side_by_side.py --calculon DIR [--build build/default] [--python PYTHON]

DIR is a checkout of Calculon, fetched by you (git clone https://github.com/calculon-ai/calculon);
it needs numpy, pandas and psutil (Debian: python3-numpy python3-pandas python3-psutil), so
PYTHON defaults to /usr/bin/python3. Nothing of Calculon is shipped or copied here: this script
runs its command line and imports its package from DIR.

The plan: GPT-3 175B on 512 A100 80GB, TP 8 x PP 8 x DP 8, 512 sequences of 2048 tokens per step
in micro-batches of one, selective recomputation, Megatron sequence parallelism, the optimizer
sharded over DP with its communication overlapped (recipes/simulate/gpt3-175b-512xa100.toml;
Calculon: models/gpt3-175B.json, systems/a100_80g.json and the execution written below). The
search: GPT-3 175B on 512 A100 at a batch of 1536 (recipes/search/gpt3-175b-512xa100.toml;
Calculon's llm-optimal-execution, whose candidates are counted with --debug and priced at its
measured cost per evaluation: running it would take days).

Three figures, each the same work on both sides, CPU time (user + system, best of --repeat):
  1. the whole command for one plan (start-up, reading, evaluating, writing the report);
  2. one evaluation inside a running process (Calculon: Llm() + compile + run + stats, what its
     search does per candidate; paraplan: BM_ComposeAndEvaluate, compose + evaluate);
  3. the search, per candidate and in all.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

# Calculon's execution for the paraplan recipe's plan (Calculon's README documents the keys).
EXECUTION = {
    "num_procs": 512, "tensor_par": 8, "pipeline_par": 8, "data_par": 8,
    "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1,
    "batch_size": 512, "microbatch_size": 1, "datatype": "float16",
    "fused_activation": True, "attention_type": "multihead",
    "activation_recompute": "attn_only", "pipeline_interleaving": 1,
    "optimizer_sharding": True, "tensor_par_comm_type": "rs_ag",
    "tensor_par_overlap": "none", "seq_par_ag_redo": False, "data_par_overlap": True,
    "weight_offload": False, "activations_offload": False, "optimizer_offload": False,
    "training": True,
}

# One Calculon evaluation as its llm-optimal-execution runs each candidate, timed in process.
CALCULON_LOOP = """
import logging, sys, time
import calculon
from calculon.llm import Llm
app = Llm.Application(calculon.io.read_json_file(sys.argv[1]))
execution = calculon.io.read_json_file(sys.argv[2])
system = calculon.System(calculon.io.read_json_file(sys.argv[3]))
runs = int(sys.argv[4])
start = time.process_time()
for _ in range(runs):
    model = Llm(app, logging.Logger("sub"))
    model.compile(system, Llm.Execution.from_json(execution))
    model.run(system)
    stats = model.get_stats_json(False)
print((time.process_time() - start) / runs)
"""


def best_cpu(command, repeat, env=None):
    """The least CPU time (user + system, from the child's own rusage) of `repeat` runs, and the
    last run's stdout."""
    best, out = None, ""
    for _ in range(repeat):
        with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
            child = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr)
            _, status, usage = os.wait4(child.pid, 0)
            stdout.seek(0)
            stderr.seek(0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{' '.join(map(str, command))}: exit {os.waitstatus_to_exitcode(status)}: "
                         f"{stderr.read().strip()[-400:]}")
            cpu = usage.ru_utime + usage.ru_stime
            best = cpu if best is None else min(best, cpu)
            out = stdout.read()
    return best, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calculon", required=True, type=pathlib.Path, help="a checkout of calculon-ai/calculon")
    parser.add_argument("--build", default="build/default", type=pathlib.Path, help="paraplan's build tree")
    parser.add_argument("--python", default="/usr/bin/python3", help="a Python with numpy, pandas and psutil")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each whole command (best CPU kept)")
    parser.add_argument("--evaluations", type=int, default=200, help="Calculon evaluations timed in process")
    args = parser.parse_args()

    repo = pathlib.Path(__file__).resolve().parents[2]
    paraplan = args.build / "bin" / "paraplan"
    calculon = args.calculon.resolve()
    env = dict(os.environ, PYTHONPATH=str(calculon))
    model, system = calculon / "models" / "gpt3-175B.json", calculon / "systems" / "a100_80g.json"
    plan_recipe = repo / "recipes" / "simulate" / "gpt3-175b-512xa100.toml"
    search_recipe = repo / "recipes" / "search" / "gpt3-175b-512xa100.toml"

    with tempfile.TemporaryDirectory() as scratch:
        execution = pathlib.Path(scratch) / "execution.json"
        execution.write_text(json.dumps(EXECUTION))
        stats = pathlib.Path(scratch) / "stats.json"

        # 1. The whole command, one plan.
        calculon_cpu, _ = best_cpu([args.python, calculon / "bin" / "calculon", "llm", model, execution, system, stats],
                                   args.repeat, env=env)
        calculon_step = json.loads(stats.read_text())["total_time"]
        paraplan_cpu, out = best_cpu([paraplan, "evaluate", plan_recipe, "--json", "-q"], args.repeat)
        paraplan_step = json.loads(out)["time"]["step_s"]

        # 2. One evaluation in a running process.
        _, out = best_cpu([args.python, "-c", CALCULON_LOOP, model, execution, system, str(args.evaluations)], 1, env=env)
        calculon_eval = float(out.strip())
        bench_out = pathlib.Path(scratch) / "bench.json"
        subprocess.run([args.build / "bin" / "paraplan_evaluate_benchmark",
                        "--benchmark_filter=^BM_ComposeAndEvaluate/gpt3-175b-512xa100$",
                        f"--benchmark_out={bench_out}", "--benchmark_out_format=json"],
                       check=True, capture_output=True)
        bench = json.loads(bench_out.read_text())["benchmarks"][0]
        paraplan_eval = bench["cpu_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}[bench["time_unit"]]

        # 3. The searches: Calculon's candidates counted (--debug enumerates without evaluating).
        _, out = best_cpu([args.python, calculon / "bin" / "calculon", "-l", "-", "llm-optimal-execution", model, "512",
                           "1536", "float16", system, pathlib.Path(scratch) / "optimal.json", "--debug", "-c", "1"],
                          1, env=env)
        calculon_candidates = next(int(line.split(":")[-1]) for line in out.splitlines() if "Total executions" in line)
        search_cpu, out = best_cpu([paraplan, "search", search_recipe, "--threads", "1", "--json", "-q"], 1)
        search = json.loads(out)

    calculon_search = calculon_candidates * calculon_eval
    rows = [
        ("one plan, whole command (CPU)", f"{calculon_cpu * 1e3:.0f} ms", f"{paraplan_cpu * 1e3:.1f} ms",
         calculon_cpu / paraplan_cpu),
        ("one evaluation in process (CPU)", f"{calculon_eval * 1e6:,.0f} µs", f"{paraplan_eval * 1e6:,.1f} µs",
         calculon_eval / paraplan_eval),
        ("search: candidates", f"{calculon_candidates:,}", f"{search['plans']:,} ({search['priced_plans']:,} priced)", None),
        ("search: CPU per candidate", f"{calculon_eval * 1e6:,.0f} µs", f"{search_cpu / search['plans'] * 1e6:,.2f} µs",
         calculon_eval / (search_cpu / search["plans"])),
        ("search: CPU in all", f"{calculon_search / 3600:,.1f} h (estimated)", f"{search_cpu:.2f} s",
         calculon_search / search_cpu),
    ]
    print(f"GPT-3 175B, TP 8 x PP 8 x DP 8 on 512 A100: step {calculon_step:.3f} s (Calculon), "
          f"{paraplan_step:.3f} s (paraplan)\n")
    print("| | Calculon | paraplan | ratio |")
    print("| --- | --: | --: | --: |")
    for name, theirs, ours, ratio in rows:
        print(f"| {name} | {theirs} | {ours} | {'' if ratio is None else f'{ratio:,.0f}×'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
