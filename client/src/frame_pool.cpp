#include "frame_pool.hpp"

#include <mutex>
#include <vector>

namespace kwire::client::detail {
namespace {

class FramePool {
 public:
  std::unique_ptr<protocol::Bytes> take(std::size_t size) {
    std::lock_guard lock(mu_);
    // The smallest free buffer that holds `size` without growing.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if ((*it)->capacity() >= size && (best == free_.end() || (*it)->capacity() < (*best)->capacity())) best = it;
    if (best == free_.end()) return nullptr;
    auto out = std::move(*best);
    free_.erase(best);
    retained_ -= out->capacity();
    return out;
  }

  void give(protocol::Bytes* b) {
    std::unique_ptr<protocol::Bytes> owned(b);
    if (owned->capacity() > kMaxPooledFrameBytes) return;
    std::lock_guard lock(mu_);
    if (free_.size() >= kMaxPooledFrames || retained_ + owned->capacity() > kMaxPooledBytes) return;
    retained_ += owned->capacity();
    free_.push_back(std::move(owned));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<protocol::Bytes>> free_;
  std::size_t retained_ = 0;  // capacity of the buffers in free_
};

// Never destroyed: frames may be released from static destructors.
FramePool& pool() {
  static auto* p = new FramePool;
  return *p;
}

}  // namespace

std::shared_ptr<protocol::Bytes> make_frame(std::size_t size) {
  auto buf = pool().take(size);
  if (!buf) {
    buf = std::make_unique<protocol::Bytes>();
    buf->reserve(size);
  }
  // A recycled buffer keeps its last size, so resize() only zero-fills the
  // part beyond it; shrinking is free.
  buf->resize(size);
  return std::shared_ptr<protocol::Bytes>(buf.release(), [](protocol::Bytes* b) { pool().give(b); });
}

std::shared_ptr<protocol::Bytes> make_empty_frame(std::size_t capacity) {
  auto buf = pool().take(capacity);
  if (!buf) buf = std::make_unique<protocol::Bytes>();
  buf->clear();
  buf->reserve(capacity);
  return std::shared_ptr<protocol::Bytes>(buf.release(), [](protocol::Bytes* b) { pool().give(b); });
}

}  // namespace kwire::client::detail
