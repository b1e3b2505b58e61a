#include "apps/video_cancel.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "engine/core/error.h"

namespace gpen::cli {
namespace {

// What the handler may touch: lock-free atomics and a pipe to the watchdog.
std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};
int g_pipe[2] = {-1, -1};
constexpr char kSignalled = 's', kQuit = 'q';

void on_signal(int sig) {
  g_signal.store(sig);
  g_cancel.store(true);
  const char c = kSignalled;
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &c, 1);
}

struct sigaction g_old_int, g_old_term;

}  // namespace

SignalCancel::SignalCancel(double grace_s) : grace_s_(grace_s) {
  GPEN_CHECK(pipe(g_pipe) == 0, "cannot create the signal pipe");
  g_cancel = false;
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  watchdog_ = std::thread([this] { watch(); });
}

SignalCancel::~SignalCancel() {
  const char c = kQuit;
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &c, 1);
  watchdog_.join();
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  close(g_pipe[0]);
  close(g_pipe[1]);
}

const std::atomic<bool>* SignalCancel::flag() const { return &g_cancel; }
int SignalCancel::signal() const { return g_signal.load(); }

void SignalCancel::guard(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  guarded_ = path;
}

void SignalCancel::watch() {
  char c = 0;
  while (read(g_pipe[0], &c, 1) == 1 && c != kQuit) {
    // Cancelled: the run has the grace period to stop by itself (its destructor removes the
    // temporary file and the command exits); past it, the process ends here.
    pollfd p{g_pipe[0], POLLIN, 0};
    const int waited = poll(&p, 1, int(grace_s_ * 1000));
    if (waited > 0 && read(g_pipe[0], &c, 1) == 1 && c == kQuit) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!guarded_.empty()) unlink(guarded_.c_str());
    std::fprintf(stderr, "\ngpen: cancelled\n");
    _exit(128 + g_signal.load());
  }
}

}  // namespace gpen::cli
