#include "engine/runtime/env_options.h"

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include "engine/core/error.h"

namespace gpen {

namespace {

// The value of `name` among `values` (name = value pairs); unset or empty: the first. `what` names
// the kind of value in the error.
template <class T>
T read(const char* name, std::initializer_list<std::pair<const char*, T>> values, const char* what = "value") {
  const char* e = std::getenv(name);
  const std::string v = e ? e : "";
  if (v.empty()) return values.begin()->second;
  std::string names;
  for (const auto& [s, t] : values) {
    if (v == s) return t;
    names += std::string(names.empty() ? "" : ", ") + s;
  }
  throw Error(std::string(name) + ": unknown " + what + " '" + v + "' (expected one of " + names + ")");
}

cpu::CpuOptions read_all() {
  using cpu::ConvMode, cpu::FarMode, cpu::Isa;
  if (const char* e = std::getenv("GPEN_CPU_ISA"); e && *e) {
    // The baseline by its name on this target ("avx2" on x86-64, "neon" on aarch64) or as "baseline".
    const Isa isa = read<Isa>("GPEN_CPU_ISA", {{cpu::isa_name(Isa::baseline), Isa::baseline}, {"baseline", Isa::baseline},
                                               {"avx512", Isa::avx512}});
    GPEN_CHECK(isa != Isa::avx512 || cpu::cpu_has_avx512(),
               "GPEN_CPU_ISA=avx512, but this CPU lacks AVX-512 F/BW/DQ/VL or this build its kernels");
    cpu::use_isa(isa);
  }
  cpu::CpuOptions o;
  o.conv = read<ConvMode>("GPEN_CPU_CONV", {{"auto", ConvMode::automatic},
                                            {"direct", ConvMode::direct},
                                            {"winograd", ConvMode::winograd4},
                                            {"winograd4", ConvMode::winograd4},
                                            {"winograd2", ConvMode::winograd2}});
  o.own_gemm = read<bool>("GPEN_CPU_CONV1X1", {{"own", true}, {"eigen", false}});
  o.wino_fused = read<bool>("GPEN_CPU_WINO_FUSED", {{"1", true}, {"0", false}});
  o.far = read<FarMode>("GPEN_CPU_FAR", {{"auto", FarMode::measure}, {"0", FarMode::never}, {"1", FarMode::always}});
  const char* huge = std::getenv("GPEN_CPU_HUGEPAGES");
  o.huge_pages = !(huge && std::string(huge) == "0");  // only "0" turns the advice off
  o.isa = cpu::cpu_isa();
  return o;
}

}  // namespace

const cpu::CpuOptions& cpu_options_from_env() {
  static const cpu::CpuOptions o = read_all();
  return o;
}

cpu::CpuOptions low_memory_cpu_options() {
  cpu::CpuOptions o = cpu_options_from_env();
  o.low_memory = true;
  o.huge_pages = false;
  return o;
}

std::optional<cuda_tiles::GemmFamily> cuda_gemm_family_from_env() {
  using cuda_tiles::GemmFamily;
  static const std::optional<GemmFamily> f = []() -> std::optional<GemmFamily> {
    const char* e = std::getenv("GPEN_CUDA_GEMM");
    if (!e || !*e) return std::nullopt;
    return read<GemmFamily>("GPEN_CUDA_GEMM", {{"mma", GemmFamily::mma}, {"wmma", GemmFamily::wmma}},
                              "GEMM family");
  }();
  return f;
}

}  // namespace gpen
