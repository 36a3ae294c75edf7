# Sourced with $build set (tools/run_specs.sh, fuzz/api.sh): when
# $build/torch.so is a sanitizer build, exports the sanitizer options and
# sets $sanitizer to its name and $pre to what lua5.4 must LD_PRELOAD.
# Otherwise both are empty.
#   ASan/UBSan (build-san): lua5.4 is not instrumented, so the runtimes are
#   preloaded; $ASAN_EXTRA is added to ASAN_OPTIONS.
#   TSAN (build-tsan): nothing is preloaded (shells and python3 crash with
#   the TSAN runtime preloaded); $build/bin, with a lua5.4 linked with TSAN
#   (tools/tsan_lua.c), goes first on PATH. Every report stops the process
#   that found it with exit status 66 and is also written to
#   $GS_TSAN_LOGS/report.PID when the caller made that directory, so a
#   report from a child whose output a spec swallows still fails the run.
#   tools/tsan.supp lists reports inside uninstrumented libraries.
pre=""
sanitizer=""
if ldd "$build/torch.so" 2>/dev/null | grep -q libasan; then
  sanitizer="ASan+UBSan"
  pre="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0${ASAN_EXTRA:+:$ASAN_EXTRA}"
  export LSAN_OPTIONS="suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
elif ldd "$build/torch.so" 2>/dev/null | grep -q libtsan; then
  sanitizer="TSAN"
  PATH="$(cd "$build/bin" && pwd):$PATH"
  # for specs that race on purpose (a write into a tensor a collective is
  # sending, to check that it is reported) and skip that under TSAN
  GSHELL_UNDER_TSAN=1
  export PATH GSHELL_UNDER_TSAN
  # allocator_may_return_null: specs ask for impossible sizes (2^52 bytes)
  # and expect the engine's out-of-memory error, not TSAN's abort
  # $TSAN_EXTRA is added as $ASAN_EXTRA is (fuzz/api.sh caps allocations)
  export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:allocator_may_return_null=1${GS_TSAN_LOGS:+:log_path=$GS_TSAN_LOGS/report}:suppressions=$(pwd)/tools/tsan.supp:print_suppressions=0${TSAN_EXTRA:+:$TSAN_EXTRA}"
fi
