#pragma once
// ParseNet test material generated at test time (an 85 MB checkpoint is too big to commit): a
// random-weight checkpoint in the official ParseNet-latest layout and PyTorch cases made by
// tests/reference/parsenet_reference.py (seed 1), cached in <build>/test_parsenet_cache and
// regenerated when the script changes. Tests skip with a message where /usr/bin/python3 with
// torch is missing.
#include <doctest/doctest.h>
#include "tests/run_command.h"
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "converter/convert.h"

namespace parsenet_test {

namespace fs = std::filesystem;

inline const std::string kPython = "/usr/bin/python3";

using gpen_test::run;

inline std::string file_hash(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return std::to_string(std::hash<std::string>{}(ss.str()));
}

inline fs::path cache_dir() { return fs::path(GPEN_BINARY_DIR) / "test_parsenet_cache"; }

inline bool python_ok(std::string* why) {
  if (access(kPython.c_str(), X_OK) == 0 && run(kPython + " -c 'import torch, numpy, cv2'") == 0) return true;
  *why = kPython + " with torch, numpy and cv2 is not available to generate the ParseNet checkpoint";
  return false;
}

// The cache directory holding parsenet_seed1.pth, parsenet_seed1.gpw (converted by the current
// converter on every call) and cases/HxW/{input,logits,labels,mask}.npy for 64x64 and 48x80;
// "" with the reason in *why when it cannot be made.
inline std::string parsenet_cache(std::string* why) {
  const fs::path dir = cache_dir();
  fs::create_directories(dir);
  // Tests that share the cache may run at once (ctest -j): one makes it, the others wait.
  struct Lock {
    int fd;
    explicit Lock(const fs::path& p) : fd(open(p.c_str(), O_RDWR | O_CREAT, 0644)) {
      if (fd >= 0) flock(fd, LOCK_EX);
    }
    ~Lock() {
      if (fd >= 0) close(fd);
    }
  } lock(dir / "lock");
  const fs::path script = fs::path(GPEN_SOURCE_DIR) / "tests/reference/parsenet_reference.py";
  const std::string want = file_hash(script);
  const fs::path stamp = dir / "stamp";
  std::string have;
  {
    std::ifstream s(stamp);
    s >> have;
  }
  if (have != want || !fs::exists(dir / "parsenet_seed1.pth") || !fs::exists(dir / "cases/48x80/logits.npy")) {
    if (!python_ok(why)) return "";
    fs::create_directories(dir);
    const std::string tag = std::to_string(getpid());
    const fs::path tmp = dir / ("gen_" + tag);
    fs::create_directories(tmp);
    std::string out;
    const int rc = run(kPython + " " + script.string() + " --make-checkpoint " + (tmp / "parsenet_seed1.pth").string() +
                           " --seed 1 --case " + (tmp / "cases").string() + " --sizes 64x64,48x80",
                       &out);
    REQUIRE_MESSAGE(rc == 0, "parsenet_reference.py failed: " << out);
    fs::remove_all(dir / "cases");
    fs::rename(tmp / "cases", dir / "cases");
    fs::rename(tmp / "parsenet_seed1.pth", dir / "parsenet_seed1.pth");
    fs::remove_all(tmp);
    std::ofstream(dir / ("stamp_" + tag)) << want << "\n";
    fs::rename(dir / ("stamp_" + tag), stamp);
  }
  const fs::path gpw = dir / ("parsenet_seed1." + std::to_string(getpid()) + ".gpw");
  gpen::conv::convert((dir / "parsenet_seed1.pth").string(), gpw.string());
  fs::rename(gpw, dir / "parsenet_seed1.gpw");
  return dir.string();
}

}  // namespace parsenet_test
