#include "worker_threads.hpp"

#include <algorithm>

#include "kwire/checkpoint/checkpoint.hpp"

namespace kwire::source::detail {

ChunkFormatter::ChunkFormatter(unsigned threads, Format format, Hand hand)
    : format_(std::move(format)), hand_(std::move(hand)) {
  const unsigned n = threads == 0 ? 1 : threads;
  ready_.resize(2 * n);
  done_.resize(2 * n);
  threads_.reserve(n);
  for (unsigned slot = 0; slot < n; ++slot) threads_.emplace_back([this, slot] { loop(slot); });
}

ChunkFormatter::~ChunkFormatter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    failed_ = true;  // nothing more is handed over
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ChunkFormatter::loop(unsigned slot) {
  const std::uint64_t window = ready_.size();
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || (!failed_ && next_ < queued_ && next_ < handed_ + window); });
    if (stop_) return;
    const std::uint64_t i = next_++;
    // Its write is still queued: a write goes once all its chunks are handed over.
    auto w = writes_.begin();
    while (i >= w->first + w->chunks) ++w;
    const std::size_t from = static_cast<std::size_t>(i - w->first) * w->per_chunk;
    const auto rows = w->rows.subspan(from, std::min(w->per_chunk, w->rows.size() - from));
    std::string& out = ready_[i % window];  // chunk i - window was handed over
    ++busy_;
    lock.unlock();
    out.clear();
    std::int64_t kept = 0;
    std::exception_ptr error;
    try {
      kept = format_(slot, rows, out);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    --busy_;
    if (error) {
      fail(error);
      continue;
    }
    if (failed_) idle_.notify_all();  // reset() may wait for this chunk
    kept_ += kept;
    done_[i % window] = 1;
    const std::uint64_t handed = handed_, writes_done = writes_done_;
    hand_over(lock);
    // Formatters wait for the window to move, the caller for its write.
    if (handed_ != handed) work_.notify_all();
    if (writes_done_ != writes_done) idle_.notify_all();
  }
}

// Hands the formatted chunks that are next in row order over, one thread at
// a time, with the lock released while Hand runs (chunk handed_ keeps its
// buffer: no thread formats chunk handed_ + window before it is handed over).
void ChunkFormatter::hand_over(std::unique_lock<std::mutex>& lock) {
  const std::uint64_t window = ready_.size();
  while (!handing_ && !failed_ && handed_ < next_ && done_[handed_ % window]) {
    handing_ = true;
    std::string& lines = ready_[handed_ % window];
    lock.unlock();
    std::exception_ptr error;
    try {
      if (!lines.empty()) hand_(lines);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    handing_ = false;
    if (error) {
      fail(error);
      return;
    }
    if (failed_) idle_.notify_all();  // reset() may wait for this hand-over
    done_[handed_ % window] = 0;
    ++handed_;
    while (!writes_.empty() && handed_ >= writes_.front().first + writes_.front().chunks) {
      writes_.pop_front();
      ++writes_done_;
    }
  }
}

void ChunkFormatter::fail(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  failed_ = true;
  idle_.notify_all();
}

void ChunkFormatter::clear() {
  writes_.clear();
  queued_ = next_ = handed_ = 0;
  writes_queued_ = writes_done_ = 0;
  for (std::string& lines : ready_) lines.clear();
  std::fill(done_.begin(), done_.end(), 0);
}

// Called with failed_ set: once no thread formats or hands over, drops what
// waits and rethrows the first error, once.
void ChunkFormatter::rethrow_failure(std::unique_lock<std::mutex>& lock) {
  idle_.wait(lock, [&] { return quiet(); });
  clear();
  failed_ = false;
  auto error = std::exchange(error_, nullptr);
  if (error) std::rethrow_exception(error);
}

void ChunkFormatter::write(std::span<const Row> rows, std::size_t per_chunk) {
  std::unique_lock lock(mu_);
  if (failed_) rethrow_failure(lock);
  if (!rows.empty()) {
    per_chunk = std::max<std::size_t>(per_chunk, 1);
    const std::uint64_t chunks = (rows.size() + per_chunk - 1) / per_chunk;
    writes_.push_back(Write{rows, per_chunk, queued_, chunks});
    queued_ += chunks;
    ++writes_queued_;
    work_.notify_all();
  }
  // Returns once at most kWritesAhead writes (this one included) are left.
  const std::uint64_t ahead = rows.empty() ? kWritesAhead - 1 : kWritesAhead;
  const std::uint64_t earlier = writes_queued_ > ahead ? writes_queued_ - ahead : 0;
  idle_.wait(lock, [&] { return failed_ || writes_done_ >= earlier; });
  if (failed_) rethrow_failure(lock);
}

void ChunkFormatter::wait() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return failed_ || writes_done_ == writes_queued_; });
  if (failed_) rethrow_failure(lock);
}

void ChunkFormatter::settle() noexcept {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return (failed_ && quiet()) || writes_done_ == writes_queued_; });
}

void ChunkFormatter::reset() noexcept {
  std::unique_lock lock(mu_);
  failed_ = true;  // no chunk is started or handed over from here on
  idle_.wait(lock, [&] { return quiet(); });
  clear();
  failed_ = false;
  error_ = nullptr;
  kept_ = 0;
}

std::int64_t ChunkFormatter::kept() const {
  std::lock_guard lock(mu_);
  return kept_;
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
