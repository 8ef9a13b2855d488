#include "worker_threads.hpp"

namespace kwire::source::detail {

WorkerThreads::WorkerThreads(unsigned threads) : size_(threads == 0 ? 1 : threads), errors_(size_) {
  threads_.reserve(size_ - 1);
  for (unsigned slot = 1; slot < size_; ++slot) threads_.emplace_back([this, slot] { loop(slot); });
}

WorkerThreads::~WorkerThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerThreads::loop(unsigned slot) {
  std::uint64_t seen = 0;
  while (true) {
    const std::function<void(unsigned)>* work = nullptr;
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      work = work_;
    }
    std::exception_ptr error;
    try {
      (*work)(slot);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    errors_[slot] = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

void WorkerThreads::run(const std::function<void(unsigned slot)>& work) {
  if (size_ > 1) {
    std::lock_guard lock(mu_);
    work_ = &work;
    pending_ = size_ - 1;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr first;
  try {
    work(0);
  } catch (...) {
    first = std::current_exception();
  }
  if (size_ > 1) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    work_ = nullptr;
    for (unsigned slot = 1; slot < size_ && !first; ++slot) first = errors_[slot];
    for (auto& e : errors_) e = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace kwire::source::detail
