// A fixed set of threads that run one piece of work per slot, with the
// calling thread taking slot 0: the JSON Lines sink formats the rows of a
// write on several cores with it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kwire::source::detail {

class WorkerThreads {
 public:
  /// `threads` slots in all: the caller's and threads - 1 threads started
  /// here (none for 0 or 1).
  explicit WorkerThreads(unsigned threads);
  ~WorkerThreads();
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  unsigned size() const noexcept { return size_; }

  /// Runs work(slot) for every slot, slot 0 on the calling thread, and
  /// returns when all have returned. The exception of the lowest slot that
  /// threw is rethrown (after all slots are done). Not reentrant.
  void run(const std::function<void(unsigned slot)>& work);

 private:
  void loop(unsigned slot);

  unsigned size_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(unsigned)>* work_ = nullptr;
  std::uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace kwire::source::detail
