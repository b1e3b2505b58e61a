// The CPU's low-memory mode on whole GPEN models (docs/memory.md "Low-memory CPU mode"): at the
// GPEN-BFR-256 and -512 widths, converted to int8 with groups of 32, the mode (unbanded, and
// banded to a memory budget) gives exactly what the default mode gives on the direct conv paths,
// and the default mode's output within Winograd's rounding; a run lets the file's pages go. The
// photo flow in the mode (Restorer with RestoreConfig::low_memory) gives the direct paths' photo,
// with every planned byte inside the budget.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "kernels/cpu/image_resize.h"
#include "engine/plan/memory_budget.h"
#include "engine/runtime/env_options.h"
#include "kernels/cpu/cpu_options.h"
#include "test_paths.h"
#include "weights/gpw.h"

namespace fs = std::filesystem;
using namespace gpen;

namespace {

// A GPEN checkpoint in the official layout with seeded random values (the initialisation of
// scripts/make_synthetic_gpen.py in kind: N(0, 1) convs, small biases, modulation biases near 1),
// as safetensors.
void write_checkpoint(const std::string& path, int size, double cm, double narrow) {
  conv::GpenConfig c;
  c.size = size;
  c.channel_multiplier = cm;
  c.narrow = narrow;
  nlohmann::json h = nlohmann::json::object();
  std::vector<float> data;
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const conv::TensorSpec& t : conv::gpen_layout(c)) {
    if (t.optional) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const size_t off = data.size() * 4;
    const bool bias = t.name.find("bias") != std::string::npos, noise = t.name.find("noise") != std::string::npos;
    const bool mod_bias = t.name.find("modulation.bias") != std::string::npos;
    const bool rgb = t.name.find("to_rgb") != std::string::npos;
    for (int64_t i = 0; i < n; ++i)
      data.push_back(mod_bias ? 1.0f + 0.1f * nd(rng) : (bias || noise ? 0.1f : rgb ? 0.3f : 1.0f) * nd(rng));
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, data.size() * 4}}};
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary);
  const uint64_t len = text.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * 4));
}

std::unique_ptr<Backend> cpu_backend(bool low_memory, cpu::ConvMode mode = cpu::ConvMode::automatic) {
  cpu::CpuOptions o = cpu_options_from_env();
  o.conv = mode;
  o.low_memory = low_memory;
  o.huge_pages = !low_memory && o.huge_pages;
  return make_cpu_backend(o);
}

std::vector<float> run(GpenModel& m, const std::vector<float>& in) {
  std::vector<float> out(static_cast<size_t>(m.output_size()) * m.output_size() * 3);
  m.run(in.data(), out.data());
  return out;
}

// Resident bytes of this process's mappings of `path` (/proc/self/smaps), 0 when not mapped.
size_t mapped_rss(const std::string& path) {
  std::ifstream f("/proc/self/smaps");
  const std::string canon = fs::canonical(path).string();
  std::string line;
  bool in = false;
  size_t kb = 0;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string first;
    ls >> first;
    if (first.empty()) continue;
    if (first.back() != ':') {  // a mapping's header: "start-end perms offset dev inode path"
      in = line.size() >= canon.size() && line.compare(line.size() - canon.size(), canon.size(), canon) == 0;
      continue;
    }
    if (in && first == "Rss:") {
      size_t v = 0;
      ls >> v;
      kb += v;
    }
  }
  return kb * 1024;
}

}  // namespace

