// The transformer ops of CodeFormer and RestoreFormer++ on the CPU against PyTorch fixtures
// (tests/reference/make_transformer_fixtures.py: torch.nn and CodeFormer's official modules):
// GroupNorm (with the swish VQGAN puts after it), LayerNorm, GELU, SiLU, TransformerSALayer's
// attention, RestoreFormer++'s cross-attention, the code lookups, the sine position embedding, the fuse block's output and the
// adaptive instance normalisation (against a double-precision loop), on
// strided views where the op takes them, in place where it may run so, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/exp_simd.h"
#include "tests/transformer_fixture.h"

using namespace gpen;
using transformer_fixture::Fix;
using transformer_fixture::load;
using transformer_fixture::worst_rel;

namespace {

// A tensor of shape s as every other element of the last axis of a zeroed parent (a strided
// view), filled from `src` when given.
struct Strided {
  std::vector<float> buf;
  TensorView v;
  explicit Strided(const Shape& s, const std::vector<float>* src = nullptr) {
    buf.assign(static_cast<size_t>(s.numel() * 2), 0.0f);
    Shape parent = s;
    parent[s.rank - 1] *= 2;
    v = make_view(buf.data(), DType::f32, parent);
    v.shape = s;
    v.strides[s.rank - 1] = 2;
    if (src)
      for (size_t i = 0; i < src->size(); ++i) buf[2 * i] = (*src)[i];
  }
  std::vector<float> dense() const {
    std::vector<float> d(buf.size() / 2);
    for (size_t i = 0; i < d.size(); ++i) d[i] = buf[2 * i];
    return d;
  }
};

}  // namespace

TEST_CASE("group_norm is nn.GroupNorm (affine, plain) and VQGAN's normalize + swish") {
  Fix x = load("gn_x"), g = load("gn_gamma"), b = load("gn_beta");
  TensorView gv = g.view(), bv = b.view();
  Strided y(x.shape), xs(x.shape, &x.v);
  GroupNormParams p{4, 1e-6f, true, false};
  cpu::group_norm(p, xs.v, &gv, &bv, y.v);
  CHECK(worst_rel(y.dense(), load("gn_y").v) < 2e-6);
  p.silu = true;
  cpu::group_norm(p, x.view(), &gv, &bv, y.v);
  CHECK(worst_rel(y.dense(), load("gn_silu_y").v) < 2e-6);
  GroupNormParams plain{2, 1e-5f, false, false};
  cpu::group_norm(plain, x.view(), nullptr, nullptr, y.v);
  CHECK(worst_rel(y.dense(), load("gn_plain_y").v) < 2e-6);
  CHECK_THROWS_AS(cpu::group_norm(GroupNormParams{3, 1e-6f, false, false}, x.view(), nullptr, nullptr, y.v), Error);
  CHECK_THROWS_AS(cpu::group_norm(p, x.view(), nullptr, nullptr, y.v), Error);
}

