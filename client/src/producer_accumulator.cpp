#include "producer_accumulator.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kwire/protocol/errors.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
constexpr std::size_t kBatchHeader = protocol::kRecordBatchHeaderSize;
}  // namespace

RecordAccumulator::RecordAccumulator(const ClientConfig& config, std::function<void()> wake_sender)
    : config_(config),
      wake_sender_(std::move(wake_sender)),
      batch_size_(static_cast<std::size_t>(std::max(config.batch_size, 1))),
      buffer_memory_(static_cast<std::size_t>(std::max<std::int64_t>(config.buffer_memory, 1))),
      linger_(config.linger_ms),
      delivery_timeout_(config.delivery_timeout_ms),
      max_block_(config.max_block_ms) {}

BatchPtr RecordAccumulator::open_batch(const TopicPartition& tp, std::size_t first_record,
                                       std::unique_lock<std::mutex>& lock) {
  const std::size_t reserve = std::max(batch_size_, kBatchHeader + first_record);
  if (reserve > buffer_memory_)
    throw RecordTooLargeError(tp, static_cast<std::int16_t>(ErrorCode::message_too_large), false,
                              fmt::format("a record of {} bytes for {} is larger than buffer.memory ({} bytes)",
                                          first_record, to_string(tp), buffer_memory_));
  const auto until = Clock::now() + max_block_;
  while (used_ + reserve > buffer_memory_) {
    if (closed_) throw ClientError("the producer is closed");
    if (space_cv_.wait_until(lock, until) == std::cv_status::timeout && used_ + reserve > buffer_memory_)
      throw BufferExhaustedError(fmt::format(
          "no room in buffer.memory ({} bytes) for a batch of {} within max.block.ms ({} ms): records are given "
          "faster than they can be sent",
          buffer_memory_, to_string(tp), max_block_.count()));
  }
  if (closed_) throw ClientError("the producer is closed");
  auto b = std::make_unique<ProducerBatch>();
  b->id = next_id_++;
  b->tp = tp;
  if (!spare_.empty()) {
    Spare& s = spare_.back();
    spared_ -= std::min(spared_, s.bytes());
    b->builder = std::move(s.builder);
    b->callbacks = std::move(s.callbacks);
    spare_.pop_back();
    b->builder.clear();
  }
  // The spare buffers and the batches' share buffer.memory (as Java's
  // BufferPool): spare ones are freed to make room.
  while (!spare_.empty() && used_ + spared_ + reserve > buffer_memory_) {
    spared_ -= std::min(spared_, spare_.back().bytes());
    spare_.pop_back();
  }
  b->builder.reserve(reserve);
  b->builder.checksum_while_appending(config_.compression_type == Compression::none);
  b->reserved = reserve;
  b->created = Clock::now();
  b->delivery_deadline = b->created + delivery_timeout_;
  used_ += reserve;
  incomplete_.insert(b->id);
  return b;
}

RecordAccumulator::Topic& RecordAccumulator::topic(std::string_view name) {
  std::lock_guard lock(mu_);
  auto t = topics_.find(name);
  if (t == topics_.end()) t = topics_.emplace(std::string(name), Topic{std::string(name), {}}).first;
  return t->second;
}

RecordAccumulator::Queue& RecordAccumulator::queue(Topic& topic, std::int32_t partition) {
  auto& parts = topic.partitions;
  const auto i = static_cast<std::size_t>(partition);
  if (partition >= 0 && i < parts.size() && parts[i]) return *parts[i];
  Queue& q = queues_[TopicPartition{topic.name, partition}];
  queue_count_.store(queues_.size(), std::memory_order_release);
  if (partition >= 0) {
    if (parts.size() <= i) parts.resize(i + 1, nullptr);
    parts[i] = &q;
  }
  return q;
}

void RecordAccumulator::append(Topic& topic, std::int32_t partition, std::int64_t timestamp,
                               const std::optional<ByteSpan>& key, const std::optional<ByteSpan>& value,
                               std::span<const RecordHeader> headers, SendCallback callback) {
  std::unique_lock lock(mu_);
  if (closed_) throw ClientError("the producer is closed: send() after close()");
  bool new_batch = false;
  Queue& q = queue(topic, partition);
  ProducerBatch* last = q.batches.empty() ? nullptr : q.batches.back().get();
  // The record goes into the open batch while the batch stays within the
  // bytes it reserved (batch.size), else into a new one.
  std::optional<std::int64_t> ts;
  if (last && !last->full) {
    ts = last->builder.append_within(last->reserved, timestamp, key, value, headers);
    if (!ts) last->full = true;
  }
  if (!ts) {
    const TopicPartition tp{topic.name, partition};
    const std::size_t size = RecordBatchBuilder::first_record_size(key, value, headers);
    if (kBatchHeader + size > static_cast<std::size_t>(config_.max_request_size))
      throw RecordTooLargeError(
          tp, static_cast<std::int16_t>(ErrorCode::message_too_large), false,
          fmt::format("a record of {} bytes for {} is larger than max.request.size ({} bytes): record too large",
                      kBatchHeader + size, to_string(tp), config_.max_request_size));
    auto batch = open_batch(tp, size, lock);
    // Room for the callbacks of as many records of this size as the batch holds.
    if (callback)
      batch->callbacks.reserve(std::min<std::size_t>(batch->reserved / std::max<std::size_t>(size, 1), 1 << 14));
    // open_batch may have waited (the lock released): append to the queue as it is now.
    if (!q.batches.empty()) q.batches.back()->full = true;
    q.batches.push_back(std::move(batch));
    last = q.batches.back().get();
    new_batch = true;
    ts = last->builder.append(timestamp, key, value, headers);
  }
  const std::int32_t index = last->builder.count() - 1;
  if (callback) last->callbacks.push_back({index, *ts, std::move(callback)});
  else last->silent = true;
  const bool now_full = last->builder.size() >= last->reserved;
  if (now_full) last->full = true;
  lock.unlock();
  if (new_batch || now_full) wake_sender_();
}

