#pragma once
// The N(0, 1) noise that FullGenerator_SR concatenates above its input resolution. The official
// code draws it with torch on every call (unseeded), which no other implementation can reproduce;
// here it is a pure function of (seed, face index, layer), so a run is reproducible for a seed and
// a face gets the same noise whatever batch it is run in. The generator: splitmix64 seeding a
// xoshiro256** stream, Box-Muller (both values used) in double, rounded to float. Portable: no
// std:: distributions (their output differs between standard libraries).
#include <cstddef>
#include <cstdint>

namespace gpen {

// `gpen restore --seed` default.
constexpr uint64_t kDefaultNoiseSeed = 0;

// n values for face `face` of the stream `seed`, noise input `layer` (GpenGraph::noise order).
void gaussian_noise(uint64_t seed, uint64_t face, uint32_t layer, float* out, size_t n);

}  // namespace gpen
