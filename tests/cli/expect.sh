# tests/cli/expect.sh: the one-line-error checks the CLI tests share (sourced).
#   expect NAME CODE PATTERN -- ARGS...   runs "$paraplan" ARGS; the exit code must be CODE and
#       stderr must match PATTERN (an extended regex; empty: stderr must be empty), with exactly
#       one "paraplan: error" line when CODE is not 0. stdout is left in $scratch/out.
#   fail MESSAGE / pass                   count a check of one's own.
# Needs $paraplan and $scratch; sets $failures and $passed.
failures=0 passed=0

expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$paraplan" "$@" >"$scratch/out" 2>"$scratch/err"
  local actual=$?
  local errors
  errors=$(grep -c '^paraplan: error' "$scratch/err")
  local matched=yes
  if [[ -z $pattern ]]; then [[ -s $scratch/err ]] && matched=no
  else grep -Eq -- "$pattern" "$scratch/err" || matched=no; fi
  if [[ $actual -ne $code || $matched == no ]] || [[ $code -ne 0 && $errors -ne 1 ]]; then
    echo "FAIL $name: exit $actual (want $code), stderr:"; sed 's/^/    /' "$scratch/err"
    failures=$((failures + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
}

fail() { echo "FAIL $1"; failures=$((failures + 1)); }
pass() { passed=$((passed + 1)); }

# expect_output NAME PATTERN: the last command's stdout matches PATTERN.
expect_output() {
  if grep -Eq -- "$2" "$scratch/out"; then pass; else fail "$1: stdout does not match '$2'"; sed 's/^/    /' "$scratch/out" | head -20; fi
}

# expect_json NAME: the last command's stdout is one valid JSON document.
expect_json() {
  if python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$scratch/out" 2>/dev/null; then pass
  else fail "$1: stdout is not valid JSON"; head -c 400 "$scratch/out" | sed 's/^/    /'; fi
}
