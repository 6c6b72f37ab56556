#!/usr/bin/env bash
# The installed tree alone is enough: `cmake --install` into a temporary prefix, then, from an empty
# directory, the installed paraplan runs a shipped recipe by name, finds the installed model presets
# and measured runs, and the installed trace renderer draws a simulated step; the docs are there.
# Every file the commands find must come from the prefix, not from the source tree.
#
# Usage: installed_tree_test.sh <main build dir> <scratch dir>
set -euo pipefail

fail() {
  echo "installed_tree: FAILED: $*" >&2
  exit 1
}
[[ $# -eq 2 ]] || { echo "usage: $0 <main build dir> <scratch dir>" >&2; exit 2; }
[[ -d $1 ]] || fail "build dir '$1' does not exist"
main_build=$(cd "$1" && pwd)
mkdir -p "$2"
scratch=$(mktemp -d "$(cd "$2" && pwd)/run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
cmake --install "$main_build" --prefix "$prefix" >"$scratch/install.log" 2>&1 || { cat "$scratch/install.log" >&2; fail "cmake --install"; }

empty=$scratch/empty
mkdir "$empty"
cd "$empty"
paraplan=$prefix/bin/paraplan
# Nothing from the caller's environment points anywhere else.
unset PARAPLAN_PLUGIN_PATH PARAPLAN_MODEL_PATH

echo "installed_tree: 1. the docs, the recipes and the renderer are installed"
for file in share/doc/paraplan/README.md share/doc/paraplan/recipes.md share/doc/paraplan/report.md \
            share/paraplan/recipes/models/llama2-70b.toml share/paraplan/recipes/validation/published.csv \
            share/paraplan/recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml bin/paraplan-render-trace; do
  [[ -f $prefix/$file ]] || fail "the install has no $file"
done
[[ -x $prefix/bin/paraplan-render-trace ]] || fail "bin/paraplan-render-trace is not executable"

echo "installed_tree: 2. every shipped recipe and data set listed is the installed one"
"$paraplan" recipes --json >recipes.json
"$paraplan" recipes --data --json >data.json
python3 - "$prefix" <<'PY' || fail "paraplan recipes lists files outside the prefix"
import json, sys
prefix = sys.argv[1] + "/share/paraplan/recipes/"
recipes = json.load(open("recipes.json"))["recipes"]
data = json.load(open("data.json"))["data_sets"]
names = {row["name"] for row in recipes}
assert "scenarios/seed1-llama2-70b-4k-64xh100" in names, names
assert {"validation/published", "validation/modern"} <= {row["name"] for row in data}, data
# Model presets and hardware profiles are TOML files but not recipes.
assert not any(name.startswith("models/") for name in names), names
assert not any(name.startswith("validation/") for name in names), names
for row in recipes + data:
    assert row["path"].startswith(prefix), row
PY

echo "installed_tree: 3. a shipped recipe by name, with its model preset from the prefix"
"$paraplan" evaluate seed1-llama2-70b-4k-64xh100 --json -v >evaluate.json 2>evaluate.log ||
  { cat evaluate.log >&2; fail "evaluate by name"; }
grep -q "model preset 'llama2-70b': $prefix/share/paraplan/recipes/models/llama2-70b.toml" evaluate.log ||
  { cat evaluate.log >&2; fail "the model preset did not come from the prefix"; }
python3 - "$prefix" <<'PY' || fail "the evaluated plan is not the installed recipe's"
import json, sys
report = json.load(open("evaluate.json"))
assert report["plan"]["recipe"] == sys.argv[1] + "/share/paraplan/recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml", report["plan"]
# The recipe's own layout (TP 8, PP 2, DP 4 on 64 GPUs), so the plan is the one the file describes.
assert (report["plan"]["mesh"]["tp"], report["plan"]["mesh"]["pp"], report["plan"]["mesh"]["dp"]) == (8, 2, 4), report["plan"]["mesh"]
assert report["memory"]["fits"] is True
PY

echo "installed_tree: 4. a recipe of the user's own finds the installed presets too"
cat >mine.toml <<'TOML'
[model]
preset = "llama2-7b"
[training]
global_batch = 64
micro_batch = 1
[cluster]
hardware = "h100-sxm"
num_gpus = 8
[[strategy]]
name = "fsdp"
degree = 8
stage = 3
TOML
"$paraplan" evaluate mine.toml -v >/dev/null 2>mine.log || { cat mine.log >&2; fail "evaluate mine.toml"; }
grep -q "model preset 'llama2-7b': $prefix/share/paraplan/recipes/models/llama2-7b.toml" mine.log ||
  { cat mine.log >&2; fail "the user's recipe did not find the installed preset"; }

echo "installed_tree: 5. measured runs by name"
"$paraplan" validate nemo-h100-fp8 --json >validate.json 2>validate.log || { cat validate.log >&2; fail "validate by name"; }
python3 - "$prefix" <<'PY' || fail "validate did not read the installed data set"
import json, sys
report = json.load(open("validate.json"))
assert report["files"] == [sys.argv[1] + "/share/paraplan/recipes/validation/nemo-h100-fp8.csv"], report["files"]
assert report["evaluated"] > 0, report["evaluated"]
PY

echo "installed_tree: 6. the installed renderer draws a simulated step"
"$paraplan" simulate simulate/llama2-7b-interleaved-fsdp3-32xh100 --trace trace.json >/dev/null 2>simulate.log ||
  { cat simulate.log >&2; fail "simulate by name"; }
"$prefix/bin/paraplan-render-trace" trace.json -o trace.svg 2>render.log || { cat render.log >&2; fail "paraplan-render-trace"; }
grep -q "<svg" trace.svg || fail "trace.svg is not an SVG"

echo "installed_tree: 7. a name that is no shipped recipe gets the closest ones, exit 3"
set +e
"$paraplan" evaluate seed1-llama2 >/dev/null 2>unknown.log
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "an unknown recipe name exited $rc, not 3"
grep -q "did you mean 'seed1-llama2-70b-4k-64xh100'" unknown.log || { cat unknown.log >&2; fail "no suggestion"; }
echo "installed_tree: 8. the installed Python module, where it was built, finds the same tree"
modules=("$prefix"/lib/python3/dist-packages/paraplan*.so)
if [[ -f ${modules[0]} ]]; then
  PYTHONPATH=$prefix/lib/python3/dist-packages python3 - "$prefix" <<'PY' || fail "the installed Python module"
import sys
import paraplan
report = paraplan.evaluate("seed1-llama2-70b-4k-64xh100")
assert report["plan"]["recipe"].startswith(sys.argv[1] + "/share/paraplan/recipes/"), report["plan"]["recipe"]
assert all(plugin["file"].startswith(sys.argv[1] + "/lib/paraplan/plugins/") for plugin in paraplan.plugins()["plugins"])
PY
else
  echo "installed_tree: (no Python module in this build)"
fi
echo "installed_tree: passed"
