// GPEN on the engine against the PyTorch reference (tests/reference/make_gpen_fixtures.py):
// random-weight checkpoints in the official layout are converted, run, and compared layer by
// layer and end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "kernels/cpu/face_io.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/npy.h"
#include "kernels/cpu/ops.h"
#include "test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(GPEN_FIXTURE_DIR) + "/gpen/";

struct Diff {
  double max = 0, mean = 0;
};

// Compares an NHWC engine tensor with the first C channels of an NCHW reference.
Diff compare_nchw(const TensorView& v, const npy::Array& ref) {
  REQUIRE(ref.shape.size() == 4);
  const int64_t N = v.dim(0), H = v.dim(1), W = v.dim(2), C = v.dim(3);
  REQUIRE(ref.shape[0] == N);
  REQUIRE(ref.shape[2] == H);
  REQUIRE(ref.shape[3] == W);
  REQUIRE(ref.shape[1] >= C);
  const float* r = ref.data<float>();
  Diff d;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          float e = v.f32()[n * v.stride(0) + y * v.stride(1) + x * v.stride(2) + c];
          double diff = std::fabs(double(e) - r[((n * ref.shape[1] + c) * H + y) * W + x]);
          d.max = std::max(d.max, diff);
          d.mean += diff;
        }
  d.mean /= double(N * C * H * W);
  return d;
}

Diff compare_flat(const TensorView& v, const npy::Array& ref) {
  REQUIRE(ref.numel() == v.numel());
  Diff d;
  for (int64_t i = 0; i < v.numel(); ++i) {
    double diff = std::fabs(double(v.f32()[i]) - ref.data<float>()[i]);
    d.max = std::max(d.max, diff);
    d.mean += diff;
  }
  d.mean /= double(v.numel());
  return d;
}

std::unique_ptr<GpenModel> load(const std::string& cfg, Backend& be) {
  std::string gpw = (gpen_test::scratch_path("e2e_" + cfg + ".gpw")).string();
  conv::convert(kDir + cfg + "/checkpoint.pth", gpw);
  auto m = GpenModel::open(gpw, be);
  fs::remove(gpw);  // the mapping stays valid after unlink
  return m;
}

void check_config(const std::string& cfg) {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  auto m = load(cfg, *be);
  npy::Array in = npy::load(kDir + cfg + "/input.npy");
  const int N = static_cast<int>(in.shape[0]), S = m->size();
  // A plan with no reuse keeps every intermediate readable for the layer-by-layer comparison.
  m->prepare(N, "naive", false);
  std::vector<float> x(in.numel()), y(in.numel());
  const size_t plane = size_t(S) * S;
  for (int n = 0; n < N; ++n)
    for (size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) x[(n * plane + p) * 3 + c] = in.data<float>()[(n * 3 + c) * plane + p];
  m->run(x.data(), y.data());

  // Layer by layer. The tolerance is float32 accumulation error over these small layers: the
  // reference's own float32-vs-float64 gap is ~1e-6 (manifest f64_maxabs_diff).
  const double tol = 1e-4;
  int L = 0;
  while ((1 << L) < S) ++L;
  for (int j = 0; j <= L - 2; ++j) {
    Diff d = compare_nchw(m->view("ecd" + std::to_string(j)), npy::load(kDir + cfg + "/enc" + std::to_string(j) + ".npy"));
    INFO("encoder feature ", j, " max ", d.max);
    CHECK(d.max <= tol);
  }
  CHECK(compare_flat(m->view("final_linear"), npy::load(kDir + cfg + "/z.npy")).max <= tol);
  CHECK(compare_flat(m->view("generator.style.8"), npy::load(kDir + cfg + "/w.npy")).max <= tol);
  CHECK(compare_nchw(m->view("generator.conv1"), npy::load(kDir + cfg + "/gen_conv1.npy")).max <= tol);
  for (int k = 0; k < 2 * (L - 2); ++k) {
    std::string name = "generator.convs." + std::to_string(k) + (k % 2 == 0 ? ".blur" : "");
    Diff d = compare_nchw(m->view(name), npy::load(kDir + cfg + "/gen_convs_" + std::to_string(k) + ".npy"));
    INFO(name, " max ", d.max);
    CHECK(d.max <= tol);
  }
  for (int i = 0; i < L - 2; ++i) {
    std::string f = kDir + cfg + "/gen_to_rgbs_" + std::to_string(i) + ".npy";
    if (!fs::exists(f)) continue;
    CHECK(compare_nchw(m->view("generator.to_rgbs." + std::to_string(i)), npy::load(f)).max <= tol);
  }

  // End to end: the fidelity targets on the raw output ...
  npy::Array out = npy::load(kDir + cfg + "/output.npy");
  Diff d;
  for (int n = 0; n < N; ++n)
    for (size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) {
        double diff = std::fabs(double(y[(n * plane + p) * 3 + c]) - out.data<float>()[(n * 3 + c) * plane + p]);
        d.max = std::max(d.max, diff);
        d.mean += diff;
      }
  d.mean /= double(out.numel());
  MESSAGE(cfg, ": raw output max |engine - reference| ", d.max, ", mean ", d.mean);
  CHECK(d.max <= 1e-3);
  CHECK(d.mean <= 1e-4);
  // ... and the 8-bit output within one level on >= 99.9% of the pixels.
  npy::Array u8 = npy::load(kDir + cfg + "/output_uint8.npy");  // N x S x S x 3 BGR
  size_t off = 0, total = 0;
  for (int n = 0; n < N; ++n) {
    Image img = model_to_face(y.data() + n * plane * 3, S);
    for (size_t i = 0; i < img.bgr.size(); ++i, ++total)
      off += std::abs(int(img.bgr[i]) - int(u8.data<uint8_t>()[n * plane * 3 + i])) > 1;
  }
  CHECK(double(off) / double(total) <= 1e-3);
}

}  // namespace

