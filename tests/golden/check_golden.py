#!/usr/bin/env python3
"""Golden reports: every shipped recipe -> the key figures of its `paraplan evaluate --json`.

The unit tests check the cost model against independent values (papers, hand calculations);
these files pin the figures of the shipped recipes so that any change to them is seen and
decided on, not slipped in. After an intended change, regenerate and review the diff:

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
    files = sorted(recipes.glob("*.toml")) + sorted((recipes / "scenarios").glob("*.toml"))
    failures = passed = 0
    for recipe in files:
        golden_file = golden / (recipe.stem + ".json")
        actual = figures(paraplan, recipe)
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