TEST_CASE("low memory: GPEN at the GPEN-BFR-256 and -512 widths within a memory budget equals the direct paths bit for bit") {
  const fs::path d = gpen_test::scratch_path("low_memory");
  fs::create_directories(d);
  struct Case {
    const char* name;
    double cm, narrow;
  } cases[] = {{"GPEN-BFR-256 widths", 1, 0.5}, {"GPEN-BFR-512 widths", 2, 1}};
  const int S = 64;  // the high-resolution stages that banding cuts, at a test's cost
  std::vector<float> in(static_cast<size_t>(S) * S * 3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string src = (d / "g.safetensors").string(), q = (d / "g_int8.gpw").string();
    write_checkpoint(src, S, c.cm, c.narrow);
    conv::ConvertOptions o;
    o.dtype = DType::i8;
    o.dense_dtype = DType::i8;
    o.dense_layers = kDense8Modulation;
    o.q8_group = 32;
    conv::convert(src, q, o);

    auto def_b = cpu_backend(false), direct_b = cpu_backend(false, cpu::ConvMode::direct), low_b = cpu_backend(true);
    auto def = GpenModel::open(q, *def_b);
    def->prepare(1);
    const std::vector<float> y_def = run(*def, in);
    def.reset();
    auto direct = GpenModel::open(q, *direct_b);
    direct->prepare(1);
    const std::vector<float> y_direct = run(*direct, in);
    const size_t ws_direct = direct->plan().workspace_bytes;
    direct.reset();

    auto low = GpenModel::open(q, *low_b);
    // Unbanded: the whole arena fits a generous budget.
    PlanOptions po;
    po.memory_budget = size_t{1} << 30;
    low->prepare(1, po);
    CHECK(low->budget_fit().fits);
    CHECK(low->budget_fit().arena_budget == 0);
    const MemoryPlan unbanded = low->plan();
    CHECK(unbanded.workspace_bytes < ws_direct);  // no layer's f32 weight in it
    const std::vector<float> y_low = run(*low, in);
    CHECK(std::memcmp(y_low.data(), y_direct.data(), y_low.size() * 4) == 0);
    // A run again (the pages come back from the file) gives the same.
    CHECK(run(*low, in) == y_low);

    // A budget that only a banded arena meets: a third of the unbanded arena less.
    po.memory_budget = low->budget_fit().total() - unbanded.arena_bytes / 3;
    low->prepare(1, po);
    const BudgetFit& f = low->budget_fit();
    CHECK(f.fits);
    CHECK(f.arena_budget > 0);
    CHECK(f.total() <= po.memory_budget);
    CHECK(low->plan().arena_bytes < unbanded.arena_bytes);
    CHECK(f.total() == f.weights.peak_bytes + low->plan().arena_bytes + low->plan().workspace_bytes);
    const std::vector<float> y_band = run(*low, in);
    CHECK(std::memcmp(y_band.data(), y_direct.data(), y_band.size() * 4) == 0);

    // Against the default mode (Winograd where the rule says): rounding only.
    float worst = 0.0f, peak = 0.0f;
    for (size_t i = 0; i < y_def.size(); ++i) {
      worst = std::max(worst, std::fabs(y_band[i] - y_def[i]));
      peak = std::max(peak, std::fabs(y_def[i]));
    }
    MESSAGE(std::string(c.name) << ": low-memory vs default max abs " << worst << " (largest output " << peak << ")");
    CHECK(worst <= 1e-4f * std::max(1.0f, peak));
  }
  fs::remove_all(d);
}

TEST_CASE("low memory: a run lets the weights pages of the file go, the default mode keeps them mapped") {
  const fs::path d = gpen_test::scratch_path("low_memory_pages");
  fs::create_directories(d);
  const std::string src = (d / "g.safetensors").string(), q = (d / "g_int8.gpw").string();
  write_checkpoint(src, 64, 2, 1);
  conv::ConvertOptions o;
  o.dtype = DType::i8;
  o.q8_group = 32;
  conv::convert(src, q, o);
  const size_t file_bytes = fs::file_size(q);
  std::vector<float> in(64 * 64 * 3, 0.25f);
  {
    cpu::CpuOptions co = cpu_options_from_env();
    co.huge_pages = false;  // the weights stay in the mapping, read as they are
    auto b = make_cpu_backend(co);
    auto m = GpenModel::open(q, *b);
    m->prepare(1);
    run(*m, in);
    const size_t rss = mapped_rss(q);
    MESSAGE("default mode: " << rss << " of " << file_bytes << " bytes of the file resident after a run");
    CHECK(rss >= file_bytes * 9 / 10);
  }
  {
    auto b = cpu_backend(true);
    auto m = GpenModel::open(q, *b);
    PlanOptions po;
    po.memory_budget = size_t{1} << 30;
    m->prepare(1, po);
    run(*m, in);
    const size_t rss = mapped_rss(q);
    MESSAGE("low-memory mode: " << rss << " of " << file_bytes << " bytes of the file resident after a run");
    CHECK(rss <= file_bytes / 20);
    // While it runs, at most the plan's bound: the largest weight set between first and last reader.
    CHECK(m->budget_fit().weights.peak_bytes < file_bytes / 2);
  }
  fs::remove_all(d);
}


