// For tests of full disks: lowers this process's RLIMIT_FSIZE soft limit.
#pragma once

#include <signal.h>
#include <sys/resource.h>

namespace kwire_test {

// Lowers this process's RLIMIT_FSIZE soft limit to `bytes` for its lifetime,
// with SIGXFSZ ignored so writes past it fail with EFBIG.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit rl = old_;
    rl.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &rl) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  sighandler_t old_handler_{};
  bool ok_ = false;
};

}  // namespace kwire_test
