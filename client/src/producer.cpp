// The producer's caller side: configuration checks (Java's idempotence
// rules), partitioning (murmur2 for keys, sticky for the rest), send() into
// the accumulator, flush() and close(), and the transaction calls handed to
// the sender thread.
#include "kwire/client/producer.hpp"

#include <condition_variable>
#include <limits>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/protocol/errors.hpp"
#include "producer_accumulator.hpp"
#include "producer_sender.hpp"
#include "producer_state.hpp"

namespace kwire::client {

using namespace kwire::protocol;

std::int32_t murmur2(ByteSpan data) noexcept {
  // Same constants and tail handling as the Java client's Utils.murmur2.
  const std::uint32_t seed = 0x9747b28c;
  const std::uint32_t m = 0x5bd1e995;
  const int r = 24;
  const std::size_t length = data.size();
  std::uint32_t h = seed ^ static_cast<std::uint32_t>(length);
  const std::size_t length4 = length / 4;
  for (std::size_t i = 0; i < length4; ++i) {
    std::size_t i4 = i * 4;
    std::uint32_t k = std::uint32_t(data[i4]) | (std::uint32_t(data[i4 + 1]) << 8) |
                      (std::uint32_t(data[i4 + 2]) << 16) | (std::uint32_t(data[i4 + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const std::size_t tail = length & ~std::size_t{3};
  switch (length % 4) {
    case 3: h ^= std::uint32_t(data[tail + 2]) << 16; [[fallthrough]];
    case 2: h ^= std::uint32_t(data[tail + 1]) << 8; [[fallthrough]];
    case 1: h ^= std::uint32_t(data[tail]); h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<std::int32_t>(h);
}

namespace {

// Java's ProducerConfig rule: idempotence is on unless turned off; when not
// given, settings it cannot work with turn it off; when given as true, they
// are an error.
// A record may wait linger.ms and then one request.timeout.ms: as Java's
// producer, a delivery.timeout.ms below their sum is an error when given, and
// raised to the sum when it is the default.
ClientConfig checked_delivery_timeout(ClientConfig c) {
  const std::int64_t floor = std::min<std::int64_t>(static_cast<std::int64_t>(c.linger_ms) + c.request_timeout_ms,
                                                    std::numeric_limits<std::int32_t>::max());
  if (c.delivery_timeout_ms >= floor) return c;
  if (c.delivery_timeout_given)
    throw ConfigError(fmt::format(
        "delivery.timeout.ms ({} ms) should be equal to or larger than linger.ms + request.timeout.ms ({} + {} ms)",
        c.delivery_timeout_ms, c.linger_ms, c.request_timeout_ms));
  c.delivery_timeout_ms = static_cast<std::int32_t>(floor);
  return c;
}

bool decide_idempotence(const ClientConfig& c) {
  std::string conflict;
  if (c.acks != -1) conflict = fmt::format("acks={} (idempotence needs acks=all)", c.acks);
  else if (c.producer_retries == 0) conflict = "retries=0 (idempotence needs retries)";
  else if (c.max_in_flight_requests_per_connection > 5)
    conflict = fmt::format("max.in.flight.requests.per.connection={} (idempotence allows at most 5)",
                           c.max_in_flight_requests_per_connection);
  const bool wanted = c.enable_idempotence.value_or(true) || !c.transactional_id.empty();
  if (!wanted) return false;
  if (!conflict.empty()) {
    if (!c.transactional_id.empty())
      throw ConfigError("transactional.id needs the idempotent producer, which cannot be used with " + conflict);
    if (c.enable_idempotence.value_or(false))
      throw ConfigError("enable.idempotence=true cannot be used with " + conflict);
    return false;
  }
  if (!c.enable_idempotence.value_or(true) && !c.transactional_id.empty())
    throw ConfigError("transactional.id needs enable.idempotence=true");
  return true;
}

std::optional<ByteSpan> view(const std::optional<Bytes>& b) {
  return b ? std::optional<ByteSpan>(ByteSpan(*b)) : std::nullopt;
}

std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

class Producer::Impl {
 public:
  explicit Impl(ClientConfig config)
      : config_(checked_delivery_timeout(std::move(config))),
        idempotent_(decide_idempotence(config_)),
        state_(idempotent_, config_.transactional_id),
        acc_(config_, [this] { wake(); }),
        rng_(std::random_device{}()) {
    Sender::Hooks hooks;
    hooks.publish_topics = [this](const auto& topics) { publish(topics); };
    hooks.silent_error = [this](std::exception_ptr e) {
      std::lock_guard lock(err_mu_);
      if (!silent_) silent_ = std::move(e);
    };
    sender_ = std::make_unique<Sender>(config_, acc_, state_, std::move(hooks));
    sender_->start();
  }

  ~Impl() {
    try {
      close(std::chrono::milliseconds::max());
    } catch (...) {
    }
  }

  void wake() {
    if (sender_) sender_->wake();
  }

  void publish(const std::map<std::string, std::pair<std::int32_t, std::int16_t>>& topics) {
    {
      std::lock_guard lock(part_mu_);
      for (auto& [t, v] : topics) {
        auto& info = topics_[t];
        info.count = v.first;
        info.error = v.second;
        ++info.answers;
      }
    }
    part_cv_.notify_all();
  }

  struct TopicInfo;
  // The topic's entry, its partition count known (asking the sender for its
  // metadata when unknown, waiting up to max.block.ms).
  TopicInfo& partitions(std::string_view name, std::unique_lock<std::mutex>& lock) {
    auto it = topics_.find(name);
    if (it != topics_.end() && it->second.count > 0) return it->second;
    const std::string topic(name);
    const auto until = Clock::now() + std::chrono::milliseconds(config_.max_block_ms);
    int asked = 0;
    for (;;) {
      const std::uint64_t seen = topics_[topic].answers;
      lock.unlock();
      sender_->want_topic(topic);
      lock.lock();
      const bool answered = part_cv_.wait_until(lock, until, [&] { return topics_[topic].answers > seen; });
      auto& info = topics_[topic];
      if (info.count > 0) return info;
      ++asked;
      const auto code = info.error;
      if (answered && code != 0 && code != static_cast<std::int16_t>(ErrorCode::network_exception) &&
          (asked >= 2 || !is_retriable(code)))
        throw KafkaError(code, fmt::format("topic '{}' is not available: {}", topic, error_name(code)));
      if (Clock::now() >= until)
        throw TimeoutError(fmt::format("topic '{}' not present in metadata after max.block.ms ({} ms){}", topic,
                                       config_.max_block_ms,
                                       code ? fmt::format(": {}", error_name(code)) : std::string()));
    }
  }

  void send(const ProducerRecordView& r, SendCallback callback) {
    if (closed_) throw ClientError("the producer is closed: send() after close()");
    if (state_.transactional()) {
      const auto s = state_.state();
      if (s != TxnState::in_transaction) {
        state_.check(true);
        throw TransactionStateError(fmt::format(
            "send() outside a transaction (state {}): call {} first", to_string(s),
            s == TxnState::uninitialized ? "init_transactions() and begin_transaction()" : "begin_transaction()"));
      }
    } else {
      state_.check(false);
    }
    if (r.timestamp < -1)
      throw std::invalid_argument(
          fmt::format("invalid record timestamp {}: a timestamp is never negative (-1: now)", r.timestamp));
    const std::int64_t ts = r.timestamp == -1 ? wall_ms() : r.timestamp;
    std::unique_lock lock(part_mu_);
    const std::string_view topic = r.topic;
    TopicInfo& info = partitions(topic, lock);
    if (!info.queues) info.queues = &acc_.topic(topic);
    const std::int32_t count = info.count;
    std::int32_t partition;
    if (r.partition) {
      if (*r.partition < 0 || *r.partition >= count)
        throw ClientError(
            fmt::format("partition {} does not exist in topic '{}' ({} partitions)", *r.partition, topic, count));
      partition = *r.partition;
    } else if (r.key) {
      partition = static_cast<std::int32_t>((murmur2(*r.key) & 0x7fffffff) % count);
    } else {
      Sticky& sticky = info.sticky;
      if (sticky.partition < 0 || sticky.partition >= count) {
        sticky.partition = static_cast<std::int32_t>(rng_() % static_cast<std::uint32_t>(count));
        sticky.bytes = 0;
      }
      partition = sticky.partition;
      // KIP-794: move on once batch.size bytes went to the partition (the
      // record's size as the first of a batch: close enough for the count).
      sticky.bytes += RecordBatchBuilder::first_record_size(r.key, r.value, r.headers);
      if (sticky.bytes >= static_cast<std::size_t>(std::max(config_.batch_size, 1)) && count > 1) {
        sticky.partition =
            static_cast<std::int32_t>((sticky.partition + 1 + rng_() % static_cast<std::uint32_t>(count - 1)) %
                                      static_cast<std::uint32_t>(count));
        sticky.bytes = 0;
      }
    }
    RecordAccumulator::Topic* queues = info.queues;
    lock.unlock();
    acc_.append(*queues, partition, ts, r.key, r.value, r.headers, std::move(callback));
  }

  void flush() {
    const auto mark = acc_.begin_flush();
    acc_.wait_flushed(mark);
    std::exception_ptr e;
    {
      std::lock_guard lock(err_mu_);
      e = std::exchange(silent_, nullptr);
    }
    if (e) std::rethrow_exception(e);
  }

  void close(std::chrono::milliseconds timeout) {
    if (closed_) return;
    const auto deadline =
        timeout == std::chrono::milliseconds::max() ? Clock::time_point::max() : Clock::now() + timeout;
    // An unfinished transaction is aborted, as Java's close does: its records
    // never become visible, and read_committed readers are not held back
    // until transaction.timeout.ms.
    if (state_.transactional() && !state_.fatal_error()) {
      const auto s = state_.state();
      if (s == TxnState::in_transaction || s == TxnState::abortable_error || s == TxnState::committing) {
        try {
          state_.transition({s}, TxnState::aborting, "close()");
          auto t = std::make_unique<TxnTask>();
          t->kind = TxnTask::Kind::abort;
          run(std::move(t), "close()",
              std::min(deadline, Clock::now() + std::chrono::milliseconds(config_.max_block_ms)));
        } catch (const std::exception&) {
          // closing anyway: the coordinator aborts it after transaction.timeout.ms
        }
      }
    }
    if (closed_.exchange(true)) return;
    if (sender_) sender_->close(deadline);
  }

  void run(std::unique_ptr<TxnTask> task, const char* call, Clock::time_point until) {
    if (closed_) throw ClientError(fmt::format("{}: the producer is closed", call));
    task->deadline = until;
    auto f = sender_->submit(std::move(task));
    if (until != Clock::time_point::max() && f.wait_until(until) == std::future_status::timeout)
      throw TimeoutError(fmt::format("{} did not complete within max.block.ms ({} ms)", call, config_.max_block_ms));
    f.get();
  }

  void require_transactional(const char* call) const {
    if (!state_.transactional()) throw TransactionStateError(fmt::format("{} needs transactional.id to be set", call));
  }

  ClientConfig config_;
  const bool idempotent_;
  ProducerState state_;
  RecordAccumulator acc_;
  std::unique_ptr<Sender> sender_;

  struct Sticky {
    std::int32_t partition = -1;
    std::size_t bytes = 0;
  };
  struct TopicInfo {
    std::int32_t count = 0;
    std::int16_t error = 0;
    std::uint64_t answers = 0;
    Sticky sticky;                               // of the records without key and partition
    RecordAccumulator::Topic* queues = nullptr;  // the accumulator's, once known
  };
  std::mutex part_mu_;
  std::condition_variable part_cv_;
  std::map<std::string, TopicInfo, std::less<>> topics_;  // entries never removed
  std::minstd_rand rng_;

  std::mutex err_mu_;
  std::exception_ptr silent_;
  std::atomic<bool> closed_{false};
};

Producer::Producer(const std::map<std::string, std::string>& properties)
    : Producer(ClientConfig::from_properties(properties)) {}
Producer::Producer(ClientConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Producer::~Producer() = default;

void Producer::send(const ProducerRecordView& record, SendCallback callback) {
  try {
    impl_->send(record, std::move(callback));
  } catch (const TransactionStateError&) {
    throw;
  } catch (const ClientError& e) {
    // A record that could not be sent leaves the transaction incomplete: it
    // can only be aborted (Java's maybeTransitionToErrorState).
    if (impl_->state_.transactional() && impl_->state_.state() == TxnState::in_transaction)
      impl_->state_.abortable(
          std::make_exception_ptr(TransactionAbortableError(
              -1, fmt::format("a record of the transaction could not be sent: {}; call abort_transaction(), then "
                              "begin a new transaction",
                              e.what()))),
          false);
    throw;
  }
}

void Producer::send(const ProducerMessage& m, SendCallback callback) {
  ProducerRecordView v;
  v.topic = m.topic;
  v.partition = m.partition;
  v.key = view(m.key);
  v.value = view(m.value);
  v.headers = m.headers;
  v.timestamp = m.timestamp;
  send(v, std::move(callback));
}

std::future<RecordMetadata> Producer::send_future(const ProducerRecordView& record) {
  auto promise = std::make_shared<std::promise<RecordMetadata>>();
  auto f = promise->get_future();
  send(record, [promise](const RecordMetadata& md, std::exception_ptr e) {
    if (e) promise->set_exception(e);
    else promise->set_value(md);
  });
  return f;
}

std::future<RecordMetadata> Producer::send_future(const ProducerMessage& m) {
  ProducerRecordView v;
  v.topic = m.topic;
  v.partition = m.partition;
  v.key = view(m.key);
  v.value = view(m.value);
  v.headers = m.headers;
  v.timestamp = m.timestamp;
  return send_future(v);
}

void Producer::flush() { impl_->flush(); }

void Producer::close(std::chrono::milliseconds timeout) { impl_->close(timeout); }

void Producer::init_transactions() {
  impl_->require_transactional("init_transactions()");
  impl_->state_.transition({TxnState::uninitialized}, TxnState::uninitialized, "init_transactions()");
  auto t = std::make_unique<TxnTask>();
  t->kind = TxnTask::Kind::init;
  impl_->run(std::move(t), "init_transactions()",
             Clock::now() + std::chrono::milliseconds(impl_->config_.max_block_ms));
}

void Producer::begin_transaction() {
  impl_->require_transactional("begin_transaction()");
  impl_->state_.transition({TxnState::ready}, TxnState::in_transaction, "begin_transaction()");
}

void Producer::send_offsets_to_transaction(const std::map<TopicPartition, OffsetAndMetadata>& offsets,
                                           const ConsumerGroupMetadata& group) {
  impl_->require_transactional("send_offsets_to_transaction()");
  if (group.group_id.empty()) throw TransactionStateError("send_offsets_to_transaction() needs a group id");
  impl_->state_.transition({TxnState::in_transaction}, TxnState::in_transaction, "send_offsets_to_transaction()");
  for (auto& [tp, om] : offsets)
    if (om.offset < 0)
      throw std::invalid_argument(
          fmt::format("send_offsets_to_transaction(): invalid offset {} for {}-{}", om.offset, tp.topic, tp.partition));
  if (offsets.empty()) return;
  auto t = std::make_unique<TxnTask>();
  t->kind = TxnTask::Kind::send_offsets;
  t->offsets = offsets;
  t->group = group;
  impl_->run(std::move(t), "send_offsets_to_transaction()",
             Clock::now() + std::chrono::milliseconds(impl_->config_.max_block_ms));
}

void Producer::commit_transaction() {
  impl_->require_transactional("commit_transaction()");
  impl_->state_.transition({TxnState::in_transaction, TxnState::committing}, TxnState::committing,
                           "commit_transaction()");
  impl_->acc_.begin_flush();  // every batch of the transaction goes now (linger.ms ignored)
  auto t = std::make_unique<TxnTask>();
  t->kind = TxnTask::Kind::commit;
  impl_->run(std::move(t), "commit_transaction()",
             Clock::now() + std::chrono::milliseconds(impl_->config_.max_block_ms));
}

void Producer::abort_transaction() {
  impl_->require_transactional("abort_transaction()");
  impl_->state_.transition(
      {TxnState::in_transaction, TxnState::abortable_error, TxnState::aborting, TxnState::committing},
      TxnState::aborting, "abort_transaction()");
  auto t = std::make_unique<TxnTask>();
  t->kind = TxnTask::Kind::abort;
  impl_->run(std::move(t), "abort_transaction()",
             Clock::now() + std::chrono::milliseconds(impl_->config_.max_block_ms));
  // The failures of the aborted transaction's records are its own: a later
  // flush() does not report them.
  std::lock_guard lock(impl_->err_mu_);
  impl_->silent_ = nullptr;
}

ProducerStats Producer::stats() const { return impl_->sender_->stats(); }
KafkaClient::ConnectionStats Producer::connection_stats() const { return impl_->sender_->connection_stats(); }
bool Producer::idempotent() const noexcept { return impl_->idempotent_; }
bool Producer::transactions_v2() const { return impl_->state_.v2(); }
std::pair<std::int64_t, std::int16_t> Producer::producer_id_and_epoch() const {
  const auto id = impl_->state_.id();
  return {id.id, id.epoch};
}
const ClientConfig& Producer::config() const noexcept { return impl_->config_; }

}  // namespace kwire::client
