#!/bin/sh
# Runs every busted spec against the build in $1 and ends with the line
# "N passed, N failed". Exit status 1 when anything failed.
build=${1:-build}
export GSHELL_BUILD="$build"
# the specs' torch.so (test-only bindings added: the Makefile's SPEC_TORCH)
export LUA_CPATH="$build/spec/?.so;$build/?.so;;"
export LUA_PATH="spec/support/?.lua;;"
# ThreadSanitizer reports land here (tools/sanitizer_env.sh), from busted
# and from every gshell the specs start.
GS_TSAN_LOGS=$(mktemp -d)
export GS_TSAN_LOGS
. tools/sanitizer_env.sh
log=$(mktemp)
start=$(date +%s)
LD_PRELOAD="$pre" lua5.4 /usr/bin/busted -o spec/support/tap_timed.lua spec 2>&1 | tee "$log"
status=$?
passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^not ok ' "$log")
tsan_reports=$(ls "$GS_TSAN_LOGS")
[ -n "$tsan_reports" ] && cat "$GS_TSAN_LOGS"/*
# A crash or sanitizer report that kills busted mid-run counts as a failure.
if ! grep -q '^1\.\.[0-9]' "$log" || grep -q 'ERROR: \(Address\|Leak\)Sanitizer\|runtime error:\|WARNING: ThreadSanitizer' "$log" \
   || [ -n "$tsan_reports" ]; then
  failed=$((failed + 1))
  echo "the spec run did not finish cleanly (crash or sanitizer report above)"
fi
rm -rf "$log" "$GS_TSAN_LOGS"
[ -n "$sanitizer" ] && echo "spec run under $sanitizer: $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
