// libFuzzer target: the JPEG decoder on untrusted bytes (fuzz_image.h says what is checked).
#include "tests/fuzz/fuzz_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_image_decoder(data, size, [](const uint8_t* d, size_t n, const gpen::ReadOptions& o, gpen::ImageMeta* m) {
    return gpen::codec::decode_jpeg(d, n, "fuzz", o, m);
  });
}
