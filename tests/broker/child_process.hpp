// A kwire CLI child process for tests that kill it (SIGKILL at chosen
// moments), with its stderr collected in a file.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace kwire_test {

// A child process running kwire, optionally with RLIMIT_FSIZE (SIGXFSZ
// ignored, so writes past it fail with EFBIG). Its stderr goes through a pipe
// (not limited) and is appended to a file by this process.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::filesystem::path& stderr_path,
        std::optional<rlim_t> fsize = std::nullopt) {
    std::vector<std::string> full = {kwire_bin()};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(fds[1], 2);
      if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
      }
      if (fsize) {
        ::signal(SIGXFSZ, SIG_IGN);
        rlimit rl{*fsize, *fsize};
        ::setrlimit(RLIMIT_FSIZE, &rl);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    reader_ = std::thread([fd = fds[0], path = stderr_path] {
      std::ofstream out(path, std::ios::app | std::ios::binary);
      char buf[4096];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.write(buf, n);
        out.flush();
      }
      ::close(fd);
    });
  }
  ~Child() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    if (reader_.joinable()) reader_.join();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool valid() const { return pid_ > 0; }
  /// Exit status if it has ended (128+N when killed by signal N).
  std::optional<int> poll() {
    if (status_) return status_;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) reaped(st);
    return status_;
  }
  /// Waits up to `timeout`; on timeout kills it and returns 124.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!poll()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill_now(SIGKILL);
        return 124;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return *status_;
  }
  /// Sends `sig` and reaps the process.
  int kill_now(int sig) {
    if (!status_) {
      ::kill(pid_, sig);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      reaped(st);
    }
    return *status_;
  }

 private:
  // The child is gone: its stderr ends, and the file is complete once the
  // reader is done.
  void reaped(int st) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (reader_.joinable()) reader_.join();
  }
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::thread reader_;
};

}  // namespace kwire_test
