/* cpu_isa.h: which instruction set the hand-written CPU kernels run with,
 * chosen once at start-up from what the CPU has (cpuid) and
 * GSHELL_CPU_ISA, and changeable at run time (torch.backends.cpu).
 *
 * Why not GCC's target_clones: its ifunc resolver picks a copy when the
 * library loads, from the CPU alone, so nothing can force another copy
 * (the specs run each one and compare the results bit for bit), and
 * ThreadSanitizer's runtime is not ready when resolvers run (the TSAN
 * build used to go without the copies). Here each kernel is compiled once
 * per level with GCC's target attribute and a switch on the level picks
 * one per call: one relaxed load, no indirect call.
 *
 * The copies compute the same results bit for bit: -ffp-contract=off
 * keeps the compiler from fusing multiply-adds, and GCC never reorders
 * float additions without -ffast-math, so a wider vector runs the same
 * operations in the same order (the reductions' pairwise trees are
 * written with explicit vector types). */
#ifndef CPU_ISA_H
#define CPU_ISA_H

enum { GS_ISA_BASELINE = 0, GS_ISA_AVX2 = 1, GS_ISA_AVX512 = 2, GS_ISA_COUNT };

/* The level the kernels use now; the first call reads GSHELL_CPU_ISA
 * (once, thread-safe) and warns on stderr about a value it cannot use. */
int gs_cpu_isa(void);
/* The best level this CPU (and its OS: AVX-512 state must be enabled)
 * supports; GS_ISA_BASELINE off x86-64. */
int gs_cpu_isa_supported(void);
/* Switches the kernels to `level`. 0 on success; -1 when the CPU lacks it
 * (nothing changes: running it would be an illegal instruction). */
int gs_cpu_isa_set(int level);
/* "DEFAULT", "AVX2", "AVX512": PyTorch's torch.backends.cpu names. */
const char *gs_cpu_isa_name(int level);
/* The level for a name: "baseline"/"default", "avx2", "avx512" (any case,
 * and PyTorch's capitals); -1 for anything else. */
int gs_cpu_isa_parse(const char *name);

extern int gs_cpu_isa_level_; /* -1 until the first gs_cpu_isa() */
static inline int gs_cpu_isa_now(void) {
  int l = __atomic_load_n(&gs_cpu_isa_level_, __ATOMIC_RELAXED);
  return l >= 0 ? l : gs_cpu_isa();
}

/* A kernel with a copy per level: write its body as
 *   GS_ISA_INLINE static void NAME##_impl(PARAMS) { ... }
 * then GS_ISA_VOID(NAME, (PARAMS), (ARGS)) defines `static void NAME(PARAMS)`
 * (GS_ISA_FN(RET, ...) for a function returning RET). The body is inlined
 * into each copy and compiled for that copy's instruction set. */
#define GS_ISA_INLINE inline __attribute__((always_inline))
#if defined(__x86_64__)
/* AVX-512 copies use 512-bit vectors (GCC's default for x86-64-v4 is 256,
 * to spare older Xeons' clock drop); PyTorch's AVX512 kernels do the same.
 * (clang, which builds the fuzzers, takes no vector width in the attribute.) */
#if defined(__clang__)
#define GS_ISA_V4 __attribute__((target("arch=x86-64-v4")))
#else
#define GS_ISA_V4 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#endif
#define GS_ISA_V3 __attribute__((target("arch=x86-64-v3")))
#define GS_ISA_FN(RET, NAME, PARAMS, ARGS)                                     \
  GS_ISA_V4 static RET NAME##_v4 PARAMS { return NAME##_impl ARGS; }           \
  GS_ISA_V3 static RET NAME##_v3 PARAMS { return NAME##_impl ARGS; }           \
  static RET NAME##_v0 PARAMS { return NAME##_impl ARGS; }                     \
  static RET NAME PARAMS {                                                     \
    switch (gs_cpu_isa_now()) {                                                \
    case GS_ISA_AVX512: return NAME##_v4 ARGS;                                 \
    case GS_ISA_AVX2: return NAME##_v3 ARGS;                                   \
    default: return NAME##_v0 ARGS;                                            \
    }                                                                          \
  }
#define GS_ISA_VOID(NAME, PARAMS, ARGS)                                        \
  GS_ISA_V4 static void NAME##_v4 PARAMS { NAME##_impl ARGS; }                 \
  GS_ISA_V3 static void NAME##_v3 PARAMS { NAME##_impl ARGS; }                 \
  static void NAME##_v0 PARAMS { NAME##_impl ARGS; }                           \
  static void NAME PARAMS {                                                    \
    switch (gs_cpu_isa_now()) {                                                \
    case GS_ISA_AVX512: NAME##_v4 ARGS; break;                                 \
    case GS_ISA_AVX2: NAME##_v3 ARGS; break;                                   \
    default: NAME##_v0 ARGS; break;                                            \
    }                                                                          \
  }
#else
#define GS_ISA_FN(RET, NAME, PARAMS, ARGS) \
  static RET NAME PARAMS { return NAME##_impl ARGS; }
#define GS_ISA_VOID(NAME, PARAMS, ARGS) \
  static void NAME PARAMS { NAME##_impl ARGS; }
#endif

#endif
