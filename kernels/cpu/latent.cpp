// Latent-vector ops of the StyleGAN2 decoder: PixelNorm on z and the demodulation factors of the
// modulated convs (decomposed form: d = rsqrt(s^2 . Q + eps), see kernels/params.h).
#include <cmath>
#include <cstring>

#include "kernels/cpu/ops.h"

namespace gpen::cpu {

namespace {

void check_f32(const TensorView& v, const char* what) {
  GPEN_CHECK(v.dtype == DType::f32,
             std::string(what) + ": only f32 is supported on the CPU, got " + dtype_name(v.dtype));
}

typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

// sum_i s[i]^2 q[i] in double over the whole multiples of 8 (their count in `done`), in eight
// independent lanes: a single running sum would wait on every add (cin x 4 cycles per output).
double sq_dot(const float* s, const float* q, int64_t n, int64_t& done) {
  v4d a0{}, a1{};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v4f s0, s1, q0, q1;
    std::memcpy(&s0, s + i, sizeof s0), std::memcpy(&s1, s + i + 4, sizeof s1);
    std::memcpy(&q0, q + i, sizeof q0), std::memcpy(&q1, q + i + 4, sizeof q1);
    const v4d ds0 = __builtin_convertvector(s0, v4d), ds1 = __builtin_convertvector(s1, v4d);
    a0 += ds0 * ds0 * __builtin_convertvector(q0, v4d);
    a1 += ds1 * ds1 * __builtin_convertvector(q1, v4d);
  }
  done = i;
  const v4d a = a0 + a1;
  return (a[0] + a[1]) + (a[2] + a[3]);
}

}  // namespace

void pixel_norm(const PixelNormParams&, const TensorView& x, const TensorView& y) {
  check_f32(x, "pixel_norm input");
  check_f32(y, "pixel_norm output");
  GPEN_CHECK(x.rank() >= 1 && y.shape == x.shape,
             "pixel_norm: input " + x.shape.str() + " and output " + y.shape.str() + " must have the same shape");
  const int r = x.rank();
  const int64_t c = x.dim(r - 1);
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / c;
  const int64_t xs = x.stride(r - 1), ys = y.stride(r - 1);
  for (int64_t row = 0; row < rows; ++row) {
    // Row offsets from the leading indices, so any strided view works.
    int64_t xo = 0, yo = 0, rest = row;
    for (int d = r - 2; d >= 0; --d) {
      const int64_t i = rest % x.dim(d);
      rest /= x.dim(d);
      xo += i * x.stride(d);
      yo += i * y.stride(d);
    }
    const float* xr = x.f32() + xo;
    float* yr = y.f32() + yo;
    // Accumulate in double: the mean of squares of 512 values loses a few bits in f32 and this
    // op is a negligible cost.
    double ss = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double v = xr[j * xs];
      ss += v * v;
    }
    const float f = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(c) + 1e-8));
    for (int64_t j = 0; j < c; ++j) yr[j * ys] = xr[j * xs] * f;
  }
}

void demod(const DemodParams&, const TensorView& s, const TensorView& q, const TensorView& d) {
  check_f32(s, "demod style");
  check_f32(q, "demod table");
  check_f32(d, "demod output");
  GPEN_CHECK(s.rank() == 2 && q.rank() == 2 && d.rank() == 2 && q.dim(1) == s.dim(1) && d.dim(0) == s.dim(0) &&
                 d.dim(1) == q.dim(0),
             "demod: style " + s.shape.str() + ", table " + q.shape.str() + " and output " + d.shape.str() +
                 " do not match (expected [N, Cin], [Cout, Cin], [N, Cout])");
  const int64_t n = s.dim(0), cin = s.dim(1), cout = q.dim(0);
  const float* sp = s.f32();
  const float* qp = q.f32();
  float* dp = d.f32();
  // Threaded over the outputs from a table of 64k entries: GPEN's (64k-512k) are read once per run,
  // from memory, and two cores took its 256 x 512 tables 1.9x faster than one (docs/benchmarks.md).
  // Each output's sum runs in the same order either way.
  const int T = n * cout * cin >= (int64_t{1} << 16) ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < cout; ++o) {
      const float* sr = sp + b * s.stride(0);
      const float* qr = qp + o * q.stride(0);
      double acc = 0.0;
      int64_t i = 0;
      if (s.stride(1) == 1 && q.stride(1) == 1) acc = sq_dot(sr, qr, cin, i);
      for (; i < cin; ++i) {
        const double si = sr[i * s.stride(1)];
        acc += si * si * static_cast<double>(qr[i * q.stride(1)]);
      }
      dp[b * d.stride(0) + o * d.stride(1)] = static_cast<float>(1.0 / std::sqrt(acc + 1e-8));
    }
  }
}

}  // namespace gpen::cpu
