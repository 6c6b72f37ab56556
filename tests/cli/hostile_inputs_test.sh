#!/usr/bin/env bash
# Issue 15's cases, each through the real executable: hostile plugins (the zoo), the plugin path
# rules, and inputs that used to crash or fool the host. Every case ends with its documented exit
# code and one clear line, and the commands that do not name a broken plugin keep working.
#   hostile_inputs_test.sh <paraplan> <tests source dir> <recipes dir> <test plugins build dir>
set -uo pipefail
paraplan=$(realpath "$1") tests=$(realpath "$2") recipes=$(realpath "$3") plugins=$(realpath "$4")
scratch=$(mktemp -d)
chmod 755 "$scratch"
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
source "$tests/cli/expect.sh"
export PARAPLAN_PLUGIN_CACHE=$scratch/plugin-scan.json PARAPLAN_PLUGIN_SCAN_TIMEOUT=2
unset PARAPLAN_PLUGIN_PATH
zoo=$plugins/zoo
seed1=$recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml
small=$scratch/small.toml
printf '[model]\npreset = "llama2-7b"\n[training]\nglobal_batch = 64\n[cluster]\nhardware = "h100-sxm"\nnum_gpus = 8\n[[strategy]]\nname = "fsdp"\nstage = 3\n' >"$small"

# ---------------------------------------------------------------------------------------------
# The zoo: files that break while loading are listed as failed, with why, and nothing else stops.
expect "zoo: plugins list" 0 "skipping plugin .*zoo_crash" -- plugins list --plugin-path "$zoo"
expect_output "zoo: crash" "zoo_crash.so: loading it in a child process: the child was killed by signal 11"
expect_output "zoo: abort" "zoo_abort.so: loading it in a child process: the child was killed by signal 6"
expect_output "zoo: hang" "zoo_hang.so: loading it in a child process: the child did not finish within 2 s"
expect_output "zoo: stdout while loading" "zoo_prints.so: wrote 22 bytes to stdout while loading"
expect_output "zoo: huge strings" "zoo_huge_strings.so: plugin description is longer than 4096 bytes"
expect_output "zoo: unterminated name" "zoo_unterminated.so: the plugin's name is longer than 63 bytes \(or not NUL-terminated\)"
expect_output "zoo: metadata too small" "zoo_small_metadata.so: metadata struct is 40 bytes, but ABI 1\.[0-9]+'s is 96"
expect_output "zoo: table too small" "zoo_small_table.so: strategy function table is 16 bytes"
expect_output "zoo: an exporter before exporters" "zoo_old_exporter.so: exporter plugins exist from ABI 1.3 on; this one claims ABI 1.2"
expect_output "zoo: the sound ones are listed" "zoo_chatty +strategy"
expect "zoo: plugins list again (cached, quiet)" 0 '' -- plugins list --plugin-path "$zoo"
expect "zoo: plugins list --json" 0 '' -- plugins list --json --plugin-path "$zoo"
expect_json "zoo: plugins list --json"