std::uint64_t RecordAccumulator::begin_flush() {
  std::uint64_t mark;
  {
    std::lock_guard lock(mu_);
    mark = next_id_;
    flush_mark_ = std::max(flush_mark_, mark);
  }
  wake_sender_();
  return mark;
}

bool RecordAccumulator::wait_flushed(std::uint64_t mark, Clock::time_point until) {
  std::unique_lock lock(mu_);
  auto done = [&] { return incomplete_.empty() || *incomplete_.begin() >= mark; };
  if (until == Clock::time_point::max()) {
    done_cv_.wait(lock, done);
    return true;
  }
  return done_cv_.wait_until(lock, until, done);
}

void RecordAccumulator::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  space_cv_.notify_all();
  wake_sender_();
}

bool RecordAccumulator::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

Clock::time_point RecordAccumulator::drain(Clock::time_point now,
                                           const std::function<bool(const TopicPartition&, const ProducerBatch&)>& take,
                                           std::vector<BatchPtr>& out) {
  std::lock_guard lock(mu_);
  Clock::time_point next = Clock::time_point::max();
  for (auto& [tp, q] : queues_) {
    if (q.batches.empty()) continue;
    ProducerBatch& head = *q.batches.front();
    if (head.retry_at > now) {
      next = std::min(next, head.retry_at);
      continue;
    }
    const bool ready = head.full || q.batches.size() > 1 || closed_ || head.id < flush_mark_ || head.attempts > 0 ||
                       now >= head.created + linger_;
    if (!ready) {
      next = std::min(next, head.created + linger_);
      continue;
    }
    if (!take(tp, head)) continue;
    head.full = true;
    out.push_back(std::move(q.batches.front()));
    q.batches.pop_front();
  }
  return next;
}

void RecordAccumulator::shift_sequences(const TopicPartition& tp, std::int32_t from, std::int32_t by) {
  std::lock_guard lock(mu_);
  auto it = queues_.find(tp);
  if (it == queues_.end()) return;
  for (auto& b : it->second.batches)
    if (b->sequenced() && b->base_sequence > from) b->base_sequence -= by;
}

bool RecordAccumulator::any_fate_unknown() const {
  std::lock_guard lock(mu_);
  for (auto& [tp, q] : queues_)
    for (auto& b : q.batches)
      if (b->fate_unknown) return true;
  return false;
}

std::vector<TopicPartition> RecordAccumulator::partitions() const {
  std::lock_guard lock(mu_);
  std::vector<TopicPartition> out;
  out.reserve(queues_.size());
  for (auto& [tp, q] : queues_) out.push_back(tp);
  return out;
}

bool RecordAccumulator::any_queued(std::span<const TopicPartition> tps) const {
  std::lock_guard lock(mu_);
  for (auto& tp : tps) {
    auto it = queues_.find(tp);
    if (it != queues_.end() && !it->second.batches.empty()) return true;
  }
  return false;
}

Clock::time_point RecordAccumulator::expire(Clock::time_point now, std::vector<BatchPtr>& out) {
  std::lock_guard lock(mu_);
  Clock::time_point next = Clock::time_point::max();
  for (auto& [tp, q] : queues_) {
    while (!q.batches.empty() && q.batches.front()->delivery_deadline <= now) {
      q.batches.front()->full = true;
      out.push_back(std::move(q.batches.front()));
      q.batches.pop_front();
    }
    for (auto& b : q.batches) next = std::min(next, b->delivery_deadline);
  }
  return next;
}

void RecordAccumulator::take_all(std::vector<BatchPtr>& out) {
  std::lock_guard lock(mu_);
  for (auto& [tp, q] : queues_) {
    for (auto& b : q.batches) {
      b->full = true;
      out.push_back(std::move(b));
    }
    q.batches.clear();
  }
}

void RecordAccumulator::reenqueue(BatchPtr batch) {
  std::lock_guard lock(mu_);
  auto& q = queues_[batch->tp].batches;
  queue_count_.store(queues_.size(), std::memory_order_release);
  auto pos = q.begin();
  while (pos != q.end() && (*pos)->sequenced() && (*pos)->base_sequence < batch->base_sequence) ++pos;
  q.insert(pos, std::move(batch));
}

void RecordAccumulator::release(BatchPtr batch) {
  // The callbacks (and what they hold) go before the lock is taken; their
  // vector's room is kept.
  Spare s{std::move(batch->builder), std::move(batch->callbacks)};
  s.callbacks.clear();
  {
    std::lock_guard lock(mu_);
    used_ -= std::min(used_, batch->reserved);
    incomplete_.erase(batch->id);
    // Keep the buffers for a later batch while the batches and the spare
    // buffers stay within buffer.memory.
    if (spare_.size() < 64 && used_ + spared_ + s.bytes() <= buffer_memory_) {
      spared_ += s.bytes();
      spare_.push_back(std::move(s));
    }
  }
  batch.reset();
  space_cv_.notify_all();
  done_cv_.notify_all();
}

bool RecordAccumulator::empty() const {
  std::lock_guard lock(mu_);
  for (auto& [tp, q] : queues_)
    if (!q.batches.empty()) return false;
  return true;
}

std::size_t RecordAccumulator::queued_batches() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (auto& [tp, q] : queues_) n += q.batches.size();
  return n;
}

void RecordAccumulator::reset_sequences() {
  std::lock_guard lock(mu_);
  for (auto& [tp, q] : queues_)
    for (auto& b : q.batches) b->base_sequence = -1;
}

}  // namespace kwire::client
