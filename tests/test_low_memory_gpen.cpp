// The CPU's low-memory mode on whole GPEN models (docs/memory.md "Low-memory CPU mode"): at the
// GPEN-BFR-256 and -512 widths, converted to int8 with groups of 32, the mode (unbanded, and
// banded to a memory budget) gives exactly what the default mode gives on the direct conv paths,
// and the default mode's output within Winograd's rounding; a run lets the file's pages go.
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

