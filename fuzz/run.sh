#!/bin/sh
# fuzz/run.sh [SECONDS [JOBS [TARGET]]] (or `make fuzz`, `make fuzz
# FUZZ_TARGET=idx`): builds the loader fuzzers with clang (libFuzzer +
# AddressSanitizer + UBSan) into build-fuzz/ through `make fuzz-build`, and
# runs TARGET for SECONDS (default 60) on JOBS processes (default 1).
# TARGET: safetensors (default; the torch.load reader, seeds in
# fuzz/corpus/, dictionary fuzz/safetensors.dict) or idx (the data sets'
# IDX reader, seeds in fuzz/corpus_idx/). Seed folders are never modified:
# new inputs go to build-fuzz/corpus/ (build-fuzz/corpus_idx/).
# Crashes are written to build-fuzz/crash-*; replay one with
# build-fuzz/TARGET_fuzz FILE. Needs clang and the libFuzzer runtime
# (Debian: clang, libclang-rt-dev; `make fuzz` installs them).
set -e
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${2:-1}
target=${3:-safetensors}
out=build-fuzz
CC=${FUZZ_CC:-clang}
case "$target" in
  safetensors) seeds=fuzz/corpus; work="$out/corpus"; extra="-max_len=8192 -dict=fuzz/safetensors.dict" ;;
  idx) seeds=fuzz/corpus_idx; work="$out/corpus_idx"; extra="-max_len=4096" ;;
  *) echo "fuzz/run.sh: unknown target '$target' (safetensors or idx)" >&2; exit 2 ;;
esac
mkdir -p "$work"
# The engine without its Lua bindings and the shell, instrumented for
# coverage: built by the Makefile (header dependencies tracked there).
${MAKE:-make} --no-print-directory fuzz-build FUZZ_CC="$CC"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
par=""
[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs" # logs go to fuzz-N.log
# shellcheck disable=SC2086
"$out/${target}_fuzz" -max_total_time="$secs" $par $extra \
  -artifact_prefix="$out/" -print_final_stats=1 "$work" "$seeds"