// The vector sweeps (norm_kernel.cpp: blocks of 32 channels on AVX-512, 16 on AVX2, then the
// lanes left over) on 120 channels, one slice of 60 per thread, a mean far from zero against the
// spread, against a double-precision loop; 1 and 2 threads give the same bits, and a strided view
// (the generic loop) the same values within rounding.
TEST_CASE("group_norm's vector sweeps match a double-precision loop on wide maps, the same on 1 and 2 threads") {
  const int64_t N = 2, H = 13, W = 17, C = 120, G = 24, cg = C / G;
  const Shape s{N, H, W, C};
  std::vector<float> x(static_cast<size_t>(s.numel())), g(C), b(C);
  uint32_t r = 12345;
  const auto uni = [&r] { return static_cast<float>((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f; };
  for (size_t i = 0; i < x.size(); ++i) x[i] = 40.0f + 3.0f * uni() + static_cast<float>(i % C) * 0.25f;
  for (int64_t c = 0; c < C; ++c) g[c] = 1.0f + uni(), b[c] = uni();
  const TensorView xv = make_view(x.data(), DType::f32, s), gv = make_view(g.data(), DType::f32, {C});
  const TensorView bv = make_view(b.data(), DType::f32, {C});
  for (bool silu : {false, true}) {
    CAPTURE(silu);
    const GroupNormParams p{static_cast<int>(G), 1e-6f, true, silu};
    std::vector<float> y1(x.size()), y2(x.size());
    cpu::set_num_threads(1);
    cpu::group_norm(p, xv, &gv, &bv, make_view(y1.data(), DType::f32, s));
    cpu::set_num_threads(2);
    cpu::group_norm(p, xv, &gv, &bv, make_view(y2.data(), DType::f32, s));
    CHECK(y1 == y2);
    Strided ys(s), xs(s, &x);
    cpu::group_norm(p, xs.v, &gv, &bv, ys.v);
    CHECK(worst_rel(ys.dense(), y1) < 2e-6);
    double worst = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t gi = 0; gi < G; ++gi) {
        double sum = 0.0, sq = 0.0;
        const auto at = [&](int64_t pix, int64_t c) { return static_cast<double>(x[(n * H * W + pix) * C + c]); };
        for (int64_t pix = 0; pix < H * W; ++pix)
          for (int64_t c = gi * cg; c < (gi + 1) * cg; ++c) sum += at(pix, c);
        const double m = sum / static_cast<double>(H * W * cg);
        for (int64_t pix = 0; pix < H * W; ++pix)
          for (int64_t c = gi * cg; c < (gi + 1) * cg; ++c) sq += (at(pix, c) - m) * (at(pix, c) - m);
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(H * W * cg) + 1e-6);
        for (int64_t pix = 0; pix < H * W; ++pix)
          for (int64_t c = gi * cg; c < (gi + 1) * cg; ++c) {
            double v = (at(pix, c) - m) * inv * g[c] + b[c];
            if (silu) v = v / (1.0 + std::exp(-v));
            worst = std::max(worst, std::fabs(v - y1[(n * H * W + pix) * C + c]));
          }
      }
    // Outputs of magnitude up to ~4: a few float roundings (and exp_simd's ulp) stay far below 1e-5.
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("layer_norm is nn.LayerNorm over the last axis, affine or not, also in place") {
  Fix x = load("ln_x"), g = load("ln_gamma"), b = load("ln_beta");
  TensorView gv = g.view(), bv = b.view();
  Strided y(x.shape);
  cpu::layer_norm(LayerNormParams{1e-5f, true}, x.view(), &gv, &bv, y.v);
  CHECK(worst_rel(y.dense(), load("ln_y").v) < 2e-6);
  cpu::layer_norm(LayerNormParams{1e-6f, false}, x.view(), nullptr, nullptr, x.view());
  CHECK(worst_rel(x.v, load("ln_plain_y").v) < 2e-6);
  Fix wrong = load("gn_gamma");
  TensorView wv = wrong.view();
  CHECK_THROWS_AS(cpu::layer_norm(LayerNormParams{}, x.view(), &wv, &wv, y.v), Error);
}

TEST_CASE("smooth_act is nn.GELU (erf form) and SiLU, also in place") {
  Fix x = load("act_x");
  Strided y(x.shape);
  cpu::smooth_act(SmoothActParams{SmoothAct::gelu}, x.view(), y.v);
  CHECK(worst_rel(y.dense(), load("gelu_y").v) < 1e-6);
  cpu::smooth_act(SmoothActParams{SmoothAct::silu}, x.view(), x.view());
  CHECK(worst_rel(x.v, load("silu_y").v) < 1e-6);
}

TEST_CASE("attention is TransformerSALayer's nn.MultiheadAttention, with and without the position embedding") {
  struct Case {
    const char* name;
    int heads;
    bool pos;
  };
  for (Case c : {Case{"attn", 4, true}, Case{"attn_nopos", 3, false}}) {
    CAPTURE(c.name);
    const std::string n = c.name;
    Fix x = load(n + "_x"), iw = load(n + "_in_w"), ib = load(n + "_in_b"), ow = load(n + "_out_w"),
        ob = load(n + "_out_b");
    Fix pos = c.pos ? load(n + "_pos") : Fix{};
    TensorView xv = x.view(), iwv = iw.view(), ibv = ib.view(), owv = ow.view(), obv = ob.view(), pv = pos.view();
    Strided y(x.shape);
    const AttentionParams p{c.heads, c.pos, false};
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      cpu::set_num_threads(threads);
      std::vector<char> ws(cpu::attention_workspace_bytes(p, x.shape, threads));
      const AttentionArgs a{&xv, c.pos ? &pv : nullptr, &iwv, &ibv, &owv, &obv};
      cpu::attention(p, a, y.v, ws.data());
      CHECK(worst_rel(y.dense(), load(n + "_y").v) < 2e-6);
    }
    cpu::set_num_threads(0);
  }
  Fix x = load("attn_x"), iw = load("attn_in_w"), ib = load("attn_in_b");
  TensorView xv = x.view(), iwv = iw.view(), ibv = ib.view();
  std::vector<char> ws(cpu::attention_workspace_bytes(AttentionParams{3, false, false}, x.shape, 1));
  const AttentionArgs bad{&xv, nullptr, &iwv, &ibv, &iwv, &ibv};
  CHECK_THROWS_AS(cpu::attention(AttentionParams{3, false, false}, bad, xv, ws.data()), Error);  // 16 channels, 3 heads
  CHECK_THROWS_AS(cpu::attention(AttentionParams{4, false}, bad, xv, ws.data()), Error);  // out_w is [3E, E]
}

TEST_CASE("attention with a query sequence is nn.MultiheadAttention's cross-attention, with and without the position embedding") {
  Fix x = load("xattn_x"), q = load("xattn_query"), pos = load("xattn_pos"), iw = load("xattn_in_w"),
      ib = load("xattn_in_b"), ow = load("xattn_out_w"), ob = load("xattn_out_b");
  TensorView xv = x.view(), qv = q.view(), pv = pos.view(), iwv = iw.view(), ibv = ib.view(), owv = ow.view(),
             obv = ob.view();
  for (bool with_pos : {true, false})
    for (int threads : {1, 2}) {
      CAPTURE(with_pos);
      CAPTURE(threads);
      cpu::set_num_threads(threads);
      Strided query(q.shape, &q.v);  // a strided view: the op reads the queries through their strides
      const AttentionParams p{4, with_pos, true};
      std::vector<char> ws(cpu::attention_workspace_bytes(p, x.shape, threads));
      CHECK(ws.size() > cpu::attention_workspace_bytes(AttentionParams{4, with_pos, false}, x.shape, threads));
      Strided y(x.shape);
      cpu::attention(p, {&xv, with_pos ? &pv : nullptr, &iwv, &ibv, &owv, &obv, &query.v}, y.v, ws.data());
      CHECK(worst_rel(y.dense(), load(with_pos ? "xattn_y" : "xattn_nopos_y").v) < 2e-6);
    }
  cpu::set_num_threads(0);
  std::vector<char> ws(cpu::attention_workspace_bytes(AttentionParams{4, false, true}, x.shape, 1));
  Fix y = load("xattn_y");
  TensorView yv = y.view();
  // A query argument the parameters do not announce, and one shaped otherwise than the keys.
  CHECK_THROWS_AS(cpu::attention(AttentionParams{4, false, false}, {&xv, nullptr, &iwv, &ibv, &owv, &obv, &qv}, yv,
                                 ws.data()),
                  Error);
  TensorView short_q = qv;
  short_q.shape = Shape{2, 9, 16};
  CHECK_THROWS_AS(cpu::attention(AttentionParams{4, false, true}, {&xv, nullptr, &iwv, &ibv, &owv, &obv, &short_q}, yv,
                                 ws.data()),
                  Error);
}

TEST_CASE("code_lookup takes CodeFormer's top-1 code and VQGAN's nearest entry, first index on ties") {
  struct Case {
    const char* z;
    const char* book;
    const char* ref;
    CodeLookup mode;
  };
  for (Case c : {Case{"code_logits", "code_codebook", "code_argmax", CodeLookup::argmax},
                 Case{"vq_z", "vq_codebook", "vq_argmin", CodeLookup::argmin}}) {
    CAPTURE(c.ref);
    Fix z = load(c.z), book = load(c.book), want_y = load(std::string(c.ref) + "_y"),
        want_i = load(std::string(c.ref) + "_idx");
    Strided y(want_y.shape), zs(z.shape, &z.v);
    std::vector<int32_t> idx(want_i.v.size(), -1);
    const TensorView iv = make_view(idx.data(), DType::i32, want_i.shape);
    cpu::code_lookup(CodeLookupParams{c.mode}, zs.v, book.view(), y.v, iv);
    for (size_t i = 0; i < idx.size(); ++i) CHECK(idx[i] == static_cast<int32_t>(want_i.v[i]));
    CHECK(y.dense() == want_y.v);
  }
  Fix z = load("vq_z"), book = load("code_codebook");
  std::vector<float> y(static_cast<size_t>(z.shape.numel()));
  std::vector<int32_t> idx(y.size());
  const TensorView iv = make_view(idx.data(), DType::i32, Shape{2, 3, 4});
  CHECK_THROWS_AS(cpu::code_lookup(CodeLookupParams{CodeLookup::argmax}, z.view(), book.view(),
                                   make_view(y.data(), DType::f32, z.shape), iv),
                  Error);  // 6 logits for 20 codes
}

TEST_CASE("position_embedding_sine is CodeFormer's PositionEmbeddingSine, plain and normalised") {
  for (bool norm : {false, true}) {
    CAPTURE(norm);
    Fix want = load(norm ? "pos_sine_norm" : "pos_sine");
    std::vector<float> y(want.v.size());
    PositionSineParams p;
    p.num_pos_feats = 8;
    p.normalize = norm;
    cpu::position_embedding_sine(p, make_view(y.data(), DType::f32, want.shape));
    CHECK(worst_rel(y, want.v) < 1e-6);
  }
}

TEST_CASE("fuse_sft is Fuse_sft_block's dec + w * (dec * scale + shift), also in place") {
  Fix dec = load("fuse_dec"), scale = load("fuse_scale"), shift = load("fuse_shift"), want = load("fuse_y");
  Strided y(dec.shape), ss(scale.shape, &scale.v);
  cpu::fuse_sft(FuseSftParams{0.7f}, dec.view(), ss.v, shift.view(), y.v);
  CHECK(worst_rel(y.dense(), want.v) < 1e-6);
  cpu::fuse_sft(FuseSftParams{0.7f}, dec.view(), scale.view(), shift.view(), dec.view());
  CHECK(worst_rel(dec.v, want.v) < 1e-6);
  CHECK_THROWS_AS(cpu::fuse_sft(FuseSftParams{}, dec.view(), load("ln_x").view(), shift.view(), dec.view()), Error);
}

TEST_CASE("adain trades each channel's mean and unbiased std for the style's, on strided views") {
  // Statistics over a 2 x 2 content and a 2 x 3 style of another size, recomputed here in double.
  const std::vector<float> xs = {1, -1, 2, 0.5f, 3, 4, 4, 9};  // [1, 2, 2, 2]
  const std::vector<float> ss = {0, 2, 0, 2, 0, 2, 10, 2, 0, 3, 0, 2};  // [1, 2, 3, 2]
  Strided x(Shape{1, 2, 2, 2}, &xs), s(Shape{1, 2, 3, 2}, &ss), y(Shape{1, 2, 2, 2});
  cpu::adain(AdaInParams{1e-5f}, x.v, s.v, y.v);
  const std::vector<float> got = y.dense();
  for (int c = 0; c < 2; ++c) {
    auto stats = [&](const std::vector<float>& v, int C, double& m, double& var) {
      const int P = static_cast<int>(v.size()) / C;
      m = 0;
      for (int i = 0; i < P; ++i) m += v[static_cast<size_t>(i * C + c)];
      m /= P;
      var = 0;
      for (int i = 0; i < P; ++i) var += (v[static_cast<size_t>(i * C + c)] - m) * (v[static_cast<size_t>(i * C + c)] - m);
      var /= P - 1;
    };
    double xm, xv, sm, sv;
    stats(xs, 2, xm, xv);
    stats(ss, 2, sm, sv);
    for (int i = 0; i < 4; ++i) {
      const double want = (xs[static_cast<size_t>(i * 2 + c)] - xm) / std::sqrt(xv + 1e-5) * std::sqrt(sv + 1e-5) + sm;
      CHECK(std::abs(got[static_cast<size_t>(i * 2 + c)] - want) < 1e-5 * std::max(1.0, std::abs(want)));
    }
  }
  CHECK_THROWS_AS(cpu::adain(AdaInParams{}, x.v, Strided(Shape{1, 2, 3, 3}).v, y.v), Error);
  CHECK_THROWS_AS(cpu::adain(AdaInParams{}, Strided(Shape{1, 1, 1, 2}).v, s.v, Strided(Shape{1, 1, 1, 2}).v), Error);
}

TEST_CASE("exp_simd is expf within 2 ulp on its range, and silu_simd is x * sigmoid(x)") {
  double worst_ulp = 0.0;
  for (float x = -87.0f; x <= 88.0f; x += 0.000731f * (1.0f + std::fabs(x))) {
    const double want = std::exp(static_cast<double>(x));
    const float got = cpu::exp_simd(x);
    const double ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    worst_ulp = std::max(worst_ulp, std::fabs(got - want) / ulp);
  }
  MESSAGE("exp_simd: worst " << worst_ulp << " ulp");
  CHECK(worst_ulp <= 2.0);
  CHECK(cpu::exp_simd(-200.0f) > 0.0f);
  CHECK(std::isfinite(cpu::exp_simd(200.0f)));
  CHECK(cpu::exp_simd(200.0f) > 1e38f);
  for (float x : {-100.0f, -20.0f, -1.5f, -1e-3f, 0.0f, 1e-3f, 0.7f, 9.0f, 100.0f}) {
    const double want = x / (1.0 + std::exp(-static_cast<double>(x)));
    CHECK(std::fabs(cpu::silu_simd(x) - want) <= 3e-7 * std::fabs(want) + 1e-30);  // exp(100) saturates at 2.4e38
  }
}
