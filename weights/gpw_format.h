#pragma once
// On-disk constants of the .gpw flat weight format (see docs/weights-format.md).
//
//   [0, 64)            preamble (little-endian, fixed fields below)
//   [64, 64 + H)       header: UTF-8 JSON {format, version, arch, config, storage_dtype, tensors[...]}
//   [D, D + N)         tensor data, D = align256(64 + H); each tensor starts at D + offset with
//                      offset % 256 == 0, and the file ends exactly at D + N.
#include <cstddef>
#include <cstdint>

namespace gpen::gpw {

constexpr char kMagic[4] = {'G', 'P', 'W', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPreambleBytes = 64;
constexpr uint64_t kAlign = 256;
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;

struct Preamble {
  char magic[4];           // "GPW1"
  uint32_t version;        // kVersion
  uint64_t header_offset;  // 64
  uint64_t header_bytes;   // H
  uint64_t data_offset;    // D, a multiple of 256
  uint64_t data_bytes;     // N, a multiple of 256
  uint32_t header_crc32;   // CRC-32 (IEEE, as zlib) of the header bytes
  uint32_t reserved0;      // 0
  uint64_t reserved[2];    // 0
};
static_assert(sizeof(Preamble) == kPreambleBytes, "preamble must be 64 bytes");

inline uint64_t align_up(uint64_t v, uint64_t a = kAlign) { return (v + a - 1) / a * a; }

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

}  // namespace gpen::gpw
