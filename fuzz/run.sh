#!/bin/sh
# fuzz/run.sh [SECONDS [JOBS]] (or `make fuzz`): builds the safetensors
# loader fuzzer with clang (libFuzzer + AddressSanitizer + UBSan) into
# build-fuzz/ through `make fuzz-build`, and runs it for SECONDS (default
# 60) on JOBS processes (default 1), starting from the seed files in
# fuzz/corpus/ (never modified: new inputs go to build-fuzz/corpus/).
# Crashes are written to build-fuzz/crash-*; replay one with
# build-fuzz/safetensors_fuzz FILE. Needs clang and the libFuzzer runtime
# (Debian: clang, libclang-rt-dev; `make fuzz` installs them).
set -e
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${2:-1}
out=build-fuzz
CC=${FUZZ_CC:-clang}
mkdir -p "$out/corpus"
# The engine without its Lua bindings and the shell, instrumented for
# coverage: built by the Makefile (header dependencies tracked there).
${MAKE:-make} --no-print-directory fuzz-build FUZZ_CC="$CC"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
par=""
[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs" # logs go to fuzz-N.log
"$out/safetensors_fuzz" -max_total_time="$secs" $par -max_len=8192 \
  -dict=fuzz/safetensors.dict -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" fuzz/corpus
