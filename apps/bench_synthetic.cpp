#include "apps/bench_synthetic.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"

namespace gpen::cli {

namespace fs = std::filesystem;

std::string write_synthetic_gpw(const std::string& tag, const std::function<void(const std::string&)>& convert_to) {
  const std::string path =
      (fs::temp_directory_path() / ("gpen_bench_" + tag + "_" + std::to_string(getpid()) + ".gpw")).string();
  int fds[2];
  GPEN_CHECK(pipe(fds) == 0, "gpen bench: cannot create a pipe");
  const pid_t pid = fork();
  GPEN_CHECK(pid >= 0, "gpen bench: cannot fork to write the synthetic weights");
  if (pid == 0) {
    close(fds[0]);
    try {
      convert_to(path);
      _exit(0);
    } catch (const std::exception& e) {
      const ssize_t w = write(fds[1], e.what(), std::strlen(e.what()));
      (void)w;
      _exit(1);
    }
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::error_code ec;
    fs::remove(path, ec);
    throw Error("synthetic weights for " + path + ": " + (msg.empty() ? "the conversion failed" : msg));
  }
  return path;
}

namespace {

void check_nchw(const npy::Array& a, int N, int S, const std::string& what) {
  GPEN_CHECK(a.shape == std::vector<int64_t>({N, 3, S, S}),
             what + ": expected shape (" + std::to_string(N) + ", 3, " + std::to_string(S) + ", " +
                 std::to_string(S) + ")");
}

}  // namespace

std::pair<double, double> nchw_vs_nhwc(const npy::Array& a, const std::vector<float>& nhwc, int N, int S,
                                       const std::string& what) {
  check_nchw(a, N, S, what);
  const std::vector<float> v = a.to_f32();
  double mx = 0, sum = 0;
  const size_t plane = static_cast<size_t>(S) * S;
  for (size_t b = 0; b < static_cast<size_t>(N); ++b)
    for (size_t ch = 0; ch < 3; ++ch)
      for (size_t p = 0; p < plane; ++p) {
        const double d = std::fabs(double(v[(b * 3 + ch) * plane + p]) - nhwc[(b * plane + p) * 3 + ch]);
        mx = std::isnan(d) ? INFINITY : std::max(mx, d);
        sum += d;
      }
  return {mx, sum / static_cast<double>(v.size())};
}

std::vector<float> nchw_to_nhwc(const npy::Array& a, int N, int S, const std::string& what) {
  check_nchw(a, N, S, what);
  const std::vector<float> v = a.to_f32();
  std::vector<float> out(v.size());
  const size_t plane = static_cast<size_t>(S) * S;
  for (size_t b = 0; b < static_cast<size_t>(N); ++b)
    for (size_t ch = 0; ch < 3; ++ch)
      for (size_t p = 0; p < plane; ++p) out[(b * plane + p) * 3 + ch] = v[(b * 3 + ch) * plane + p];
  return out;
}

}  // namespace gpen::cli
