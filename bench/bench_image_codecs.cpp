// Decode + encode of a 12-megapixel JPEG (quality 95 both ways): the engine's libjpeg-turbo path
// against the stb_image / stb_image_write path it replaced, kept here only as the baseline.
// The photo is the shared crowd_1600x898.jpg tiled to 4000x3000, so the entropy-coded data has a
// real photo's statistics.
//   build/bench/bench_image_codecs --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>

#include "engine/photo/image.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_JPEG
#include <stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb_image_write.h>
#pragma GCC diagnostic pop

namespace {

const std::vector<uint8_t>& photo_jpeg() {
  static const std::vector<uint8_t> bytes = [] {
    const gpen::Image src = gpen::read_image(std::string(GPEN_SHARED_DIR) + "/images/crowd_1600x898.jpg");
    gpen::Image big;
    big.width = 4000;
    big.height = 3000;
    big.bgr.resize(big.pixels() * 3);
    for (int y = 0; y < big.height; ++y)
      for (int x = 0; x < big.width; ++x)
        std::memcpy(&big.bgr[(static_cast<size_t>(y) * big.width + x) * 3],
                    &src.bgr[(static_cast<size_t>(y % src.height) * src.width + x % src.width) * 3], 3);
    return gpen::encode_image("jpg", big, 95);
  }();
  return bytes;
}

void BM_jpeg_decode_encode_libjpeg_turbo(benchmark::State& state) {
  const std::vector<uint8_t>& in = photo_jpeg();
  size_t out_bytes = 0;
  for (auto _ : state) {
    const gpen::Image img = gpen::decode_image(in.data(), in.size(), "bench");
    const std::vector<uint8_t> out = gpen::encode_image("jpg", img, 95);
    out_bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["MP"] = 12.0;
  state.counters["out_MB"] = static_cast<double>(out_bytes) / 1e6;
}

// What engine/photo/image.cpp did before: stb decode to RGB, swap to BGR, swap back, stb encode.
void BM_jpeg_decode_encode_stb(benchmark::State& state) {
  const std::vector<uint8_t>& in = photo_jpeg();
  size_t out_bytes = 0;
  for (auto _ : state) {
    int w = 0, h = 0, comp = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> px(
        stbi_load_from_memory(in.data(), static_cast<int>(in.size()), &w, &h, &comp, 3), stbi_image_free);
    if (!px) state.SkipWithError("stb decode failed");
    const size_t n = static_cast<size_t>(w) * static_cast<size_t>(h);
    std::vector<uint8_t> bgr(n * 3), rgb(n * 3);
    for (size_t i = 0; i < n; ++i) {
      bgr[3 * i] = px.get()[3 * i + 2];
      bgr[3 * i + 1] = px.get()[3 * i + 1];
      bgr[3 * i + 2] = px.get()[3 * i];
    }
    for (size_t i = 0; i < n; ++i) {
      rgb[3 * i] = bgr[3 * i + 2];
      rgb[3 * i + 1] = bgr[3 * i + 1];
      rgb[3 * i + 2] = bgr[3 * i];
    }
    std::vector<uint8_t> out;
    auto sink = [](void* ctx, void* data, int len) {
      auto* v = static_cast<std::vector<uint8_t>*>(ctx);
      v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + len);
    };
    stbi_write_jpg_to_func(sink, &out, w, h, 3, rgb.data(), 95);
    out_bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["MP"] = 12.0;
  state.counters["out_MB"] = static_cast<double>(out_bytes) / 1e6;
}

}  // namespace

BENCHMARK(BM_jpeg_decode_encode_libjpeg_turbo)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_jpeg_decode_encode_stb)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
