#!/usr/bin/env bash
# Builds the cpu_offload plugin against the *installed* SDK, the way a third party would, and checks
# that the installed paraplan finds and describes it.
#
# Usage: run_test.sh <main build dir> <scratch dir>
#   1. cmake --install <main build dir> --prefix <scratch>/prefix
#   2. configure and build this directory into <scratch>/build against that prefix
#   3. check that find_package(paraplan_sdk 2) is refused (the package version follows the ABI major)
#   4. check that `paraplan plugins list --json` lists cpu_offload as a strategy
#   5. check that `paraplan plugins describe cpu_offload` shows its parameters
#   6. evaluate a recipe that uses it: optimizer state leaves the GPU, the transfer costs time
#   7. search: its declared knob is searched (three options: without it, 256 MiB, 1024 MiB)
#   8. the same plugin built against the previous SDK minor's headers (tests/abi/1.5) loads as
#      ABI 1.5 and runs on a model of several kinds of layer (SDK 1.6's layer stack)
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <main build dir> <scratch dir>" >&2
  exit 2
fi

fail() {
  echo "out_of_tree: FAILED: $*" >&2
  exit 1
}
# Runs a command with its output in a log file; on failure shows the log and fails the test.
run_logged() {
  local log=$1 what=$2
  shift 2
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$what (log: $log)"
  fi
}

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -d $1 ]] || fail "main build dir '$1' does not exist"
main_build=$(cd "$1" && pwd)
mkdir -p "$2"
# A fresh directory per run: two test runs at once must not share an install prefix.
scratch=$(mktemp -d "$(cd "$2" && pwd)/run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
plugin_build=$scratch/build
rm -rf "$prefix" "$plugin_build" "$scratch/wants_major_2"

echo "out_of_tree: 1. installing $main_build into $prefix"
run_logged "$scratch/install.log" "cmake --install failed" \
  cmake --install "$main_build" --prefix "$prefix"
paraplan=$prefix/bin/paraplan
[[ -x $paraplan ]] || fail "the install has no executable $paraplan"

echo "out_of_tree: 2. building $source_dir against the installed SDK"
run_logged "$scratch/configure.log" "configuring the out-of-tree plugin failed" \
  cmake -S "$source_dir" -B "$plugin_build" -DCMAKE_PREFIX_PATH="$prefix"
run_logged "$scratch/build.log" "building the out-of-tree plugin failed" \
  cmake --build "$plugin_build"

echo "out_of_tree: 3. find_package(paraplan_sdk 2) must be refused"
mkdir -p "$scratch/wants_major_2"
cat >"$scratch/wants_major_2/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(wants_major_2 LANGUAGES NONE)
find_package(paraplan_sdk 2 REQUIRED)
CMAKE
major2_log=$scratch/wants_major_2/configure.log
if cmake -S "$scratch/wants_major_2" -B "$scratch/wants_major_2/build" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$major2_log" 2>&1; then
  fail "find_package(paraplan_sdk 2) accepted the installed 1.x SDK (log: $major2_log)"
fi
# It must fail because of the version, with the installed package considered, not for any reason.
if ! grep -q 'compatible with requested version "2"' "$major2_log" ||
  ! grep -q 'paraplan_sdkConfig.cmake, version: 1\.' "$major2_log"; then
  cat "$major2_log" >&2
  fail "find_package(paraplan_sdk 2) failed, but not by rejecting the installed 1.x SDK"
fi

echo "out_of_tree: 4. paraplan plugins list --json"
list_json=$scratch/plugins_list.json
if ! PARAPLAN_PLUGIN_PATH=$plugin_build "$paraplan" plugins list --json >"$list_json" 2>"$scratch/plugins_list.stderr"; then
  cat "$scratch/plugins_list.stderr" >&2
  fail "'paraplan plugins list --json' failed"
fi
if command -v python3 >/dev/null; then
  python3 - "$list_json" <<'PYTHON' || fail "cpu_offload is not listed as a strategy (output: $list_json)"
import json, sys
listing = json.load(open(sys.argv[1]))
found = [p for p in listing["plugins"] if p["name"] == "cpu_offload"]
if not found:
    sys.exit("not listed; skipped files: %s" % listing.get("skipped"))
if found[0]["kind"] != "strategy":
    sys.exit("listed with kind %r" % found[0]["kind"])
PYTHON
else
  tr -d ' \n' <"$list_json" | grep -q '"name":"cpu_offload","kind":"strategy"' ||
    fail "cpu_offload is not listed as a strategy (output: $list_json)"
fi

echo "out_of_tree: 5. paraplan plugins describe cpu_offload"
describe_out=$scratch/plugins_describe.txt
if ! PARAPLAN_PLUGIN_PATH=$plugin_build "$paraplan" plugins describe cpu_offload >"$describe_out" 2>&1; then
  cat "$describe_out" >&2
  fail "'paraplan plugins describe cpu_offload' failed"
fi
for parameter in pinned_buffer_mb; do
  grep -q "$parameter" "$describe_out" ||
    { cat "$describe_out" >&2; fail "'plugins describe cpu_offload' does not mention $parameter"; }
done

echo "out_of_tree: 6. paraplan evaluate with cpu_offload in the recipe"
cat >"$scratch/offload.toml" <<'TOML'
[model]
preset = "llama2-7b"
[training]
global_batch = 64
[cluster]
hardware = "h100-sxm"
num_gpus = 8
[[strategy]]
name = "cpu_offload"
pinned_buffer_mb = 512
TOML
evaluate_json=$scratch/evaluate.json
if ! PARAPLAN_PLUGIN_PATH=$plugin_build "$paraplan" evaluate "$scratch/offload.toml" --json >"$evaluate_json" 2>"$scratch/evaluate.stderr"; then
  cat "$scratch/evaluate.stderr" >&2
  fail "'paraplan evaluate' with cpu_offload failed"
fi
python3 - "$evaluate_json" <<'PYTHON' || fail "the offloaded plan is wrong (output: $evaluate_json)"
import json, sys
report = json.load(open(sys.argv[1]))
memory = report["memory"]
if memory["optimizer_bytes"] != 0:
    sys.exit("optimizer state still on the GPU: %r" % memory["optimizer_bytes"])
# The pinned buffer (512 MiB) is counted with the executor's runtime overhead in other_bytes.
if memory["other_bytes"] < 512 * 1024 * 1024:
    sys.exit("pinned buffer missing from other_bytes: %r" % memory["other_bytes"])
if report["time"]["exposed_comm_s"].get("cpu_offload", 0) <= 0:
    sys.exit("the host transfer is not on the critical path: %r" % report["time"])
PYTHON

echo "out_of_tree: 7. paraplan search tries the plugin's own search cases"
cat >"$scratch/search.toml" <<'TOML'
[model]
preset = "llama2-7b"
[training]
global_batch = 64
micro_batch = 1
recompute = "selective"
[cluster]
hardware = "h100-sxm"
num_gpus = 8
mesh_order = ["tp", "dp"]
TOML
for with_plugin in no yes; do
  path=$scratch/none
  [[ $with_plugin == yes ]] && path=$plugin_build
  if ! PARAPLAN_PLUGIN_PATH=$path "$paraplan" search "$scratch/search.toml" --json --brief --top 1000 \
    >"$scratch/search_$with_plugin.json" 2>"$scratch/search.stderr"; then
    cat "$scratch/search.stderr" >&2
    fail "'paraplan search' failed (cpu_offload loaded: $with_plugin)"
  fi
done
python3 - "$scratch/search_no.json" "$scratch/search_yes.json" <<'PYTHON' || fail "cpu_offload's search cases were not searched"
import json, sys
without, with_plugin = (json.load(open(path)) for path in sys.argv[1:])
# Every plan without the plugin, times three: left out, 256 MiB, 1024 MiB.
if with_plugin["plans"] != 3 * without["plans"]:
    sys.exit("plans: %d with the plugin, %d without; expected three times" % (with_plugin["plans"], without["plans"]))
buffers = set()
for entry in with_plugin["top"]:
    for strategy in entry["strategies"]:
        if strategy["name"] == "cpu_offload":
            buffers.add(strategy["pinned_buffer_mb"])
if buffers != {"256", "1024"}:
    sys.exit("ranked cpu_offload settings: %r" % sorted(buffers))
PYTHON

echo "out_of_tree: 8. built against SDK 1.5, run on a layered model"
previous_build=$scratch/build_1_5
run_logged "$scratch/configure_1_5.log" "configuring the plugin against the 1.5 headers failed" \
  cmake -S "$source_dir" -B "$previous_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCPU_OFFLOAD_SDK_HEADERS="$source_dir/../abi/1.5/include"
run_logged "$scratch/build_1_5.log" "building the plugin against the 1.5 headers failed" \
  cmake --build "$previous_build"
PARAPLAN_PLUGIN_PATH=$previous_build "$paraplan" plugins list --json >"$scratch/list_1_5.json" 2>"$scratch/list_1_5.stderr" ||
  { cat "$scratch/list_1_5.stderr" >&2; fail "'paraplan plugins list' with the 1.5 plugin failed"; }
cat >"$scratch/layered.toml" <<'TOML'
[model]
preset = "deepseek-v3"
layers = 8
seq_len = 1024
[training]
global_batch = 16
[cluster]
hardware = "b300"
num_gpus = 16
[[strategy]]
name = "pp"
degree = 2
[[strategy]]
name = "ep"
degree = 8
[[strategy]]
name = "cpu_offload"
TOML
if ! PARAPLAN_PLUGIN_PATH=$previous_build "$paraplan" evaluate "$scratch/layered.toml" --json \
  >"$scratch/layered.json" 2>"$scratch/layered.stderr"; then
  cat "$scratch/layered.stderr" >&2
  fail "'paraplan evaluate' of a layered model with the 1.5 plugin failed"
fi
python3 - "$scratch/list_1_5.json" "$scratch/layered.json" <<'PYTHON' || fail "the 1.5 plugin did not run on the layered model"
import json, sys
listing, report = (json.load(open(path)) for path in sys.argv[1:])
found = [p for p in listing["plugins"] if p["name"] == "cpu_offload"]
if not found or found[0].get("abi") != "1.5":
    sys.exit("cpu_offload is not listed as ABI 1.5: %r" % found)
if "mla+dense" not in report["plan"]["layer_kinds"] or "mla+moe" not in report["plan"]["layer_kinds"]:
    sys.exit("the model is not layered: %r" % report["plan"].get("layer_kinds"))
# Every kind's optimizer state left the GPU, on both stages.
for stage, row in report["stages"].items():
    if row["optimizer_bytes"] != 0:
        sys.exit("stage %s keeps optimizer state: %r" % (stage, row))
if report["memory"]["optimizer_bytes"] != 0:
    sys.exit("optimizer state still on the GPU: %r" % report["memory"]["optimizer_bytes"])
PYTHON

echo "out_of_tree: all checks passed"
