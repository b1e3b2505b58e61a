#pragma once
// Helpers of the `gpen fetch` tests: starts tests/fetch_server.py on 127.0.0.1 (a free port it
// picks itself) over a folder, reads back the requests it logged, stops it; runs the CLI.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fetch_test {

namespace fs = std::filesystem;

inline const std::string kPython = "/usr/bin/python3";
inline const std::string kGpen = GPEN_BINARY_DIR "/gpen";

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Every regular file under dir, relative names; empty when dir does not exist.
inline std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> s;
  if (!fs::exists(dir)) return s;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) s.insert(fs::relative(e.path(), dir).string());
  return s;
}

// Exit status of a shell command whose output goes to `log` (read back into *text). A sanitizer
// report fails the test even where a failure is expected.
inline int run(const std::string& cmd, const fs::path& log, std::string* text) {
  const int st = std::system((cmd + " >" + log.string() + " 2>&1").c_str());
  *text = read_file(log);
  CHECK_MESSAGE(text->find("Sanitizer") == std::string::npos, *text);
  CHECK_MESSAGE(text->find("runtime error:") == std::string::npos, *text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Request {
  std::string path, range;  // range "" when the request had none
};

class Server {
 public:
  // Serves `root`; false (and a message) when Python is missing or the server does not come up.
  bool start(const fs::path& root, const fs::path& work) {
    log_ = work / "server.log";
    const fs::path portfile = work / "server.port";
    fs::remove(portfile);
    if (!fs::exists(kPython)) {
      MESSAGE("skipped: " << kPython << " is missing");
      return false;
    }
    const std::string script = GPEN_SOURCE_DIR "/tests/fetch_server.py";
    pid_ = fork();
    if (pid_ == 0) {
      execl(kPython.c_str(), "python3", script.c_str(), root.c_str(), portfile.c_str(), log_.c_str(), (char*)nullptr);
      _exit(127);
    }
    for (int i = 0; i < 500 && !fs::exists(portfile); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!fs::exists(portfile)) {
      MESSAGE("skipped: the test server did not start");
      return false;
    }
    port_ = std::stoi(read_file(portfile));
    return true;
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  // http://127.0.0.1:PORT/MODE/SUB: the --base-url of the files in root/SUB served in MODE.
  std::string url(const std::string& mode_and_sub) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + mode_and_sub;
  }
  std::vector<Request> requests() const {
    std::vector<Request> r;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      r.push_back({j["path"].get<std::string>(), j["range"].is_null() ? "" : j["range"].get<std::string>()});
    }
    return r;
  }
  void clear_log() const { fs::remove(log_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  fs::path log_;
};

}  // namespace fetch_test
