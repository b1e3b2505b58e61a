// gpen bench's 8-bit weight options (--weights-dtype, --group-size, --dense-dtype / --dense-layers)
// on a small synthetic GPEN: they reach the weights (fewer bytes, the JSON names them), --accuracy
// compares with the fp32 originals, and the combinations that cannot hold are refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_command.h"
#include "tests/test_paths.h"

using gpen_test::run;

namespace {

nlohmann::json bench(const std::string& extra) {
  const std::string cmd = gpen_test::binary_dir() +
                          "/gpen --threads 2 bench --device cpu --size 64 --channel-multiplier 1 --narrow 0.25 "
                          "--runs 1 --warmup 0 --accuracy --json " +
                          extra + " 2>/dev/null | cat";
  std::string out;
  REQUIRE_MESSAGE(run(cmd, &out) == 0, out);
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE("gpen bench: per-group 8-bit convs and 8-bit dense layers on synthetic weights") {
  const nlohmann::json f32 = bench("");
  const nlohmann::json ch = bench("--weights-dtype int8");
  const nlohmann::json gr = bench("--weights-dtype int8 --group-size 16 --dense-dtype int8 --dense-layers all");
  CHECK(ch["weights_dtype"] == "i8");
  CHECK(ch["weights_group_size"] == 0);
  CHECK(ch["dense_dtype"] == "fp32");
  CHECK(gr["weights_group_size"] == 16);
  CHECK(gr["dense_dtype"] == "i8");
  // 8-bit dense layers (the style MLP is most of this small model's bytes) outweigh the group scales.
  const double b32 = f32["weights_bytes"], bch = ch["weights_bytes"], bgr = gr["weights_bytes"];
  CHECK(bch < b32);
  CHECK(bgr < 0.9 * bch);
  // Against the fp32 originals: 8-bit rounding, not a broken layout (a wrong scale or code index
  // drops the PSNR of the 8-bit faces far below 30 dB); fp32 weights are the reference itself.
  CHECK(f32["accuracy_max_abs"].get<double>() == 0.0);
  for (const nlohmann::json* j : {&ch, &gr}) {
    CHECK((*j)["accuracy_nonfinite"] == 0);
    CHECK((*j)["accuracy_psnr_8bit"].get<double>() > 40.0);
  }
}

TEST_CASE("gpen bench: 8-bit options that cannot apply are refused, naming the option") {
  const std::string cli = gpen_test::binary_dir() + "/gpen bench --device cpu --size 64 --runs 1 ";
  std::string out;
  CHECK(run(cli + "--group-size 16", &out) != 0);
  CHECK(out.find("--group-size needs 8-bit weights") != std::string::npos);
  CHECK(run(cli + "--dense-dtype int8", &out) != 0);
  CHECK(out.find("--dense-dtype int8|fp8 needs 8-bit conv weights") != std::string::npos);
  CHECK(run(cli + "--weights-dtype int8 --dense-dtype bf16", &out) != 0);
  CHECK(out.find("--dense-dtype must be int8, fp8 or fp32") != std::string::npos);
  CHECK(run(cli + "-m missing.gpw --weights-dtype int8", &out) != 0);
  CHECK(out.find("are for synthetic weights; missing.gpw") != std::string::npos);
}
