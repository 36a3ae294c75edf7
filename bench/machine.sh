# bench/machine.sh: which machine a benchmark ran on, for every results
# file (issue 32: a ratio measured on an AVX2 EPYC says nothing about an
# AVX-512 Xeon). Sourced by the bench scripts (POSIX sh):
#   bench_cpu_model   the CPU's model name, e.g. "AMD EPYC"
#   bench_isa         its x86-64 level and AVX-512 flags, e.g.
#                     "x86-64-v3, no AVX-512" or "x86-64-v4, avx512f avx512bw ..."
#   bench_cores       the cores this process may use (nproc), and the
#                     machine's count when they differ
#   bench_machine     all of it, with the memory: the results files' line
#   bench_gshell_isa BUILD  the instruction set gshell's kernels use there
#                     (torch.backends.cpu.get_cpu_capability(): AVX2, ...)
# BENCH_CPUINFO=FILE reads FILE instead of /proc/cpuinfo (and counts its
# processors instead of asking nproc): spec/bench_table_spec.lua uses it.

BENCH_CPUINFO=${BENCH_CPUINFO:-/proc/cpuinfo}

bench_cpu_model() {
  m=$(sed -n 's/^model name[[:space:]]*: *//p' "$BENCH_CPUINFO" 2>/dev/null | head -1 | sed 's/[[:space:]]*$//')
  # arm64's cpuinfo has no model name: say so rather than print nothing
  echo "${m:-unknown CPU ($(uname -m))}"
}

# The levels are the x86-64 psABI's (x86-64-v2: SSE4.2, POPCNT; v3: AVX2,
# FMA, BMI2; v4: AVX-512 F, BW, CD, DQ, VL); each needs all of its flags.
bench_isa() {
  sed -n 's/^flags[[:space:]]*: *//p' "$BENCH_CPUINFO" 2>/dev/null | head -1 | awk '
    {
      for (i = 1; i <= NF; i++) has[$i] = 1
      n = split("cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3", v2, " ")
      ok2 = 1; for (i = 1; i <= n; i++) ok2 = ok2 && has[v2[i]]
      n = split("avx avx2 bmi1 bmi2 f16c fma abm movbe xsave", v3, " ")
      ok3 = ok2; for (i = 1; i <= n; i++) ok3 = ok3 && has[v3[i]]
      n = split("avx512f avx512bw avx512cd avx512dq avx512vl", v4, " ")
      ok4 = ok3; for (i = 1; i <= n; i++) ok4 = ok4 && has[v4[i]]
      lvl = ok4 ? "x86-64-v4" : ok3 ? "x86-64-v3" : ok2 ? "x86-64-v2" : "x86-64"
      avx = ""
      for (i = 1; i <= NF; i++) if ($i ~ /^avx512/) avx = avx " " $i
      printf "%s, %s\n", lvl, avx == "" ? "no AVX-512" : substr(avx, 2)
      found = 1
    }
    END { if (!found) print "ISA unknown (no x86 flags line)" }'
}

bench_cores() {
  all=$(grep -c '^processor' "$BENCH_CPUINFO" 2>/dev/null)
  if [ "$BENCH_CPUINFO" = /proc/cpuinfo ]; then use=$(nproc); else use=$all; fi
  if [ -n "$all" ] && [ "$all" != "$use" ]; then echo "$use cores (of $all)"; else echo "$use cores"; fi
}

bench_machine() {
  echo "$(bench_cpu_model) ($(bench_isa)), $(bench_cores), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
}

# the instruction set gshell's CPU kernels ran with (GSHELL_CPU_ISA can
# force a lower one: an AVX-512 machine standing in for an AVX2 one)
bench_gshell_isa() {
  LUA_CPATH="$1/?.so;;" lua5.4 -e 'print(require("torch").backends.cpu.get_cpu_capability())' 2>/dev/null || echo "?"
}
