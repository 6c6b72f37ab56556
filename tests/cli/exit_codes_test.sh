#!/usr/bin/env bash
# The real paraplan executable: every documented failure gives its exit code and a one-line error
# that names the file (and line, key or plugin), and nothing crashes.
#   exit_codes_test.sh <paraplan> <tests source dir> <recipes dir> <test plugins build dir>
set -uo pipefail
paraplan=$(realpath "$1") tests=$(realpath "$2") recipes=$(realpath "$3") plugins=$(realpath "$4")
data=$tests/data
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$tests/cli/expect.sh"
# A scan cache of its own: a refusal already in a shared cache is logged at debug level only, and
# the cases below expect the warning of a first scan.
export PARAPLAN_PLUGIN_CACHE=$scratch/plugin-scan.json
# This host's ABI ("1.5") and the versions the broken test plugins claim relative to it.
host_abi=$("$paraplan" --version | sed -E 's/.*SDK ABI ([0-9]+)\.([0-9]+).*/\1.\2/')
abi_major=${host_abi%.*} abi_minor=${host_abi#*.}
next_major="$((abi_major + 1)).$abi_minor" next_minor="$abi_major.$((abi_minor + 1))"

with_plugin() {  # a copy of named_plugin.toml naming plugin $1
  sed "s/PLUGIN/$1/" "$data/named_plugin.toml" >"$scratch/$1.toml"
  echo "$scratch/$1.toml"
}

expect "good recipe" 0 '' -- evaluate "$recipes/llama2-7b-fsdp-64xh100.toml"
expect "unknown command" 2 "unknown command 'evaluat'.*did you mean 'evaluate'" -- evaluat
expect "unknown option" 2 "unrecognised option|unknown option" -- evaluate --frobnicate "$recipes/llama2-7b-fsdp-64xh100.toml"
expect "missing file" 3 "nope.toml: cannot open file" -- evaluate "$scratch/nope.toml"
expect "a precision the GPU lacks" 3 "training.precision 'nvfp4': hardware 'h100-sxm' has no nvfp4 tensor cores" -- \
  evaluate "$recipes/llama2-7b-fsdp-64xh100.toml" --set training.precision=nvfp4
expect "a block-scaled precision the GPU has" 0 '' -- \
  evaluate "$recipes/llama2-7b-fsdp-64xh100.toml" --set training.precision=mxfp8 --set cluster.hardware=b200
expect "malformed TOML" 3 "malformed.toml:3:11: " -- evaluate "$data/bad/malformed.toml"
expect "unknown key" 3 "unknown_key.toml:6:1: training.micro_bach: unknown key \(did you mean 'micro_batch'\?\)" -- evaluate "$data/bad/unknown_key.toml"
expect "out of range" 3 "schema_error.toml:13:9: strategy\[0\].stage: 5 is out of range \[0, 3\]" -- evaluate "$data/bad/schema_error.toml"
expect "impossible degree" 1 "fsdp=3 = 3 do not divide cluster.num_gpus = 8" -- evaluate "$data/bad/impossible_degree.toml"
expect "does not fit" 1 "does not fit in GPU memory" -- evaluate "$data/bad/does_not_fit.toml"
grep -q "fits *no" "$scratch/out" || { echo "FAIL does not fit: the report was not printed"; failures=$((failures + 1)); }

# Broken plugins: scanning skips them with a warning; naming one in a recipe is a hard error.
expect "scan skips broken plugins" 0 "skipping plugin .*not_a_library.*not a shared library" -- \
  plugins list --plugin-path "$plugins/not_a_library" --plugin-path "$plugins/abi_major"
expect "named plugin of another major" 3 "strategy\[0\].name: no strategy plugin named 'test_abi_major'.*built for SDK ABI ${next_major//./\\.}; this host supports ABI ${host_abi//./\\.}" -- \
  evaluate "$(with_plugin test_abi_major)" --plugin-path "$plugins/abi_major" -q
expect "named plugin of a newer minor" 3 "built for SDK ABI ${next_minor//./\\.}, newer than this host's ABI ${host_abi//./\\.}" -- \
  evaluate "$(with_plugin test_abi_minor)" --plugin-path "$plugins/abi_minor" -q
expect "named plugin for a future SDK" 3 "built for SDK ABI $((abi_major + 1))\\.x" -- \
  evaluate "$(with_plugin test_abi_v2_only)" --plugin-path "$plugins/abi_v2_only" -q
expect "named plugin without entry point" 3 "no entry point 'paraplan_plugin_v1'" -- \
  evaluate "$(with_plugin test_no_entry)" --plugin-path "$plugins/no_entry" -q
expect "named plugin returning NULL" 3 "returned no metadata" -- \
  evaluate "$(with_plugin test_null_entry)" --plugin-path "$plugins/null_entry" -q
expect "create throws" 3 "strategy\[0\] 'test_create_throws': boom in create" -- \
  evaluate "$(with_plugin test_create_throws)" --plugin-path "$plugins/create_throws"
expect "apply refuses" 1 "strategy\[0\] 'test_apply_error': test_apply_error: refuses every plan" -- \
  evaluate "$(with_plugin test_apply_error)" --plugin-path "$plugins/apply_error"
expect "create returns an error" 3 "strategy\[0\] 'test_status_error': bad parameters" -- \
  evaluate "$(with_plugin test_status_error)" --plugin-path "$plugins/apply_error"

# The current directory is never searched: a plugin sitting there is not found.
cp "$plugins/good/test_good.so" "$scratch/"
pushd "$scratch" >/dev/null
expect "current directory not searched" 3 "no strategy plugin named 'test_good'" -- evaluate "$(with_plugin test_good)"
popd >/dev/null

# paraplan search: a space with no plan in it is exit 1 with a message naming what emptied it; a
# bad objective is a usage error; a malformed value in a strategy's array is an input error at its
# file, line and column.
expect "search: empty space" 1 "empty_space.toml: the search space is empty: no choice of strategy degrees multiplies to cluster.num_gpus = 8" -- \
  search "$data/search/empty_space.toml"
expect "search: every plan rejected for memory" 1 "all_rejected_by_memory.toml: no plan survives the search: .*memory \(.*need more than 72\.0+ GB per GPU" -- \
  search "$data/search/all_rejected_by_memory.toml"
expect "search: bad objective" 2 "--objective: 'speed' is not one of throughput\|memory\|time-to-train" -- \
  search "$data/search/empty_space.toml" --objective speed
expect "search: malformed degree array" 3 "bad_degree_array.toml:14:14: strategy\[0\].degree: expected an integer, an array of integers or \"auto\", got a string" -- \
  search "$data/search/bad_degree_array.toml"

# paraplan validate: a malformed CSV is an input error at its file, line and column; a file none of
# whose rows can be evaluated is exit 1 (the report, with each row's reason, still prints); a
# hardware profile file is found next to the CSV, not in the current directory.
expect "validate: help" 0 '' -- validate --help
expect "validate: missing file" 3 "nope.csv: cannot open file" -- validate "$scratch/nope.csv"
expect "validate: malformed CSV" 3 "malformed.csv:4: column 'tp': 'two' is not an integer >= 1" -- \
  validate "$data/validation/malformed.csv"
expect "validate: every row unevaluable" 1 "no row could be evaluated: all 2 rows are unevaluable" -- \
  validate "$data/validation/unevaluable.csv"
grep -A1 "degrees-do-not-multiply (.*unevaluable.csv:3):" "$scratch/out" | grep -q "tp x pp x dp x cp = 2 x 1 x 2 x 1 = 4, not num_gpus = 8" ||
  { echo "FAIL validate: every row unevaluable: the reasons were not printed"; failures=$((failures + 1)); }
pushd "$scratch" >/dev/null
expect "validate: profile file next to the CSV" 0 '' -- validate "$data/validation/small.csv"
popd >/dev/null
# --recipe ID prints the search recipe a row becomes; searching it gives the row's prediction.
expect "validate: --recipe" 0 '' -- validate "$data/validation/small.csv" --recipe small-blank
cp "$scratch/out" "$scratch/small-blank.toml"
expect_output "validate: --recipe holds the search table" '^try_unlisted = \["sp"\]$'
expect "validate: --json" 0 '' -- validate "$data/validation/small.csv" --json
predicted=$(python3 -c 'import json, sys; print([r["predicted"] for r in json.load(open(sys.argv[1]))["rows"] if r["id"] == "small-blank"][0])' "$scratch/out")
expect "search: a row's recipe" 0 '' -- search "$scratch/small-blank.toml" --json
searched=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["top"][0]["step_s"])' "$scratch/out")
if [[ "$predicted" == "$searched" ]]; then pass; else fail "validate --recipe: searching the row's recipe gives $searched s, validate predicted $predicted s"; fi
expect "validate: --recipe of no row" 3 "--recipe: no row 'small-blnk' in .*small.csv \(did you mean 'small-blank'\?\)" -- \
  validate "$data/validation/small.csv" --recipe small-blnk

