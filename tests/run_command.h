#pragma once
// Runs a shell command for a test: its exit status, and its stdout with stderr folded in.
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpen_test {

inline int run(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int st = pclose(p);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace gpen_test
