#!/bin/sh
# fuzz/run.sh [SECONDS [JOBS]]: builds the safetensors loader fuzzer with
# clang (libFuzzer + AddressSanitizer + UBSan) into build-fuzz/ and runs it
# for SECONDS (default 60) on JOBS processes (default 1), starting from the
# seed files in fuzz/corpus/ (never modified: new inputs go to
# build-fuzz/corpus/). Crashes are written to build-fuzz/crash-*; replay
# one with build-fuzz/safetensors_fuzz FILE. Needs clang and the libFuzzer
# runtime (Debian: clang, libclang-rt-14-dev or libclang-rt-dev).
set -e
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${2:-1}
out=build-fuzz
CC=${FUZZ_CC:-clang}
mkdir -p "$out/obj" "$out/corpus"
LUA_INC=$(pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
flags="-g -O1 -std=gnu11 -fopenmp -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -Isrc $LUA_INC"
# The engine without its Lua bindings and the shell; instrumented for coverage.
objs=""
for f in src/*.c; do
  case $(basename "$f") in lua_*|main.c|repl*) continue ;; esac
  o="$out/obj/$(basename "$f" .c).o"
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ -n "$(find src -name '*.h' -newer "$o")" ]; then
    $CC $flags -fsanitize=fuzzer-no-link -c "$f" -o "$o"
  fi
  objs="$objs $o"
done
$CC $flags -fsanitize=fuzzer fuzz/safetensors_fuzz.c $objs -o "$out/safetensors_fuzz" -lopenblas -lm
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
par=""
[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs" # logs go to fuzz-N.log
"$out/safetensors_fuzz" -max_total_time="$secs" $par -max_len=8192 \
  -dict=fuzz/safetensors.dict -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" fuzz/corpus
