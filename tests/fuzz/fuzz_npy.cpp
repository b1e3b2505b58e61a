// libFuzzer target: the .npy reader. A parse either fails with gpen::Error or returns an array
// whose bytes hold exactly numel elements of its type (ASan checks the touches).
#include <cstddef>
#include <cstdint>

#include "engine/core/error.h"
#include "engine/photo/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gpen::npy::Array a = gpen::npy::parse(data, size, "fuzz");
    if (a.bytes.size() != static_cast<size_t>(a.numel()) * gpen::npy::elem_size(a.type)) __builtin_trap();
    if (!a.bytes.empty()) {
      volatile uint8_t sink = a.bytes.front() ^ a.bytes.back();
      (void)sink;
    }
    if (a.numel() <= 4096) (void)a.to_f32();
  } catch (const gpen::Error&) {
  }
  return 0;
}
