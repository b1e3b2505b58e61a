#include "reports/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/bytes.h"
#include "engine/core/error.h"

namespace gpen::report {

namespace {
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr double kW = 760, kH = 440, kL = 90, kR = 170, kT = 40, kB = 50;

std::string esc(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return r;
}
}  // namespace

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::vector<Series>& series) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, std::log2(s.x[i]));
      x1 = std::max(x1, std::log2(s.x[i]));
      y0 = std::min(y0, std::log10(std::max(1.0, s.y[i])));
      y1 = std::max(y1, std::log10(std::max(1.0, s.y[i])));
    }
  if (x1 <= x0) x1 = x0 + 1;
  y0 = std::floor(y0);
  y1 = std::ceil(y1);
  if (y1 <= y0) y1 = y0 + 1;
  auto px = [&](double x) { return kL + (std::log2(x) - x0) / (x1 - x0) * (kW - kL - kR); };
  auto py = [&](double y) { return kH - kB - (std::log10(std::max(1.0, y)) - y0) / (y1 - y0) * (kH - kT - kB); };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << kH
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << kW / 2 << "' y='22' text-anchor='middle' font-size='15'>" << esc(title) << "</text>\n";
  for (double e = y0; e <= y1; e += 1) {
    double y = py(std::pow(10.0, e));
    o << "<line x1='" << kL << "' x2='" << kW - kR << "' y1='" << y << "' y2='" << y << "' stroke='#ddd'/>\n";
    o << "<text x='" << kL - 6 << "' y='" << y + 4 << "' text-anchor='end'>" << human_bytes(std::pow(10.0, e))
      << "</text>\n";
  }
  for (double e = x0; e <= x1 + 1e-9; e += 1) {
    double x = px(std::pow(2.0, e));
    o << "<line x1='" << x << "' x2='" << x << "' y1='" << kT << "' y2='" << kH - kB << "' stroke='#eee'/>\n";
    o << "<text x='" << x << "' y='" << kH - kB + 16 << "' text-anchor='middle'>" << std::lround(std::pow(2.0, e))
      << "</text>\n";
  }
  o << "<text x='" << (kL + kW - kR) / 2 << "' y='" << kH - 12 << "' text-anchor='middle'>" << esc(x_label)
    << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* col = kColors[k % 8];
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='2' points='";
    for (size_t i = 0; i < s.x.size(); ++i) o << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "'/>\n";
    for (size_t i = 0; i < s.x.size(); ++i)
      o << "<circle cx='" << px(s.x[i]) << "' cy='" << py(s.y[i]) << "' r='3' fill='" << col << "'/>\n";
    double ly = kT + 10 + 18 * static_cast<double>(k);
    o << "<line x1='" << kW - kR + 12 << "' x2='" << kW - kR + 32 << "' y1='" << ly << "' y2='" << ly << "' stroke='"
      << col << "' stroke-width='2'/><text x='" << kW - kR + 38 << "' y='" << ly + 4 << "'>" << esc(s.name)
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string svg_lifetimes(const std::string& title, const MemoryPlan& plan) {
  int steps = 1;
  for (const auto& b : plan.buffers) steps = std::max(steps, b.last + 1);
  double arena = std::max<double>(1.0, static_cast<double>(plan.arena_bytes));
  auto px = [&](double s) { return kL + s / steps * (kW - kL - 40); };
  auto py = [&](double bytes) { return kH - kB - bytes / arena * (kH - kT - kB); };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << kH
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << kW / 2 << "' y='22' text-anchor='middle' font-size='15'>" << esc(title) << "</text>\n";
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& b = plan.buffers[i];
    double off = static_cast<double>(plan.buffer_offset[i]);
    double x = px(b.first), w = std::max(1.0, px(b.last + 1) - x);
    double y = py(off + static_cast<double>(b.size)), h = std::max(0.5, py(off) - y);
    o << "<rect x='" << x << "' y='" << y << "' width='" << w << "' height='" << h << "' fill='" << kColors[i % 8]
      << "' fill-opacity='0.75' stroke='#333' stroke-width='0.3'/>\n";
  }
  for (int k = 0; k <= 4; ++k) {
    double bytes = arena * k / 4;
    o << "<text x='" << kL - 6 << "' y='" << py(bytes) + 4 << "' text-anchor='end'>" << human_bytes(bytes) << "</text>\n";
  }
  o << "<line x1='" << kL << "' x2='" << kW - 40 << "' y1='" << py(static_cast<double>(plan.lower_bound_bytes))
    << "' y2='" << py(static_cast<double>(plan.lower_bound_bytes))
    << "' stroke='black' stroke-dasharray='4,3'/><text x='" << kW - 40 << "' y='"
    << py(static_cast<double>(plan.lower_bound_bytes)) - 4 << "' text-anchor='end'>lower bound</text>\n";
  o << "<text x='" << (kL + kW - 40) / 2 << "' y='" << kH - 12
    << "' text-anchor='middle'>execution step (bars: tensor lifetimes at their arena offsets)</text>\n";
  o << "</svg>\n";
  return o.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    GPEN_CHECK(f.good(), path + ": cannot write");
    f << text;
    GPEN_CHECK(f.good(), path + ": write failed");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace gpen::report
