#pragma once
// Minimal SVG charts for `gpen plan --plot`, `--plot-bands` and `--plot-lifetimes`: people who
// would rather look than read. The canvas grows to hold every label whole (title, ticks, legend);
// byte axes have round ticks in binary units (tests/check_svg_charts.py renders and checks them).
#include <string>
#include <vector>

#include "engine/plan/memory_plan.h"

namespace gpen::report {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

// Line chart with log2 x axis (resolutions, band heights) and log2 y axis (bytes, ticks at 2^k).
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::vector<Series>& series);

// Every arena buffer as a bar over the steps it lives (x) at its offset (y), linear byte ticks.
std::string svg_lifetimes(const std::string& title, const MemoryPlan& plan);

void write_text_file(const std::string& path, const std::string& text);  // atomically

}  // namespace gpen::report
