# Shared by the end-to-end test scripts (sourced): the binary, a temporary folder removed at exit,
# the pass/fail counters, and the check that bad input is one line and exit code 2.
DPLACE=${DPLACE:-build/release/dplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# expect_bad_input NAME EXPECTED_SUBSTRING ARGS...: exit code 2, one stderr line containing it.
expect_bad_input() {
  local name=$1 expected=$2
  shift 2
  "$DPLACE" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$TMP/err")
  if [[ $rc -ne 2 ]]; then
    fail "$name: exit code $rc, want 2 ($(cat "$TMP/err"))"
  elif [[ $lines -ne 1 ]]; then
    fail "$name: $lines lines on stderr, want 1: $(cat "$TMP/err")"
  elif ! grep -qF -- "$expected" "$TMP/err"; then
    fail "$name: stderr lacks '$expected': $(cat "$TMP/err")"
  else
    ok
  fi
}

# run_sections [NAME...]: runs the script's section_NAME functions named (all of them without).
run_sections() {
  local sections section
  sections=$(declare -F | sed -n 's/^declare -f section_//p')
  for section in ${@:-$sections}; do
    if [[ " $(echo $sections) " != *" $section "* ]]; then
      fail "no section '$section' (sections: $(echo $sections))"
      continue
    fi
    "section_$section"
  done
}
