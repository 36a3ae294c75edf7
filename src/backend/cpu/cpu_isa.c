/* cpu_isa.c: the kernels' instruction-set level (cpu_isa.h). */
#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/cpu_isa.h"

int gs_cpu_isa_level_ = -1;
static int supported = GS_ISA_BASELINE;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char *const names[GS_ISA_COUNT] = {"DEFAULT", "AVX2", "AVX512"};
static const char *const env_names[GS_ISA_COUNT] = {"baseline", "avx2", "avx512"};

const char *gs_cpu_isa_name(int level) {
  return level >= 0 && level < GS_ISA_COUNT ? names[level] : "?";
}

int gs_cpu_isa_parse(const char *name) {
  char low[16];
  size_t n = strlen(name);
  if (n >= sizeof low) return -1;
  for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)name[i]);
  if (strcmp(low, "default") == 0) return GS_ISA_BASELINE;
  for (int l = 0; l < GS_ISA_COUNT; l++)
    if (strcmp(low, env_names[l]) == 0) return l;
  return -1;
}

static void init(void) {
#if defined(__x86_64__)
  /* libgcc's cpuid reading also checks that the OS saves the AVX and
   * AVX-512 registers (XGETBV), so a level it reports can run */
  __builtin_cpu_init();
#if defined(__clang__) || __GNUC__ < 12
  /* no level names before GCC 12, nor in clang (which builds the
   * fuzzers): the levels' defining features that every compiler names */
  bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
            __builtin_cpu_supports("bmi2");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
#else
  bool v3 = __builtin_cpu_supports("x86-64-v3"), v4 = __builtin_cpu_supports("x86-64-v4");
#endif
  supported = v4 ? GS_ISA_AVX512 : v3 ? GS_ISA_AVX2 : GS_ISA_BASELINE;
#endif
  int level = supported;
  const char *env = getenv("GSHELL_CPU_ISA");
  if (env && *env) {
    int want = gs_cpu_isa_parse(env);
    if (want < 0)
      fprintf(stderr, "gshell: GSHELL_CPU_ISA=%s is not an instruction set gshell knows "
                      "(expected baseline, avx2 or avx512); using %s\n", env, env_names[supported]);
    else if (want > supported)
      fprintf(stderr, "gshell: GSHELL_CPU_ISA=%s: this CPU has no %s (the best it runs is %s); using %s\n",
              env, names[want], env_names[supported], env_names[supported]);
    else
      level = want;
  }
  __atomic_store_n(&gs_cpu_isa_level_, level, __ATOMIC_RELAXED);
}

int gs_cpu_isa(void) {
  pthread_once(&once, init);
  return __atomic_load_n(&gs_cpu_isa_level_, __ATOMIC_RELAXED);
}

int gs_cpu_isa_supported(void) {
  pthread_once(&once, init);
  return supported;
}

int gs_cpu_isa_set(int level) {
  if (level < 0 || level > gs_cpu_isa_supported()) return -1;
  __atomic_store_n(&gs_cpu_isa_level_, level, __ATOMIC_RELAXED);
  return 0;
}