# simulate: the same recipe errors as evaluate, plus its own options and the trace file.
seed1="$recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml"
expect "simulate: help" 0 '' -- simulate --help
expect "simulate: a shipped recipe" 0 '' -- simulate "$seed1"
expect "simulate: trace written" 0 '' -- simulate "$seed1" --trace "$scratch/seed1.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))["traceEvents"][0]["ph"]' "$scratch/seed1.json" ||
  { echo "FAIL simulate: the trace is not JSON"; failures=$((failures + 1)); }
expect "simulate: bad --ranks" 2 "--ranks every: expected 'stage' \(one rank per pipeline stage\) or 'all'" -- \
  simulate "$seed1" --ranks every
expect "simulate: unwritable trace" 3 "executor 'simulate': cannot write the trace file $scratch/no/such/dir/t.json: No such file or directory" -- \
  simulate "$seed1" --trace "$scratch/no/such/dir/t.json"
expect "simulate: straggler outside the cluster" 3 "straggler_rank = 64 is not a rank of this 64-GPU plan \(0..63\)" -- \
  simulate "$seed1" --set executor.simulate.straggler_rank=64 --set executor.simulate.straggler_slowdown=2
expect "simulate: unknown executor key" 3 "executor.simulate.rank: unknown key.*did you mean 'ranks'" -- \
  simulate "$seed1" --set executor.simulate.rank=all

