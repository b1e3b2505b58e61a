#include "engine/models/gpen_noise.h"

#include <cmath>

namespace gpen {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

struct Xoshiro256 {
  uint64_t s[4];
  uint64_t next() {
    const uint64_t r = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  // Uniform in (0, 1): 53 random bits, offset by half a step so that log() never sees 0.
  double open01() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
};

}  // namespace

void gaussian_noise(uint64_t seed, uint64_t face, uint32_t layer, float* out, size_t n) {
  // Distinct streams per (seed, face, layer): the three words go through splitmix64 in turn.
  uint64_t x = seed;
  uint64_t k = splitmix64(x) ^ face;
  k = splitmix64(k) ^ layer;
  Xoshiro256 g;
  for (auto& w : g.s) w = splitmix64(k);
  const double two_pi = 6.283185307179586476925;
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(g.open01())), a = two_pi * g.open01();
    out[i] = static_cast<float>(r * std::cos(a));
    out[i + 1] = static_cast<float>(r * std::sin(a));
  }
  if (i < n) {  // the first value of one more pair (two statements: the draws stay in order)
    const double r = std::sqrt(-2.0 * std::log(g.open01())), a = two_pi * g.open01();
    out[i] = static_cast<float>(r * std::cos(a));
  }
}

}  // namespace gpen
