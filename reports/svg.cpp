#include "reports/svg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/bytes.h"
#include "engine/core/error.h"

namespace gpen::report {

namespace {
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr double kFont = 12, kTitleFont = 15;
constexpr double kPlotW = 520, kPlotH = 350, kT = 40, kB = 50, kPad = 12;
const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};

std::string esc(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return r;
}

// A generous estimate of a label's width in a sans-serif font (DejaVu Sans, librsvg's default on
// Debian, is among the wide ones), so every label fits the canvas it is laid out on.
double text_width(const std::string& s, double size) {
  double em = 0;
  for (unsigned char c : s) {
    if (c >= 0x80) {
      if ((c & 0xC0) != 0x80) em += 0.8;  // one UTF-8 character
    } else if (std::strchr("il.,:;'|!()[] jft", c)) {
      em += 0.42;
    } else if (std::isupper(c) || c == 'm' || c == 'w' || c == '%' || c == '@') {
      em += 0.82;
    } else {
      em += 0.64;
    }
  }
  return em * size;
}

// 2^e bytes as a whole number of the largest binary unit it reaches: "512 KiB", "4 MiB".
std::string pow2_bytes(int e) {
  int u = std::clamp(e / 10, 0, 4);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld %s", 1LL << (e - 10 * u), kUnits[u]);
  return buf;
}

// Linear byte ticks: a step of 1, 2 or 5 x 10^d in the largest binary unit the top reaches, so
// every label is a round number of that unit ("0", "0.5 MiB", "1 MiB"; "5 MiB", "10 MiB").
// Returns {unit bytes, step in units}.
std::pair<double, double> linear_byte_step(double top) {
  int u = 0;
  while (u < 4 && top >= std::pow(1024.0, u + 1)) ++u;
  const double unit = std::pow(1024.0, u), range = top / unit;
  const double raw = range / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  return {unit, u == 0 ? std::max(1.0, step) : step};
}

void svg_open(std::ostringstream& o, double w, double h, const std::string& title) {
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
    << "' font-family='sans-serif' font-size='" << kFont << "'>\n<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text class='title' x='" << w / 2 << "' y='22' text-anchor='middle' font-size='" << kTitleFont << "'>"
    << esc(title) << "</text>\n";
}
}  // namespace

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::vector<Series>& series) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, std::log2(s.x[i]));
      x1 = std::max(x1, std::log2(s.x[i]));
      y0 = std::min(y0, std::log2(std::max(1.0, s.y[i])));
      y1 = std::max(y1, std::log2(std::max(1.0, s.y[i])));
    }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // no points: an empty frame
  x0 = std::floor(x0 + 1e-9);
  x1 = std::ceil(x1 - 1e-9);
  if (x1 <= x0) x1 = x0 + 1;
  // y ticks at 2^(k * step) bytes, step 1, 2, 5 or 10 binary orders, at most 8 intervals, so the
  // labels are whole numbers of KiB, MiB, GiB that line up with 1 KiB, 1 MiB, 1 GiB.
  int e0 = static_cast<int>(std::floor(y0 + 1e-9)), e1 = static_cast<int>(std::ceil(y1 - 1e-9));
  int step = 10;
  for (int s : {1, 2, 5, 10})
    if ((e1 - e0 + s - 1) / s <= 8) {
      step = s;
      break;
    }
  e0 = e0 / step * step;
  e1 = (e1 + step - 1) / step * step;
  if (e1 <= e0) e1 = e0 + step;

  double left = 0, legend = 0;
  for (int e = e0; e <= e1; e += step) left = std::max(left, text_width(pow2_bytes(e), kFont));
  for (const auto& s : series) legend = std::max(legend, text_width(s.name, kFont));
  const double kL = left + 2 * kPad, legend_x = kL + kPlotW + kPad;
  const double w = std::max(legend_x + 26 + legend + kPad, text_width(title, kTitleFont) + 2 * kPad);
  const double h = kT + kPlotH + kB;
  auto px = [&](double x) { return kL + (std::log2(x) - x0) / (x1 - x0) * kPlotW; };
  auto py = [&](double y) { return kT + kPlotH - (std::log2(std::max(1.0, y)) - e0) / (e1 - e0) * kPlotH; };

  std::ostringstream o;
  svg_open(o, w, h, title);
  for (int e = e0; e <= e1; e += step) {
    const double y = py(std::ldexp(1.0, e));
    o << "<line x1='" << kL << "' x2='" << kL + kPlotW << "' y1='" << y << "' y2='" << y << "' stroke='#ddd'/>\n";
    o << "<text class='ytick' x='" << kL - kPad / 2 << "' y='" << y + 4 << "' text-anchor='end'>" << pow2_bytes(e)
      << "</text>\n";
  }
  for (double e = x0; e <= x1 + 1e-9; e += 1) {
    const double x = px(std::pow(2.0, e));
    o << "<line x1='" << x << "' x2='" << x << "' y1='" << kT << "' y2='" << kT + kPlotH << "' stroke='#eee'/>\n";
    o << "<text class='xtick' x='" << x << "' y='" << kT + kPlotH + 16 << "' text-anchor='middle'>"
      << std::lround(std::pow(2.0, e)) << "</text>\n";
  }
  o << "<text class='xlabel' x='" << kL + kPlotW / 2 << "' y='" << h - 12 << "' text-anchor='middle'>" << esc(x_label)
    << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* col = kColors[k % 8];
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='2' points='";
    for (size_t i = 0; i < s.x.size(); ++i) o << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "'/>\n";
    for (size_t i = 0; i < s.x.size(); ++i)
      o << "<circle cx='" << px(s.x[i]) << "' cy='" << py(s.y[i]) << "' r='3' fill='" << col << "'/>\n";
    const double ly = kT + 10 + 18 * static_cast<double>(k);
    o << "<line x1='" << legend_x << "' x2='" << legend_x + 20 << "' y1='" << ly << "' y2='" << ly << "' stroke='"
      << col << "' stroke-width='2'/><text class='legend' x='" << legend_x + 26 << "' y='" << ly + 4 << "'>"
      << esc(s.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string svg_lifetimes(const std::string& title, const MemoryPlan& plan) {
  int steps = 1;
  for (const auto& b : plan.buffers) steps = std::max(steps, b.last + 1);
  const auto [unit, step] = linear_byte_step(std::max<double>(1.0, static_cast<double>(plan.arena_bytes)));
  const int n_ticks = static_cast<int>(std::ceil(static_cast<double>(plan.arena_bytes) / unit / step - 1e-9));
  const double top = std::max(1, n_ticks) * step * unit;
  const int u = static_cast<int>(std::lround(std::log2(unit) / 10));
  auto label = [&](int k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, k == 0 ? "0" : "%g %s", k * step, kUnits[u]);
    return std::string(buf);
  };
  double left = 0;
  for (int k = 0; k <= std::max(1, n_ticks); ++k) left = std::max(left, text_width(label(k), kFont));
  const std::string x_label = "execution step (bars: tensor lifetimes at their arena offsets)";
  const double kL = left + 2 * kPad;
  const double w = std::max({kL + kPlotW + kPad, text_width(title, kTitleFont) + 2 * kPad,
                             kL + text_width(x_label, kFont) + kPad});
  const double h = kT + kPlotH + kB;
  auto px = [&](double s) { return kL + s / steps * kPlotW; };
  auto py = [&](double bytes) { return kT + kPlotH - bytes / top * kPlotH; };
  std::ostringstream o;
  svg_open(o, w, h, title);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& b = plan.buffers[i];
    double off = static_cast<double>(plan.buffer_offset[i]);
    double x = px(b.first), bw = std::max(1.0, px(b.last + 1) - x);
    double y = py(off + static_cast<double>(b.size)), bh = std::max(0.5, py(off) - y);
    o << "<rect x='" << x << "' y='" << y << "' width='" << bw << "' height='" << bh << "' fill='" << kColors[i % 8]
      << "' fill-opacity='0.75' stroke='#333' stroke-width='0.3'/>\n";
  }
  for (int k = 0; k <= std::max(1, n_ticks); ++k) {
    const double y = py(k * step * unit);
    o << "<line x1='" << kL - 3 << "' x2='" << kL << "' y1='" << y << "' y2='" << y << "' stroke='#333'/>\n";
    o << "<text class='ytick' x='" << kL - kPad / 2 << "' y='" << y + 4 << "' text-anchor='end'>" << label(k)
      << "</text>\n";
  }
  const double lb = py(static_cast<double>(plan.lower_bound_bytes));
  o << "<line x1='" << kL << "' x2='" << kL + kPlotW << "' y1='" << lb << "' y2='" << lb
    << "' stroke='black' stroke-dasharray='4,3'/><text class='note' x='" << kL + kPlotW << "' y='" << lb - 4
    << "' text-anchor='end'>lower bound</text>\n";
  o << "<text class='xlabel' x='" << kL << "' y='" << h - 12 << "'>" << esc(x_label) << "</text>\n";
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