# execute and calibrate: what is refused before any MPI job starts.
execute_recipe="$recipes/execute/dp2-2ranks.toml"
expect "execute: help" 0 '' -- execute --help
expect "execute: bad --scale" 2 "--scale 2.000000: expected a factor in \(0, 1\]" -- execute "$execute_recipe" --scale 2
# The launcher is Open MPI's by what it is (its --version, a file only root or you can change),
# not by its name: a program called mpirun is not enough.
expect "execute: launcher not an MPI launcher" 3 "executor.mpi.launcher: 'sh' \(.*\) is not Open MPI's launcher" -- \
  execute "$execute_recipe" --set executor.mpi.launcher=sh
mkdir -p "$scratch/fake"
printf '#!/bin/sh\necho "not a launcher"\n' >"$scratch/fake/mpirun"
chmod 755 "$scratch/fake/mpirun"
expect "execute: a program named mpirun" 3 "executor.mpi.launcher: '$scratch/fake/mpirun' .* is not Open MPI's launcher: its --version says 'not a launcher'" -- \
  execute "$execute_recipe" --set "executor.mpi.launcher=$scratch/fake/mpirun"
chmod 777 "$scratch/fake/mpirun"
expect "execute: a launcher anyone may change" 3 "executor.mpi.launcher: $scratch/fake/mpirun is writable by everyone" -- \
  execute "$execute_recipe" --set "executor.mpi.launcher=$scratch/fake/mpirun"
expect "execute: missing launcher" 3 "executor.mpi.launcher: 'no-such-mpirun' is not on PATH" -- \
  execute "$execute_recipe" --set executor.mpi.launcher=no-such-mpirun
expect "execute: steps out of range" 3 "executor.mpi.steps: 2147483648 is out of range \[1, 100000\]" -- \
  execute "$execute_recipe" --set executor.mpi.steps=2147483648
expect "execute: unknown fault" 3 "executor.mpi.fault: expected '', 'sequence' or 'stall'" -- \
  execute "$execute_recipe" --set executor.mpi.fault=crash
expect "calibrate: help" 0 '' -- calibrate --help
expect "calibrate: one rank" 3 "calibrate needs at least 2 ranks" -- calibrate --ranks 1
expect "calibrate: unwritable output" 3 "cannot write $scratch/no/such/dir/m.toml: .* is not a writable directory" -- \
  calibrate --out "$scratch/no/such/dir/m.toml"
expect "calibrate: an executor that cannot" 3 "executor 'analytic' cannot measure a machine" -- calibrate --executor analytic

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