TEST_CASE("low memory: a photo restored within a memory budget equals the direct paths, every planned byte inside it") {
  const std::string det_pth = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(det_pth)) {
    MESSAGE("skipped: " << det_pth << " is missing");
    return;
  }
  const fs::path d = gpen_test::scratch_path("low_memory_photo");
  fs::create_directories(d);
  const std::string src = (d / "g.safetensors").string(), q = (d / "g_int8.gpw").string(),
                    det = (d / "mnet.gpw").string();
  write_checkpoint(src, 128, 1, 0.5);  // GPEN-BFR-256's widths at 128, a test's cost
  conv::ConvertOptions o;
  o.dtype = DType::i8;
  o.dense_dtype = DType::i8;
  o.dense_layers = kDense8Modulation;
  o.q8_group = 32;
  conv::convert(src, q, o);
  conv::convert(det_pth, det);
  const Image photo = read_image(gpen_test::shared_dir() + "/images/kids_1024x768.jpg");
  const int S = 128;
  const size_t face = size_t{S} * S * 3;

  // The reference: the default mode on the direct conv paths, one face per run, unbanded.
  auto reference = [&](int det_side, ImageView p) {
    auto gb = cpu_backend(false, cpu::ConvMode::direct);
    auto g = GpenModel::open(q, *gb);
    RetinaFaceDetector detector(det, cpu_backend(false, cpu::ConvMode::direct));
    RestoreOptions ro;
    ro.batch = 1;
    ro.detect.max_side = ro.detect.target_side = det_side;
    FaceRestorer steps(*g, detector, ro);
    return steps.process(p);
  };
  auto config = [&](size_t budget, int det_side) {
    RestoreConfig c;
    c.model = q;
    c.detector = det;
    c.device = DeviceKind::cpu;
    c.low_memory = true;
    c.memory_budget = budget;
    c.det_max_side = det_side;
    return c;
  };
  auto use_of = [](Restorer& r) { return r.faces().budget_use(); };

  // Detection on a copy shrunk to 512 (the detector's arena then under GPEN's).
  const PhotoResult want = reference(512, photo);
  REQUIRE(want.restored >= 4);
  // A generous budget: GPEN unbanded.
  auto r1 = Restorer::open(config(size_t{1} << 30, 512));
  const RestoreResult got1 = r1->restore(photo);
  const BudgetUse u1 = use_of(*r1);
  CHECK(got1.restored == want.restored);
  CHECK(got1.image.bgr == want.image.bgr);
  CHECK(r1->model().budget_fit().arena_budget == 0);
  CHECK(u1.fits == 1);  // the faces kept fitted beside the plan made for the photo
  CHECK(u1.total() <= u1.budget);
  CHECK(u1.images == photo.bgr.size() * 2);  // the photo and the composite
  CHECK(u1.faces == face * static_cast<size_t>(want.restored));
  CHECK(u1.arena >= r1->detector().planned_memory(384, 512).arena_bytes);
  MESSAGE("unbanded: planned " << u1.total() << " bytes: GPEN's weights resident " << u1.gpen_weights << ", arena "
                               << u1.arena << ", workspace " << u1.workspace << ", detector's weights "
                               << u1.detector_weights << ", images " << u1.images << ", buffer " << u1.buffer
                               << ", faces " << u1.faces);

  // A third of GPEN's arena less: banded, the same image.
  const size_t b2 = u1.total() - u1.arena / 3;
  auto r2 = Restorer::open(config(b2, 512));
  const RestoreResult got2 = r2->restore(photo);
  const BudgetUse u2 = use_of(*r2);
  CHECK(r2->model().budget_fit().arena_budget > 0);
  CHECK(u2.arena < u1.arena);
  CHECK(u2.total() <= b2);
  CHECK(got2.image.bgr == want.image.bgr);

  // The detector at the photo's own size plans an 18 MiB arena, more than that budget leaves GPEN:
  // refused before anything runs, naming the way out.
  auto r3 = Restorer::open(config(b2, 0));
  const size_t det_arena = r3->detector().planned_memory(768, 1024).arena_bytes;
  REQUIRE(det_arena > u2.arena);
  CHECK_THROWS_WITH_AS(r3->restore(photo), doctest::Contains("--det-max-side"), gpen::Error);
  // With room for it the arena GPEN lends the detector is made as large as the detector's plan.
  const size_t b4 = u2.total() - u2.arena + det_arena;
  auto r4 = Restorer::open(config(b4, 0));
  const RestoreResult got4 = r4->restore(photo);
  const BudgetUse u4 = use_of(*r4);
  CHECK(u4.arena >= det_arena);
  CHECK(u4.total() <= b4);
  CHECK(got4.image.bgr == reference(0, photo).image.bgr);

  // A smaller photo first, then the larger one: GPEN fitted again, smaller, for the larger.
  const Image small = resize_bilinear(photo, 512, 384);
  auto r5 = Restorer::open(config(u2.total(), 512));
  r5->restore(small);
  CHECK(use_of(*r5).fits == 1);
  const RestoreResult got5 = r5->restore(photo);
  CHECK(use_of(*r5).fits == 2);
  CHECK(use_of(*r5).total() <= u2.total());
  CHECK(got5.image.bgr == want.image.bgr);
  fs::remove_all(d);
}

TEST_CASE("low memory: the photo flow's options it does not plan are refused by name") {
  RestoreConfig c;
  c.model = "g.gpw";
  c.detector = "d.gpw";
  c.low_memory = true;
  CHECK_THROWS_WITH_AS(check_config(c), doctest::Contains("give one"), gpen::Error);
  c.memory_budget = size_t{128} << 20;
  check_config(c);
  RestoreConfig p = c;
  p.parser = "p.gpw";
  CHECK_THROWS_WITH_AS(check_config(p), doctest::Contains("--parse"), gpen::Error);
  RestoreConfig s = c;
  s.sr = "sr.gpw";
  CHECK_THROWS_WITH_AS(check_config(s), doctest::Contains("--sr"), gpen::Error);
  RestoreConfig g = c;
  g.device = DeviceKind::cuda;
  CHECK_THROWS_WITH_AS(check_config(g), doctest::Contains("--vram-budget"), gpen::Error);
  RestoreConfig b = c;
  b.bands = 4;
  CHECK_THROWS_WITH_AS(check_config(b), doctest::Contains("--bands"), gpen::Error);
}