plain_step=$("$paraplan" evaluate "$seed1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["time"]["step_s"])')
expect "zoo: evaluate still works" 0 '' -- evaluate "$seed1" --json --plugin-path "$zoo"
zoo_step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time"]["step_s"])' "$scratch/out")
[[ $plain_step == "$zoo_step" ]] && pass || fail "zoo: evaluate gives $zoo_step, not $plain_step"
expect "zoo: search still works" 0 '' -- search "$small" --top 2 --brief --threads 1 --plugin-path "$zoo"
expect_output "zoo: search ranks plans" "^ +1 "

# Misbehaviour in calls, in plugins that load: each named one fails with its own clear reason.
expect "zoo: out-of-range plan edits" 3 "strategy\[1\] 'zoo_bad_edits': the host refused a plan edit: insert_op: op 'zoo_gemm' has dtype 100000000, not 0-6" -- \
  evaluate "$small" --set strategy.zoo_bad_edits.degree=1 --plugin-path "$zoo"
expect "zoo: an exception through the C ABI" 3 "'zoo_throws': the plugin let a C\+\+ exception escape through the C ABI" -- \
  evaluate "$small" --set strategy.zoo_throws.degree=1 --plugin-path "$zoo"
expect "zoo: stdout in a call stays out of --json" 0 "zoo_chatty: printf" -- \
  evaluate "$small" --json --set strategy.zoo_chatty.degree=1 --plugin-path "$zoo"
expect_json "zoo: stdout in a call"
grep -q "zoo_chatty: write(1)" "$scratch/err" && grep -q "zoo_chatty: std::cout" "$scratch/err" && pass ||
  fail "zoo: the chatty plugin's stdout did not reach stderr"
expect "zoo: the host's logger" 0 "paraplan: info: zoo_chatty: zoo_chatty: through the host's logger" -- \
  evaluate "$small" -v --set strategy.zoo_chatty.degree=1 --plugin-path "$zoo"
expect "zoo: hostile result keys" 0 "executor 'zoo_executor' reported an empty key; it was left out" -- \
  evaluate "$small" --json --executor zoo_executor --plugin-path "$zoo"
expect_json "zoo: hostile result keys"
python3 - "$scratch/out" <<'PY' && pass || fail "zoo: hostile result keys: the report is not what the host allows"
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
assert report["plan"]["model"] == "llama2-7b", report["plan"]            # the host's section kept
assert report["time"]["step_s"] == 1.5                                    # the good key kept
assert "inside" not in json.dumps(report["time"])                         # no key inside a value
assert report["zoo"]["text"] == "bad \ufffd\ufffd bytes", report["zoo"]   # valid UTF-8
assert report["zoo"]["nan"] is None and "bad key" not in report["zoo"]
assert len(report["warnings"]) == 6, report["warnings"]
PY
grep -q "reported the key 'plan' in the host's own section" "$scratch/err" && pass || fail "zoo: 'plan' not refused"
expect "zoo: an impossible profile" 3 "cluster.hardware 'zoo_bad_hardware': the hardware profile is impossible: memory_bytes is 1e\+300, not in \[1e\+06, 1e\+18\]" -- \
  evaluate "$small" --set cluster.hardware=zoo_bad_hardware --plugin-path "$zoo"
expect "zoo: a NaN GEMM time" 3 "hardware 'zoo_nan_gemm' gemm_time gave nan s, not a finite time >= 0" -- \
  evaluate "$small" --set cluster.hardware=zoo_nan_gemm --plugin-path "$zoo"

# plugins check: the whole surface in a child, stage by stage.
expect "check: a good plugin" 0 '' -- plugins check "$plugins/good/test_good.so"
expect_output "check: its stages" "apply +ok"
expect "check: a crash names the stage" 3 "failed its check \(stage 'load'\)" -- plugins check "$zoo/zoo_crash.so"
expect_output "check: the signal" "load +failed +the child process was killed by signal 11"
expect "check: a hang" 3 "failed its check" -- plugins check "$zoo/zoo_hang.so"
expect_output "check: the timeout" "did not finish within 2 s"
expect "check: stdout in a call" 3 "failed its check \(stage 'stdout'\)" -- plugins check "$zoo/zoo_chatty.so"
expect "check: bad plan edits" 3 "failed its check \(stage 'apply'\)" -- plugins check "$zoo/zoo_bad_edits.so"
expect "check: hostile keys" 3 "failed its check \(stage 'run'\)" -- plugins check "$zoo/zoo_executor.so"
expect "check: --json" 3 "failed its check" -- plugins check "$zoo/zoo_throws.so" --json
expect_json "check: --json"

# A name found twice: the environment cannot replace a bundled plugin, --plugin-path can.
PARAPLAN_PLUGIN_PATH=$plugins/named_tp expect "names: environment shadowed" 0 "zoo_named_tp.so: plugin 'tp' is shadowed by .*paraplan_strategy_tp.so \(bundled\); PARAPLAN_PLUGIN_PATH cannot replace a bundled plugin" -- plugins list
expect_output "names: the bundled tp kept" "^tp +strategy +1\.0\.0"
expect "names: --plugin-path replaces" 0 "plugin 'tp' from .*zoo_named_tp.so \(--plugin-path\) replaces the bundled one" -- \
  plugins list --plugin-path "$plugins/named_tp"
expect_output "names: the third-party tp used" "^tp +strategy +9\.9\.9"

# ---------------------------------------------------------------------------------------------
# Path rules.
expect "path: relative --plugin-path" 2 "--plugin-path 'build/lib': plugin directories must be absolute paths" -- \
  plugins list --plugin-path build/lib
PARAPLAN_PLUGIN_PATH="relative/dir::$plugins/good" expect "path: relative and empty environment entries" 0 \
  "PARAPLAN_PLUGIN_PATH: skipping the relative entry 'relative/dir'" -- plugins list
grep -q "skipping the empty entry" "$scratch/err" && pass || fail "path: the empty entry was not reported"
expect_output "path: the absolute entry still used" "^test_good "
mkdir -p "$scratch/open" "$scratch/links" "$scratch/mine"
cp "$plugins/good/test_good.so" "$scratch/open/"
chmod 777 "$scratch/open"
expect "path: a directory anyone may write" 0 "plugin directory refused: $scratch/open is writable by everyone \(mode 0777\)" -- \
  plugins list --plugin-path "$scratch/open"
expect "path: --allow-insecure-plugins" 0 "scanning an insecure plugin directory \(--allow-insecure-plugins\)" -- \
  plugins list --plugin-path "$scratch/open" --allow-insecure-plugins
expect_output "path: loaded when allowed" "^test_good "
cp "$plugins/good/test_good.so" "$scratch/mine/open_file.so"
chmod 666 "$scratch/mine/open_file.so"
cp "$plugins/good/test_good_executor.so" "$scratch/mine/.hidden.so"
expect "path: a file anyone may write" 0 "open_file.so: refused: .*open_file.so is writable by everyone \(mode 0666\)" -- \
  plugins list --plugin-path "$scratch/mine"
grep -q "hidden" "$scratch/out" "$scratch/err" && fail "path: a hidden file was looked at" || pass
ln -s "$scratch/open/test_good.so" "$scratch/links/escape.so"
ln -s "$plugins/good/test_good_hardware.so" "$scratch/links/fine.so"
expect "path: a link into a directory anyone may write" 0 "escape.so: refused: $scratch/links/escape.so leads into $scratch/open is writable by everyone" -- \
  plugins list --plugin-path "$scratch/links"
expect_output "path: a link says where it leads" "fine.so -> $plugins/good/test_good_hardware.so"
if [[ $(id -u) -eq 0 ]]; then
  mkdir -p "$scratch/foreign" && cp "$plugins/good/test_good.so" "$scratch/foreign/" && chown 65534 "$scratch/foreign/test_good.so"
  expect "path: a file of another user" 0 "belongs to uid 65534, neither you \(uid 0\) nor root" -- plugins list --plugin-path "$scratch/foreign"
fi
# The same rules for what is found implicitly: a preset planted where anyone may write is skipped.
mkdir -p "$scratch/planted/models"
printf 'layers = 1\nhidden = 8\nheads = 1\nvocab = 8\nseq_len = 8\n' >"$scratch/planted/models/llama2-7b.toml"
chmod 777 "$scratch/planted/models"
cp "$small" "$scratch/planted/recipe.toml"
expect "path: a planted model preset" 0 "skipping model preset $scratch/planted/models/llama2-7b.toml: .*writable by everyone" -- \
  evaluate "$scratch/planted/recipe.toml" --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["memory"]["parameters_bytes"] > 1e9' "$scratch/out" && pass ||
  fail "path: the planted preset was used"
mkdir -p "$scratch/export" "$scratch/elsewhere"
ln -s "$scratch/elsewhere/stolen.sh" "$scratch/export/launch_megatron.sh"
expect "path: export never writes through a link" 3 "launch_megatron.sh: cannot write the exported file \(it is a symbolic link\)" -- \
  export "$seed1" --to megatron --out "$scratch/export"
[[ -e $scratch/elsewhere/stolen.sh ]] && fail "path: the export wrote through the link" || pass

# ---------------------------------------------------------------------------------------------
# Inputs that crashed or fooled the host.
expect "input: degrees of 2^32" 3 "strategy\[.\].degree: 4294967296 is more than 16777216" -- \
  evaluate "$seed1" --set strategy.tp.degree=4294967296 --set strategy.pp.degree=4294967296
expect "input: a degree above the GPU count" 1 "strategy\[.\] 'fsdp': degree 16 exceeds cluster.num_gpus = 8" -- \
  evaluate "$small" --set strategy.pp.degree=3 --set strategy.fsdp.degree=16
expect "input: a degree near 2^62" 3 "strategy\[.\].degree: 6148914691236517208 is more than 16777216" -- \
  evaluate "$small" --set strategy.pp.degree=3 --set strategy.fsdp.degree=6148914691236517208
expect "input: a hidden size whose default ffn overflows" 3 "model.hidden: 4611686018427387904 is more than 1048576" -- \
  evaluate "$small" --set model.hidden=4611686018427387904
expect "input: experts past the bound" 3 "model.moe_experts: 9223372036854775807 is more than 65536" -- \
  evaluate "$small" --set model.moe_experts=9223372036854775807
python3 -c 'print("a" + ".a" * 50000 + " = 1")' >"$scratch/deep.toml"
expect "input: a 50,000-level dotted key" 3 "deep.toml:1:12[0-9]: nesting deeper than 64 levels" -- evaluate "$scratch/deep.toml"
python3 -c 'print("x = " + "[" * 100000)' >"$scratch/deep_array.toml"
expect "input: 100,000 nested arrays" 3 "deep_array.toml:1:.*: nesting deeper than 64 levels" -- evaluate "$scratch/deep_array.toml"
{ python3 -c 'print("name = \"deep\"\n" + "a" + ".a" * 50000 + " = 1")'; } >"$scratch/deep_profile.toml"
expect "input: a deep hardware profile" 3 "deep_profile.toml:2:.*: nesting deeper than 64 levels" -- \
  evaluate "$small" --set "cluster.hardware=$scratch/deep_profile.toml"
mkdir -p "$scratch/models"
python3 -c 'print("a" + ".a" * 50000 + " = 1")' >"$scratch/models/deep.toml"
printf '[model]\npreset = "deep"\n[training]\nglobal_batch = 8\n[cluster]\nhardware = "h100-sxm"\nnum_gpus = 8\n' >"$scratch/preset_user.toml"
expect "input: a deep model preset" 3 "models/deep.toml:1:.*: nesting deeper than 64 levels" -- evaluate "$scratch/preset_user.toml"
expect "input: /dev/zero" 3 "/dev/zero: not a regular file; a recipe must be one" -- evaluate /dev/zero
expect "input: a directory" 3 "$scratch: not a regular file" -- evaluate "$scratch"
head -c 5000000 /dev/zero | tr '\0' '#' >"$scratch/huge.toml"
expect "input: a 5 MB recipe" 3 "huge.toml: 5000000 bytes, more than the 4194304 a recipe may have" -- evaluate "$scratch/huge.toml"
{ cat "$small"; python3 -c 'print("".join("[[strategy]]\nname = \"s%d\"\n" % i for i in range(80000)))'; } >"$scratch/many.toml"
start=$(date +%s%N)
expect "input: 80,000 strategy tables" 3 "many.toml:.*: strategy\[64\]: at most 64 \[\[strategy\]\] tables" -- evaluate "$scratch/many.toml"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[[ $elapsed_ms -lt 5000 ]] && pass || fail "input: 80,000 strategy tables took $elapsed_ms ms"
expect "input: search on 2^62 GPUs" 3 "cluster.num_gpus: 4611686018427387904 is more than 16777216" -- \
  search "$small" --set cluster.num_gpus=4611686018427387904
sed 's/^capacity_gb = .*/capacity_gb = 1e300/' "$tests/data/simulate/free-network.toml" >"$scratch/big_memory.toml"
expect "input: 1e300 GB of memory" 3 "big_memory.toml:[0-9]+:[0-9]+: memory.capacity_gb: must be in \[0.001, 1e9\] GB" -- \
  evaluate "$small" --set "cluster.hardware=$scratch/big_memory.toml"
sed 's/^bandwidth_gb_s = 1e12/bandwidth_gb_s = 5e-310/' "$tests/data/simulate/free-network.toml" >"$scratch/denormal.toml"
expect "input: a denormal bandwidth" 3 "denormal.toml:[0-9]+:[0-9]+: tiers\[0\].bandwidth_gb_s: must be in \[1e-6, 1e12\] GB/s" -- \
  evaluate "$small" --set "cluster.hardware=$scratch/denormal.toml"
expect "input: --top -1" 2 "--top -1: expected an integer in \[1, 1000000\]" -- search "$small" --top -1
expect "input: --threads -1" 2 "--threads -1: expected an integer in \[0, 1024\]" -- search "$small" --threads -1
expect "input: --timeout nan" 2 "--timeout nan: expected a number in \[0, 604800\]" -- \
  execute "$recipes/execute/dp2-2ranks.toml" --timeout nan
expect "input: --set with a deep value" 3 "nesting deeper than 64 levels" -- \
  evaluate "$small" --set "training.x=$(python3 -c 'print("[" * 200)')"
expect "input: --set with a deep key" 2 "a key of 20 segments; recipe keys have at most 8" -- \
  evaluate "$small" --set "$(python3 -c 'print(".".join(["a"] * 20))')=1"
cp "$small" "$scratch/bad"$'\xff'"name.toml"
expect "input: a file name that is not UTF-8" 0 '' -- evaluate "$scratch/bad"$'\xff'"name.toml" --json
expect_json "input: a file name that is not UTF-8"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
