#pragma once
// Memory sizes in words: "12.3 MiB" for people (JSON always carries exact bytes), and the sizes
// people write ("300MB", "2GiB") as bytes, for memory budgets given on a command line or in Python.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace gpen {

inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

// "300MB", "8GiB", "1.5G", "123456" -> bytes. Decimal (kB, MB, GB) and binary (KiB, MiB, GiB; K, M,
// G alone are binary) units.
inline size_t parse_bytes(std::string_view s) {
  std::string t(s);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  GPEN_CHECK(i > 0, "'" + t + "' is not a memory size (e.g. 300MB, 8GiB)");
  double v = std::stod(t.substr(0, i));
  std::string u = t.substr(i);
  for (auto& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double m;
  if (u.empty() || u == "b") m = 1;
  else if (u == "kb") m = 1e3;
  else if (u == "mb") m = 1e6;
  else if (u == "gb") m = 1e9;
  else if (u == "k" || u == "kib") m = 1024.0;
  else if (u == "m" || u == "mib") m = 1024.0 * 1024;
  else if (u == "g" || u == "gib") m = 1024.0 * 1024 * 1024;
  else throw Error("'" + t + "': unknown unit '" + u + "' (use B, kB, MB, GB, KiB, MiB, GiB)");
  GPEN_CHECK(v > 0 && std::isfinite(v), "'" + t + "' is not a positive memory size");
  return static_cast<size_t>(v * m);
}

}  // namespace gpen
