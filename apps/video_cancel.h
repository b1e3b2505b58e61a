#pragma once
// Ctrl-C and SIGTERM for `gpen video`: the first one sets the cancel flag that every stage of the
// pipeline polls; a run that has not stopped within the grace period (a processing step in the
// middle of a long batch) is ended by a watchdog thread, which first removes the output being
// written under its temporary name. Either way no partial output is left, and the exit status is
// 128 + the signal's number.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace gpen::cli {

class SignalCancel {
 public:
  explicit SignalCancel(double grace_s = 0.8);  // installs the handlers for the object's lifetime
  ~SignalCancel();
  SignalCancel(const SignalCancel&) = delete;
  SignalCancel& operator=(const SignalCancel&) = delete;

  const std::atomic<bool>* flag() const;
  int signal() const;  // the signal received (0: none)
  // The file to remove should the watchdog have to end the process (empty: none).
  void guard(const std::string& path);

 private:
  void watch();
  double grace_s_;
  std::mutex mutex_;
  std::string guarded_;
  std::thread watchdog_;
};

}  // namespace gpen::cli
