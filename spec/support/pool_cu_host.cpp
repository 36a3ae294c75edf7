// spec/support/pool_cu_host.cpp: src/backend/cuda/kernels/pool.cu's device code run on the
// host (GS_HOST_EMULATION), for machines without a GPU. Each backward pass
// of pool.cu gathers per input cell; here it is checked against a plain
// scatter of the same forward windows over thousands of random shapes and
// options (odd sizes, stride > kernel, padding, dilation, ceil_mode, both
// counts of padding, adaptive windows, nearest and bilinear resizing both
// ways, align_corners, scale factors). Run by spec/pool_norm_spec.lua:
//   g++ -std=c++17 -Isrc spec/support/pool_cu_host.cpp && ./a.out
// Exit status 0 and a summary line when every gather matched.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
extern "C" {
#include "core/gs_backend.h"
}
#define GS_HOST_EMULATION
#define __device__
#define __forceinline__ inline
#define __global__ static
#define GS_GRID_LOOP(i, n) for (int64_t i = 0; i < (n); i++)
#include "backend/cuda/kernels/pool.cu"
static int64_t out_size(int64_t in, int k, int pad, int s, int d, bool ceil_mode) {
  int64_t num = in + 2 * (int64_t)pad - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) out--;
  return out;
}
int main() {
  std::mt19937 rng(1);
  auto R = [&](int lo, int hi) { return lo + (int)(rng() % (unsigned)(hi - lo + 1)); };
  int tested = 0, bad = 0;
  for (int it = 0; it < 20000; it++) {
    gs_pool2d_params p = {};
    p.kind = R(0, 3); p.count_include_pad = R(0, 1); p.planes = R(1, 2); p.h = R(1, 12); p.w = R(1, 12);
    if (p.kind <= 1) {
      p.kh = R(1, 5); p.kw = R(1, 5); p.sh = R(1, 4); p.sw = R(1, 4);
      p.dh = p.kind == 0 ? R(1, 3) : 1; p.dw = p.kind == 0 ? R(1, 3) : 1;
      int eh = p.kind == 0 ? ((p.kh - 1) * p.dh + 1) : p.kh, ew = p.kind == 0 ? ((p.kw - 1) * p.dw + 1) : p.kw;
      p.ph = R(0, eh / 2); p.pw = R(0, ew / 2);
      bool ceil = R(0, 1);
      p.oh = out_size(p.h, p.kh, p.ph, p.sh, p.dh, ceil); p.ow = out_size(p.w, p.kw, p.pw, p.sw, p.dw, ceil);
      if (p.oh < 1 || p.ow < 1) continue;
    } else { p.oh = R(1, 13); p.ow = R(1, 13); }
    bool mx = p.kind == 0 || p.kind == 2;
    int64_t nin = p.planes * p.h * p.w, nout = p.planes * p.oh * p.ow;
    std::vector<double> x(nin), y(nout), g(nout), gx(nin), ref(nin, 0.0);
    std::vector<int64_t> am(nout);
    for (auto &v : x) v = R(0, 4);  // many ties
    for (auto &v : g) v = R(-8, 8) / 4.0;
    pool_fwd<double>(p, y.data(), mx ? am.data() : nullptr, x.data(), nout);
    pool_bwd<double>(p, gx.data(), g.data(), mx ? am.data() : nullptr, nin);
    for (int64_t e = 0; e < nout; e++) {
      int64_t j = e % p.ow, i = (e / p.ow) % p.oh, pl = e / (p.ow * p.oh);
      if (mx && (am[e] < -1 || am[e] >= p.h * p.w)) { printf("bad argmax %ld kind %d h %ld w %ld oh %ld ow %ld k %d,%d s %d,%d p %d,%d d %d,%d e %ld\n", am[e], p.kind, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw, e); return 2; }
    if (mx) { if (am[e] >= 0) ref[pl * p.h * p.w + am[e]] += g[e]; continue; }
      int64_t y0, y1, x0, x1, st;
      window(p.kind, rows_of(p), i, y0, y1, st);
      window(p.kind, cols_of(p), j, x0, x1, st);
      for (int64_t a = y0; a < y1; a++) for (int64_t b = x0; b < x1; b++) ref[pl * p.h * p.w + a * p.w + b] += g[e] / (double)divisor(p, i, j);
    }
    tested++;
    for (int64_t k = 0; k < nin; k++) if (std::fabs(ref[k] - gx[k]) > 1e-9) { bad++; printf("pool mismatch kind %d h %ld w %ld oh %ld ow %ld k %d,%d s %d,%d p %d,%d d %d,%d at %ld: %g vs %g\n", p.kind, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw, k, gx[k], ref[k]); break; }
    if (bad > 5) return 1;
  }
  printf("pool: %d configs, %d bad\n", tested, bad);
  int rt = 0, rbad = 0;
  for (int it = 0; it < 20000; it++) {
    gs_resize_params p = {};
    p.mode = R(0, 1); p.align_corners = p.mode == 1 && R(0, 1); p.planes = R(1, 2); p.h = R(1, 12); p.w = R(1, 12);
    bool by_scale = R(0, 1);
    if (by_scale) {
      double sc[] = {0.3, 0.5, 0.7, 1.0, 1.3, 1.5, 1.7, 2.0, 2.5, 3.0};
      p.scale_h = sc[R(0, 9)]; p.scale_w = sc[R(0, 9)];
      p.oh = (int64_t)std::floor(p.h * p.scale_h); p.ow = (int64_t)std::floor(p.w * p.scale_w);
      if (p.oh < 1 || p.ow < 1) continue;
    } else { p.oh = R(1, 25); p.ow = R(1, 25); }
    int64_t nin = p.planes * p.h * p.w, nout = p.planes * p.oh * p.ow;
    std::vector<double> g(nout), gx(nin), ref(nin, 0.0);
    for (auto &v : g) v = R(-8, 8) / 4.0;
    resize_bwd<double>(p, gx.data(), g.data(), nin);
    for (int64_t e = 0; e < nout; e++) {
      int64_t j = e % p.ow, i = (e / p.ow) % p.oh, pl = e / (p.ow * p.oh);
      int64_t r0, r1, c0, c1; double rl, cl;
      source<double>(p, i, p.h, p.oh, p.scale_h, r0, r1, rl);
      source<double>(p, j, p.w, p.ow, p.scale_w, c0, c1, cl);
      double *gp = ref.data() + pl * p.h * p.w;
      gp[r0 * p.w + c0] += (1 - rl) * (1 - cl) * g[e]; gp[r0 * p.w + c1] += (1 - rl) * cl * g[e];
      gp[r1 * p.w + c0] += rl * (1 - cl) * g[e]; gp[r1 * p.w + c1] += rl * cl * g[e];
    }
    rt++;
    for (int64_t k = 0; k < nin; k++) if (std::fabs(ref[k] - gx[k]) > 1e-9) { rbad++; printf("resize mismatch mode %d align %d h %ld w %ld oh %ld ow %ld sc %g %g at %ld: %g vs %g\n", p.mode, p.align_corners, p.h, p.w, p.oh, p.ow, p.scale_h, p.scale_w, k, gx[k], ref[k]); break; }
    if (rbad > 5) return 1;
  }
  printf("resize: %d configs, %d bad\n", rt, rbad);
  return bad || rbad;
}
