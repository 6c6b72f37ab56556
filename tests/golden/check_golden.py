#!/usr/bin/env python3
"""Golden reports: every shipped recipe -> the key figures of its `paraplan evaluate --json`, and
every shipped search recipe (recipes/search) -> its counts and top five (`search --json`: plans,
fit, priced, rejected per reason, layouts timed; each ranked plan's strategies and figures).

The unit tests check the cost model against independent values (papers, hand calculations);
these files pin the figures of the shipped recipes so that any change to them is seen and
decided on, not slipped in; a change meant to make the search faster must leave its golden as
it was. After an intended change, regenerate and review the diff:

    tests/golden/check_golden.py build/default/bin/paraplan recipes tests/golden --update
"""
import json
import math
import pathlib
import subprocess
import sys

# The figures a reader of docs/seed-claims.md relies on.
KEYS = [
    "plan.num_gpus", "plan.num_micro_batches", "memory.per_gpu_bytes", "memory.fits",
    "memory.parameters_bytes", "memory.gradients_bytes", "memory.optimizer_bytes",
    "memory.activations_bytes", "time.step_s", "time.compute_s", "time.bubble_s",
    "pipeline.bubble_fraction", "throughput.tokens_per_s_per_gpu", "throughput.mfu",
]
PREFIXES = ["plan.mesh.", "comm.", "time.exposed_comm_s."]
RELATIVE_TOLERANCE = 1e-9


def flatten(tree, prefix=""):
    for key, value in tree.items():
        path = prefix + key
        if isinstance(value, dict):
            yield from flatten(value, path + ".")
        else:
            yield path, value


def figures(paraplan, recipe):
    run = subprocess.run([paraplan, "evaluate", str(recipe), "--json", "-q"], capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 1: the plan does not fit, the report is still complete
        raise RuntimeError(f"{recipe}: exit {run.returncode}: {run.stderr.strip()}")
    flat = dict(flatten(json.loads(run.stdout)))
    return {key: value for key, value in flat.items() if key in KEYS or any(key.startswith(p) for p in PREFIXES)}


# What a search's golden keeps: the counts, the rejections' plan counts and examples, the top
# five's strategies and figures (not the time it took, nor the interval band's width).
SEARCH_KEYS = ["plans", "valid_plans", "priced_plans", "layouts_timed"]
RANKED_KEYS = ["rank", "step_s", "tokens_per_s_per_gpu", "mfu", "memory_per_gpu_bytes", "strategies", "micro_batch",
               "recompute", "recompute_num_layers", "mesh_order", "layouts_timed"]


def search_figures(paraplan, recipe):
    run = subprocess.run([paraplan, "search", str(recipe), "--json", "-q", "--top", "5", "--threads", "2"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{recipe}: exit {run.returncode}: {run.stderr.strip()}")
    result = json.loads(run.stdout)
    figures = {key: result[key] for key in SEARCH_KEYS}
    for reason, rejected in result["rejected"].items():
        figures[f"rejected.{reason}.plans"] = rejected["plans"]
        figures[f"rejected.{reason}.example"] = rejected["example"]
    for plan in result["top"]:
        for key in RANKED_KEYS:
            figures[f"top.{plan['rank']}.{key}"] = plan.get(key)
    return figures


def differences(expected, actual):
    for key in sorted(set(expected) | set(actual)):
        want, got = expected.get(key), actual.get(key)
        if isinstance(want, float) and isinstance(got, (int, float)):
            if math.isclose(want, got, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12):
                continue
        elif want == got:
            continue
        yield f"{key}: golden {want}, now {got}"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    paraplan, recipes, golden = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    update = "--update" in sys.argv[4:]
    files = [(recipe, recipe.stem, figures) for recipe in
             sorted(recipes.glob("*.toml")) + sorted((recipes / "scenarios").glob("*.toml"))]
    files += [(recipe, "search-" + recipe.stem, search_figures) for recipe in sorted((recipes / "search").glob("*.toml"))]
    failures = passed = 0
    for recipe, name, report in files:
        golden_file = golden / (name + ".json")
        actual = report(paraplan, recipe)
        if update:
            golden_file.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
            print(f"wrote {golden_file}")
            continue
        if not golden_file.exists():
            print(f"FAIL {recipe.name}: no golden file {golden_file} (run with --update)")
            failures += 1
            continue
        problems = list(differences(json.loads(golden_file.read_text()), actual))
        if problems:
            print(f"FAIL {recipe.name}:\n  " + "\n  ".join(problems))
            failures += 1
        else:
            passed += 1
    if not update:
        print(f"{passed} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
