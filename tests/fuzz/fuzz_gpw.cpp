// libFuzzer target: the .gpw header validation. Every tensor view the reader hands out must lie
// inside the buffer (ASan checks the touches below).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "weights/gpw.h"
#include "weights/gpw_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Mutations almost never keep the header checksum right, which would stop the fuzzer at the
  // CRC check; fix it up so that the JSON validation behind it gets explored (the checksum
  // itself is covered by tests/test_weights_gpw.cpp).
  std::vector<uint8_t> buf(data, data + size);
  if (size >= sizeof(gpen::gpw::Preamble)) {
    gpen::gpw::Preamble p;
    std::memcpy(&p, buf.data(), sizeof p);
    if (p.header_offset == 64 && p.header_bytes <= size - 64) {
      p.header_crc32 = gpen::gpw::crc32(buf.data() + 64, static_cast<size_t>(p.header_bytes));
      std::memcpy(buf.data(), &p, sizeof p);
    }
  }
  try {
    gpen::GpwFile f = gpen::GpwFile::from_memory(buf.data(), buf.size(), "fuzz");
    volatile uint8_t sink = 0;
    for (const auto& e : f.tensors()) {
      if (e.bytes == 0) continue;
      const auto* p = static_cast<const uint8_t*>(e.view.data);
      sink = sink ^ p[0] ^ p[e.bytes - 1];
      if (f.find(e.name) != &e.view) __builtin_trap();
    }
    (void)f.parameter_count();
    (void)f.config().dump();
  } catch (const gpen::Error&) {
  }
  return 0;
}
