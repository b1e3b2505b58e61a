// libFuzzer target: PyTorch zip / legacy pickle / safetensors readers and model recognition on
// arbitrary bytes. The only acceptable outcome besides success is a gpen::Error; anything else
// (crash, sanitizer report, other exception, >2 GB allocation, hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto ck = gpen::conv::Checkpoint::open_memory(data, size, "fuzz");
    uint64_t budget = uint64_t{64} << 20;  // read tensors until 64 MB have been read
    for (const auto& t : ck->tensors()) {
      if (t.nbytes > budget) break;
      budget -= t.nbytes;
      std::vector<uint8_t> buf(static_cast<size_t>(t.nbytes));
      ck->read_raw(t, buf.data());
      if (gpen::conv::src_dtype_is_float(t.dtype)) ck->read_f32(t);
    }
    gpen::conv::summarize(*ck);
    for (auto arch : {gpen::conv::Arch::gpen, gpen::conv::Arch::retinaface}) gpen::conv::summarize(*ck, arch);
  } catch (const gpen::Error&) {
  }
  return 0;
}