TEST_CASE("GPEN s32 matches the PyTorch reference layer by layer and end to end") { check_config("s32"); }
TEST_CASE("GPEN s64 matches the PyTorch reference layer by layer and end to end") { check_config("s64"); }

TEST_CASE("GPEN plan with reuse gives the same output as without") {
  auto be = make_cpu_backend();
  auto m = load("s64", *be);
  npy::Array in = npy::load(kDir + "s64/input.npy");
  std::vector<float> x(in.numel()), y1(in.numel()), y2(in.numel());
  for (int64_t i = 0; i < in.numel(); ++i) x[i] = in.data<float>()[i];  // layout irrelevant here
  m->prepare(2, "naive", false);
  m->run(x.data(), y1.data());
  m->prepare(2);
  CHECK(m->plan().arena_bytes < m->plan().naive_bytes);
  m->run(x.data(), y2.data());
  CHECK(y1 == y2);
}

namespace {
// The CPU backend as a machine without transparent huge pages sees it (THP "never", or
// GPEN_CPU_HUGEPAGES=0).
class NoHugePages final : public Backend {
 public:
  const char* name() const override { return inner_->name(); }
  size_t workspace_bytes(const Graph& g, const Node& n) const override { return inner_->workspace_bytes(g, n); }
  void* allocate(size_t bytes) override {
    ++allocations_;
    return inner_->allocate(bytes);
  }
  void release(void* p) override { inner_->release(p); }
  void upload(void* d, const void* s, size_t b) override { inner_->upload(d, s, b); }
  void download(void* d, const void* s, size_t b) override { inner_->download(d, s, b); }
  void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out, void* ws) override {
    inner_->run(n, in, out, ws);
  }

 private:
  std::unique_ptr<Backend> inner_ = make_cpu_backend();
};
}  // namespace

TEST_CASE("GPEN on a CPU without huge pages reads its weights in place (no copy), with the same bits") {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  NoHugePages plain;
  auto copied = load("s64", *be);
  auto mapped = load("s64", plain);  // its file is unlinked: the mapping must outlive that
  // The copy is the one allocation a load makes, and only where the pages are huge.
  CHECK(be->allocations() == (be->huge_pages() ? 1u : 0u));
  CHECK(plain.allocations() == 0);
  npy::Array in = npy::load(kDir + "s64/input.npy");
  std::vector<float> x(in.numel()), y1(in.numel()), y2(in.numel());
  for (int64_t i = 0; i < in.numel(); ++i) x[i] = in.data<float>()[i];
  copied->prepare(2);
  mapped->prepare(2);
  copied->run(x.data(), y1.data());
  mapped->run(x.data(), y2.data());
  CHECK(y1 == y2);
  // Synthetic weights stay in their vectors the same way.
  GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  auto s1 = GpenModel::synthetic(c, *be, 7);
  auto s2 = GpenModel::synthetic(c, plain, 7);
  std::vector<float> a(size_t(32) * 32 * 3, 0.25f), b1(a.size()), b2(a.size());
  s1->prepare(1);
  s2->prepare(1);
  s1->run(a.data(), b1.data());
  s2->run(a.data(), b2.data());
  CHECK(b1 == b2);
}

TEST_CASE("GPEN model refuses a RetinaFace file") {
  auto be = make_cpu_backend();
  std::string pth = std::string(GPEN_SHARED_DIR) + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(pth)) return;
  std::string gpw = (gpen_test::scratch_path("e2e_retina.gpw")).string();
  conv::convert(pth, gpw);
  CHECK_THROWS_WITH_AS(GpenModel::open(gpw, *be), doctest::Contains("not GPEN"), Error);
  fs::remove(gpw);
}
