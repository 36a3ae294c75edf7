#!/bin/sh
# fuzz/api.sh BUILD SECONDS [SEED [CASE]]: runs the API fuzzer
# (fuzz/api.lua) against BUILD/torch.so (the ASan/UBSan build from
# `make fuzz-api`) for SECONDS, under a watchdog. Fails on a fuzzer
# failure, a crash, a hang or any sanitizer report, and prints how to
# replay the case that was running. SEED defaults to the current time.
set -u
cd "$(dirname "$0")/.."
build=${1:-build-san}
secs=${2:-60}
seed=${3:-}
case=${4:-}
[ -n "$seed" ] || seed=$(date +%s)
root=$(pwd)
export LUA_CPATH="$root/$build/?.so;;"
export FUZZ_SEED="$seed" FUZZ_SECONDS="$secs" FUZZ_CASE="$case"
export FUZZ_LAST="$root/$build/fuzz-api.case"
# Memory limits keep "possible but huge" sizes from swapping the machine:
# allocations past 1 GiB fail (the engine reports out of memory), and the
# simulated GPUs have 256 MiB each.
export GSHELL_SIM_MEM=256M
ASAN_EXTRA="allocator_may_return_null=1:max_allocation_size_mb=1024"
# the same cap under ThreadSanitizer (a TSAN run once reached 24 GB)
TSAN_EXTRA="max_allocation_size_mb=1024"
. tools/sanitizer_env.sh
log=$(mktemp)
rm -f "$FUZZ_LAST"
# the watchdog: the run's own time plus room for one slow case
# run from a scratch directory: a stray write by a call under test cannot
# land in the source tree
scratch=$(mktemp -d)
(cd "$scratch" && LD_PRELOAD="$pre" timeout -k 10 $((secs + 120)) lua5.4 "$root/fuzz/api.lua" > "$log" 2>&1)
status=$?
rm -rf "$scratch"
cat "$log"
bad=0
if grep -q 'ERROR: \(Address\|Leak\)Sanitizer\|runtime error:\|SUMMARY: \(Address\|Undefined\)' "$log"; then
  echo "fuzz-api: sanitizer report above"; bad=1
fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then echo "fuzz-api: hang (killed by the watchdog)"; bad=1
elif [ "$status" -ne 0 ]; then bad=1
fi
if ! grep -q '^fuzz-api: seed' "$log"; then echo "fuzz-api: the run did not finish (crash?)"; bad=1; fi
rm -f "$log"
if [ "$bad" -ne 0 ]; then
  last=$(cat "$FUZZ_LAST" 2>/dev/null)
  if [ -n "$last" ]; then
    echo "fuzz-api: FAILED; replay the case that was running with: make fuzz-api SEED=$seed CASE=$last"
    echo "  (add FUZZ_TRACE=1 to print each call)"
  else
    echo "fuzz-api: FAILED (seed $seed)"
  fi
  exit 1
fi
echo "fuzz-api: passed (seed $seed)"
