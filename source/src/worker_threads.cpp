#include "worker_threads.hpp"

#include "kwire/checkpoint/checkpoint.hpp"

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

BackgroundTask::BackgroundTask() : thread_([this] { loop(); }) {}

BackgroundTask::~BackgroundTask() {
  {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !busy_; });
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundTask::loop() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || busy_; });
    if (stop_) return;
    auto work = std::move(work_);
    lock.unlock();
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    work = nullptr;  // what it holds goes before the caller is told
    lock.lock();
    busy_ = false;
    if (error && !error_) error_ = error;
    changed_.notify_all();
  }
}

void BackgroundTask::post(std::function<void()> work) {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  work_ = std::move(work);
  busy_ = true;
  changed_.notify_all();
}

void BackgroundTask::wait() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void BackgroundTask::settle() noexcept {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
}

void BackgroundTask::reset() noexcept {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
  error_ = nullptr;
}

FileAppender::FileAppender() : thread_([this] { loop(); }) {}

FileAppender::~FileAppender() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  thread_.join();
}

void FileAppender::loop() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto [file, data] = std::move(queue_.front());
    queue_.pop_front();
    const bool failed = error_ != nullptr;
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    if (!failed) {
      try {
        file->append(data);
      } catch (...) {
        error = std::current_exception();
      }
    }
    data.clear();
    lock.lock();
    busy_ = false;
    if (error && !error_) error_ = error;
    if (spare_.size() < kMaxQueued + 2) spare_.push_back(std::move(data));
    changed_.notify_all();
  }
}

void FileAppender::push(checkpoint::AtomicFileWriter& file, std::string& data) {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return queue_.size() < kMaxQueued || error_; });
  if (error_) std::rethrow_exception(error_);
  queue_.emplace_back(&file, std::move(data));
  data = std::string();
  if (!spare_.empty()) {
    data = std::move(spare_.back());
    spare_.pop_back();
  }
  changed_.notify_all();
}

void FileAppender::drain() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return (queue_.empty() && !busy_) || error_; });
  if (error_) {
    // What waits is not appended after an error.
    changed_.wait(lock, [&] { return !busy_; });
    queue_.clear();
    std::rethrow_exception(error_);
  }
}

void FileAppender::reset() {
  std::unique_lock lock(mu_);
  queue_.clear();
  changed_.wait(lock, [&] { return !busy_; });
  error_ = nullptr;
}

}  // namespace kwire::source::detail
