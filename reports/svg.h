#pragma once
// Minimal SVG charts for `gpen plan --plot`: people who would rather look than read.
#include <string>
#include <vector>

#include "engine/plan/memory_plan.h"

namespace gpen::report {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

// Line chart with log2 x axis (resolutions) and log10 y axis (bytes).
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::vector<Series>& series);

// Every arena buffer as a bar over the steps it lives (x) at its offset (y).
std::string svg_lifetimes(const std::string& title, const MemoryPlan& plan);

void write_text_file(const std::string& path, const std::string& text);  // atomically

}  // namespace gpen::report
