// The face-parsing paste mask: ParseNet's input, its keep / drop mask, mask_postprocess in float64
// and the resize to the crop size (parse_mask.h).
#include "engine/photo/parse_mask.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/photo/paste.h"
#include "kernels/cpu/image_resize.h"
#include "kernels/cpu/paste.h"

namespace gpen {

namespace {

using cpu::reflect101;

constexpr int kN = kParseSize;
constexpr int kThres = 26;
constexpr int kKsize = 101, kRadius = kKsize / 2;

// cv::getGaussianKernel(101, sigma, CV_64F): exp(-x^2 / (2 sigma^2)) for x = i - 50, divided by the sum.
std::vector<double> gaussian_kernel64(double sigma) {
  std::vector<double> k(kKsize);
  double sum = 0.0;
  const double scale2x = -0.5 / (sigma * sigma);
  for (int i = 0; i < kKsize; ++i) {
    const double x = i - (kKsize - 1) * 0.5;
    k[static_cast<size_t>(i)] = std::exp(scale2x * x * x);
    sum += k[static_cast<size_t>(i)];
  }
  for (double& v : k) v /= sum;
  return k;
}

// One separable 101 x 101 blur of an n x n float64 image, reflect-101 borders: rows, then columns.
void blur64(std::vector<double>& img, int n, const std::vector<double>& k) {
  std::vector<double> rows(img.size()), padded(static_cast<size_t>(n + 2 * kRadius));
  for (int y = 0; y < n; ++y) {
    const double* src = img.data() + static_cast<size_t>(y) * n;
    for (int j = 0; j < n + 2 * kRadius; ++j) padded[static_cast<size_t>(j)] = src[reflect101(j - kRadius, n)];
    double* d = rows.data() + static_cast<size_t>(y) * n;
    for (int x = 0; x < n; ++x) {
      double s = 0.0;
      for (int t = 0; t < kKsize; ++t) s += padded[static_cast<size_t>(x + t)] * k[static_cast<size_t>(t)];
      d[x] = s;
    }
  }
  std::vector<double> acc(static_cast<size_t>(n));
  for (int y = 0; y < n; ++y) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int t = 0; t < kKsize; ++t) {
      const double* r = rows.data() + static_cast<size_t>(reflect101(y + t - kRadius, n)) * n;
      const double kt = k[static_cast<size_t>(t)];
      for (int x = 0; x < n; ++x) acc[static_cast<size_t>(x)] += r[x] * kt;
    }
    std::copy(acc.begin(), acc.end(), img.begin() + static_cast<std::ptrdiff_t>(y) * n);
  }
}

}  // namespace

void parse_input(const Image& face, float* x) {
  GPEN_CHECK(face.width > 0 && face.width == face.height && face.bgr.size() == face.pixels() * 3,
             "face parsing: the face must be a square BGR image, got " + std::to_string(face.width) + "x" +
                 std::to_string(face.height));
  Image resized;
  const Image* im = &face;
  if (face.width == 2 * kN) {
    // cv2.resize turns an exact 2:1 INTER_LINEAR downscale into INTER_AREA: the rounded 2 x 2 mean.
    resized.width = resized.height = kN;
    resized.bgr.resize(static_cast<size_t>(kN) * kN * 3);
    const size_t row = static_cast<size_t>(face.width) * 3;
    for (size_t y = 0; y < static_cast<size_t>(kN); ++y)
      for (size_t xx = 0; xx < static_cast<size_t>(kN); ++xx)
        for (size_t c = 0; c < 3; ++c) {
          const uint8_t* p = face.bgr.data() + 2 * y * row + 2 * xx * 3 + c;
          const int s = p[0] + p[3] + p[row] + p[row + 3];
          resized.bgr[(y * kN + xx) * 3 + c] = static_cast<uint8_t>((s + 2) >> 2);
        }
    im = &resized;
  } else if (face.width != kN) {
    resized = resize_bilinear(face, kN, kN);
    im = &resized;
  }
  const size_t n = static_cast<size_t>(kN) * kN;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      x[i * 3 + static_cast<size_t>(c)] =
          static_cast<float>(static_cast<double>(im->bgr[i * 3 + static_cast<size_t>(2 - c)]) / 255.0 * 2.0 - 1.0);
}

std::vector<uint8_t> face_parse(ParseNetModel& net, const Image& face) {
  std::vector<float> x(static_cast<size_t>(kN) * kN * 3);
  parse_input(face, x.data());
  std::vector<uint8_t> mask(static_cast<size_t>(kN) * kN);
  net.parse(x.data(), kN, kN, nullptr, mask.data());
  return mask;
}

std::vector<float> parse_paste_mask(const std::vector<uint8_t>& mask512, int size) {
  GPEN_CHECK(mask512.size() == static_cast<size_t>(kN) * kN,
             "face parsing: the mask must be 512 x 512, got " + std::to_string(mask512.size()) + " values");
  std::vector<double> m(mask512.size());
  for (int y = 0; y < kN; ++y)
    for (int x = 0; x < kN; ++x) {
      const bool border = y < kThres || y >= kN - kThres || x < kThres || x >= kN - kThres;
      const size_t i = static_cast<size_t>(y) * kN + static_cast<size_t>(x);
      m[i] = border ? 0.0 : mask512[i] / 255.0;
    }
  const std::vector<double> k = gaussian_kernel64(4.0);
  blur64(m, kN, k);
  blur64(m, kN, k);
  std::vector<float> f(m.size());
  for (size_t i = 0; i < m.size(); ++i) f[i] = static_cast<float>(m[i]);
  return resize_paste_mask(f, size);
}

std::vector<double> facexlib_parse_mask(const std::vector<uint8_t>& labels512) {
  GPEN_CHECK(labels512.size() == static_cast<size_t>(kN) * kN,
             "face parsing: the labels must be 512 x 512, got " + std::to_string(labels512.size()) + " values");
  // facexlib's MASK_COLORMAP: labels 0, 14, 16, 17 and 18 give 0, every other 255.
  constexpr bool kDrop[kParseClasses] = {true,  false, false, false, false, false, false, false, false, false,
                                         false, false, false, false, true,  false, true,  true,  true};
  std::vector<double> m(labels512.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = labels512[i] < kParseClasses && !kDrop[labels512[i]] ? 255.0 : 0.0;
  const std::vector<double> k = gaussian_kernel64(11.0);
  blur64(m, kN, k);
  blur64(m, kN, k);
  constexpr int kBorder = 10;
  for (int y = 0; y < kN; ++y)
    for (int x = 0; x < kN; ++x) {
      const size_t i = static_cast<size_t>(y) * kN + static_cast<size_t>(x);
      const bool border = y < kBorder || y >= kN - kBorder || x < kBorder || x >= kN - kBorder;
      m[i] = border ? 0.0 : m[i] / 255.0;
    }
  return m;
}

}  // namespace gpen
