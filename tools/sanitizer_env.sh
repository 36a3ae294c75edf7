# Sourced with $build set (tools/run_specs.sh, fuzz/api.sh): when
# $build/torch.so is the ASan/UBSan build, sets $pre to the sanitizer
# runtimes (lua5.4 itself is not instrumented: they are LD_PRELOADed) and
# exports the sanitizer options, adding $ASAN_EXTRA to ASAN_OPTIONS.
# Otherwise pre is empty.
pre=""
if ldd "$build/torch.so" 2>/dev/null | grep -q libasan; then
  pre="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0${ASAN_EXTRA:+:$ASAN_EXTRA}"
  export LSAN_OPTIONS="suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
