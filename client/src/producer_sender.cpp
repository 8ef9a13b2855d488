// The sender thread's loop: metadata, the idempotent producer id and its
// epoch bumps, draining ready batches into pipelined Produce requests, and
// collecting the answers (their outcomes are in producer_sender_outcome.cpp).
#include "producer_sender.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backoff.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
constexpr auto kMaxWait = std::chrono::milliseconds(1000);  // the loop looks around at least this often
}  // namespace

Sender::Sender(const ClientConfig& config, RecordAccumulator& accumulator, ProducerState& state, Hooks hooks)
    : config_(config),
      acc_(accumulator),
      state_(state),
      hooks_(std::move(hooks)),
      client_(std::make_unique<KafkaClient>(config)),
      cluster_(std::make_unique<ProducerCluster>(*client_)) {}

Sender::~Sender() {
  if (thread_.joinable()) close(Clock::now());
}

void Sender::start() {
  thread_ = std::thread([this] { run(); });
}

void Sender::close(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    close_deadline_ = std::min(close_deadline_, deadline);
  }
  acc_.close();
  wake();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Sender::wake() {
  if (wake_posted_.exchange(true, std::memory_order_acq_rel)) return;
  cluster_->wake();
}

void Sender::want_topic(const std::string& topic) {
  {
    std::lock_guard lock(mu_);
    wanted_topics_.insert(topic);
  }
  wake_posted_ = false;
  wake();
}

std::future<void> Sender::submit(std::unique_ptr<TxnTask> task) {
  auto f = task->done.get_future();
  {
    std::lock_guard lock(mu_);
    if (closing_) throw ClientError("the producer is closed");
    tasks_.push_back(std::move(task));
  }
  wake_posted_ = false;
  wake();
  return f;
}

ProducerStats Sender::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

KafkaClient::ConnectionStats Sender::connection_stats() const {
  std::lock_guard lock(mu_);
  return connection_stats_;
}

void Sender::run() {
  for (;;) {
    bool closing;
    Clock::time_point deadline;
    {
      std::lock_guard lock(mu_);
      closing = closing_;
      deadline = close_deadline_;
    }
    if (closing && Clock::now() >= deadline) {
      fail_all(std::make_exception_ptr(ClientError("the producer was closed before the record was sent")));
      break;
    }
    bool tasks_left;
    {
      std::lock_guard lock(mu_);
      tasks_left = !tasks_.empty();
    }
    if (closing && in_flight_.empty() && acc_.empty() && !tasks_left) break;
    loop_once();
  }
  // Tasks nobody will run.
  std::deque<std::unique_ptr<TxnTask>> left;
  {
    std::lock_guard lock(mu_);
    left.swap(tasks_);
  }
  for (auto& t : left) t->done.set_exception(std::make_exception_ptr(ClientError("the producer is closed")));
}

void Sender::loop_once() {
  const auto now = Clock::now();
  Clock::time_point next = now + kMaxWait;
  wake_posted_.store(false, std::memory_order_release);
  try {
    refresh_metadata(now);
    if (state_.idempotent() && !state_.transactional()) {
      ensure_producer_id(now);
      maybe_bump_epoch();
    }
    run_tasks();
    if (state_.transactional()) {
      fail_queued_if_abortable();
      add_partitions(now);
    }
    next = std::min(next, expire(now));
    if (!state_.fatal_error()) next = std::min(next, send_ready(now));
  } catch (const std::exception&) {
    // A fatal error of the producer (no id, authorization): every record fails with it.
    if (!state_.fatal_error()) state_.fatal(std::current_exception());
    fail_all(state_.fatal_error());
  }
  if (state_.fatal_error() && !acc_.empty()) {
    fail_all(state_.fatal_error());
  }
  for (auto& f : in_flight_) next = std::min(next, f.sent.deadline);
  if (metadata_due_) next = std::min(next, std::max(now, metadata_not_before_));
  {
    std::lock_guard lock(mu_);
    if (!wanted_topics_.empty() || (!tasks_.empty() && task_ready(*tasks_.front()))) next = now;
    if (closing_) next = std::min(next, close_deadline_);
    connection_stats_ = client_->connection_stats();
  }
  auto answered = [this] {
    for (auto& f : in_flight_)
      if (cluster_->ready(f.sent)) return true;
    return false;
  };
  if (!answered() && next > Clock::now()) cluster_->wait(next, answered);
  collect();
}

// ------------------------------------------------------------------ metadata

void Sender::refresh_metadata(Clock::time_point now) {
  std::set<std::string> wanted;
  {
    std::lock_guard lock(mu_);
    wanted = wanted_topics_;
  }
  bool due = !wanted.empty() && now >= metadata_not_before_;
  if (!due && metadata_due_ && now >= metadata_not_before_) due = true;
  if (!due && !topics_.empty() && now >= metadata_at_ + std::chrono::milliseconds(config_.metadata_max_age_ms))
    due = true;
  // A queued partition whose leader is unknown. The accumulator (and its
  // lock, which send() takes for every record) is asked only about the
  // partitions without a known leader, usually none.
  if (!due && now >= metadata_not_before_) {
    if (acc_.partition_count() != acc_partitions_.size()) acc_partitions_ = acc_.partitions();
    std::vector<TopicPartition> leaderless;
    for (auto& tp : acc_partitions_)
      if (cluster_->leader(tp).node < 0) leaderless.push_back(tp);
    if (!leaderless.empty() && acc_.any_queued(leaderless)) due = true;
  }
  if (!due) return;
  for (auto& t : wanted) topics_.insert(t);
  if (topics_.empty()) return;
  std::map<std::string, std::pair<std::int32_t, std::int16_t>> published;
  try {
    client_->metadata(std::vector<std::string>(topics_.begin(), topics_.end()));
    metadata_failures_ = 0;
    metadata_due_ = false;
    metadata_at_ = now;
    metadata_not_before_ = now + retry_backoff(config_, 0);
    for (auto& t : topics_) {
      std::int16_t error = 0;
      const std::int32_t n = cluster_->partition_count(t, &error);
      published[t] = {n, error};
    }
  } catch (const ClientError& e) {
    metadata_not_before_ = now + retry_backoff(config_, metadata_failures_++);
    metadata_due_ = true;
    for (auto& t : wanted) published[t] = {0, static_cast<std::int16_t>(ErrorCode::network_exception)};
  }
  {
    std::lock_guard lock(mu_);
    for (auto& t : wanted) wanted_topics_.erase(t);
  }
  hooks_.publish_topics(published);
}

// --------------------------------------------------------------- idempotence

// The idempotent producer's id: InitProducerId without a transactional id,
// to any broker; retried with back-off while the cluster cannot answer.
void Sender::ensure_producer_id(Clock::time_point now) {
  if (state_.has_id() || now < init_not_before_) return;
  if (acc_.empty() && in_flight_.empty()) {
    // Nothing to send yet: ask once a record is given (a producer that never
    // sends makes no request).
    return;
  }
  std::int16_t code = 0;
  InitProducerIdResponse r;
  try {
    auto& conn = client_->any_connection();
    InitProducerIdRequest req;
    req.transaction_timeout_ms = config_.transaction_timeout_ms;
    r = conn.request<InitProducerIdResponse>(req, client_->default_deadline()).body;
    code = r.error_code;
  } catch (const UnsupportedVersionError& e) {
    throw ProducerFatalError(static_cast<std::int16_t>(ErrorCode::unsupported_version),
                             fmt::format("the cluster does not support the idempotent producer (InitProducerId): {}; "
                                         "set enable.idempotence=false",
                                         e.what()));
  } catch (const ConnectionError&) {
    code = static_cast<std::int16_t>(ErrorCode::network_exception);
  } catch (const TimeoutError&) {
    code = static_cast<std::int16_t>(ErrorCode::request_timed_out);
  }
  if (code == 0) {
    state_.set_id({r.producer_id, r.producer_epoch});
    init_failures_ = 0;
    return;
  }
  if (code == static_cast<std::int16_t>(ErrorCode::cluster_authorization_failed))
    throw IdempotenceDeniedError(
        code,
        "the cluster denied InitProducerId (CLUSTER_AUTHORIZATION_FAILED): the principal may not write "
        "idempotently (ACL operation IDEMPOTENT_WRITE on the cluster). Grant it, or set "
        "enable.idempotence=false to produce without idempotence");
  if (!is_retriable(code) && code != static_cast<std::int16_t>(ErrorCode::coordinator_not_available) &&
      code != static_cast<std::int16_t>(ErrorCode::not_coordinator))
    throw ProducerFatalError(code, fmt::format("InitProducerId failed: {}", error_name(code)));
  init_not_before_ = now + retry_backoff(config_, init_failures_++);
}

// KIP-360: an idempotent producer bumps its epoch itself (the broker takes a
// higher epoch with sequence 0 as the same producer starting over); a new id
// is asked for when the epoch would overflow.
void Sender::maybe_bump_epoch() {
  if (!state_.bump_due() || !in_flight_.empty() || !state_.has_id()) return;
  if (acc_.any_fate_unknown()) return;  // resent under the old epoch first
  const auto id = state_.id();
  if (id.epoch >= 0x7ffe) {
    state_.set_id({});  // ensure_producer_id() asks for a new one
  } else {
    state_.set_id({id.id, static_cast<std::int16_t>(id.epoch + 1)});
  }
  acc_.reset_sequences();
  state_.bump_done();
  std::lock_guard lock(mu_);
  ++stats_.epoch_bumps;
}

// ------------------------------------------------------------------- sending

Clock::time_point Sender::send_ready(Clock::time_point now) {
  if (state_.idempotent() && !state_.has_id()) return now + kMaxWait;  // waits for ensure_producer_id()
  const int max_in_flight = std::max(config_.max_in_flight_requests_per_connection, 1);
  const auto max_bytes = static_cast<std::size_t>(config_.max_request_size);
  const bool bumping = state_.bump_due();
  // Transactions v2: the next transaction's batches wait for the markers of
  // the one just ended (end_transaction()).
  if (state_.transactional() && now < txn_produce_not_before_) return txn_produce_not_before_;
  Clock::time_point next = Clock::time_point::max();
  for (int round = 0; round < max_in_flight; ++round) {
    std::map<std::int32_t, std::size_t> bytes;  // of this round's request per broker
    std::vector<BatchPtr> drained;
    auto take = [&](const TopicPartition& tp, const ProducerBatch& head) {
      const auto leader = cluster_->leader(tp);
      if (leader.node < 0) {
        metadata_due_ = true;
        return false;
      }
      if (node_in_flight_[leader.node] >= max_in_flight) return false;
      if (state_.transactional() && !state_.v2() && !state_.added(tp)) {
        to_add_.insert(tp);  // transactions v1: AddPartitionsToTxn first
        return false;
      }
      if (state_.idempotent()) {
        if (bumping && !head.fate_unknown) return false;
        // A batch to retry goes alone, after everything in flight for its
        // partition: the broker must see the sequences in order.
        if (head.sequenced() && state_.in_flight(tp) > 0) return false;
      }
      auto& b = bytes[leader.node];
      if (b > 0 && b + head.builder.size() > max_bytes) return false;
      b += head.builder.size();
      return true;
    };
    next = std::min(next, acc_.drain(now, take, drained));
    if (drained.empty()) break;
    std::map<std::int32_t, std::vector<BatchPtr>> by_node;
    for (auto& b : drained) {
      const auto node = cluster_->leader(b->tp).node;
      by_node[node].push_back(std::move(b));
    }
    for (auto& [node, batches] : by_node) send_request(node, std::move(batches), now);
  }
  if (!to_add_.empty()) next = std::min(next, std::max(now, add_not_before_));
  return next;
}

std::int16_t Sender::produce_version(Connection& conn, const std::vector<BatchPtr>& batches) {
  auto v = conn.version_for<ProduceRequest>();
  if (state_.transactional()) {
    // Produce v12+ adds the partition to the transaction itself (KIP-890):
    // only with transactions v2; the classic protocol stays at v11.
    if (!state_.v2()) v = std::min<std::int16_t>(v, 11);
    else if (v < 12)
      throw ProducerFatalError(
          static_cast<std::int16_t>(ErrorCode::unsupported_version),
          fmt::format("broker {} does not speak Produce v12, which transactions v2 need", conn.endpoint()));
  }
  if (v >= 13)
    for (auto& b : batches)
      if (!cluster_->topic_id(b->tp.topic)) return 12;  // topic ids are required from v13
  return v;
}

void Sender::send_request(std::int32_t node, std::vector<BatchPtr> batches, Clock::time_point now) {
  std::sort(batches.begin(), batches.end(), [](auto& a, auto& b) { return a->tp < b->tp; });
  InFlight f;
  Connection* conn = nullptr;
  std::int16_t version = 0;
  try {
    // Connected first: a batch is numbered only when it goes out, so one
    // that never reaches a broker leaves no gap in its partition's sequence.
    conn = &cluster_->connection(node);
    version = produce_version(*conn, batches);
  } catch (const ConnectionError&) {
    f.batches = std::move(batches);
    on_lost(f, static_cast<std::int16_t>(ErrorCode::network_exception));
    return;
  }
  BatchOptions opts;
  opts.compression = config_.compression_type;
  for (auto& b : batches) {
    const bool resend = b->attempts > 0;
    if (state_.idempotent() && !b->sequenced()) state_.number(*b);
    opts.producer_id = b->producer_id;
    opts.producer_epoch = b->producer_epoch;
    opts.base_sequence = b->base_sequence;
    opts.transactional = b->transactional;
    if (b->encoded.empty()) b->encoded = b->builder.finish(opts);
    else if (state_.idempotent())
      set_batch_producer_state(b->encoded, b->producer_id, b->producer_epoch, b->base_sequence, b->transactional);
    ++b->attempts;
    b->fate_unknown = false;
    if (resend) {
      std::lock_guard lock(mu_);
      ++stats_.retries;
    }
  }
  ProduceRequest req;
  if (state_.transactional()) req.transactional_id = state_.transactional_id();
  req.acks = config_.acks;
  req.timeout_ms = config_.request_timeout_ms;
  // The batches go to the socket from their builders' buffers (a gather
  // write, no copy into the request frame); the write holds the buffers.
  auto owners = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  owners->reserve(batches.size());
  for (auto& b : batches) owners->push_back(b->builder.finished_owner());
  for (auto& b : batches) {
    if (req.topic_data.empty() || req.topic_data.back().name != b->tp.topic) {
      ProduceRequest::TopicProduceData td;
      td.name = b->tp.topic;
      if (auto id = cluster_->topic_id(b->tp.topic)) td.topic_id = *id;
      req.topic_data.push_back(std::move(td));
    }
    ProduceRequest::PartitionProduceData pd;
    pd.index = b->tp.partition;
    pd.records.data = ByteSpan(b->encoded.data(), b->encoded.size());
    req.topic_data.back().partition_data.push_back(std::move(pd));
  }
  f.sent = cluster_->send(node, req, version, config_.acks != 0,
                          now + std::chrono::milliseconds(config_.request_timeout_ms), std::move(owners));
  if (state_.transactional()) state_.set_started(true);
  {
    std::lock_guard lock(mu_);
    ++stats_.requests;
    stats_.max_in_flight = std::max<std::uint64_t>(stats_.max_in_flight, node_in_flight_[node] + 1);
  }
  if (config_.acks == 0) {
    // No answer will come: done as far as anyone can tell.
    for (auto& b : batches) complete(std::move(b), -1, -1);
    return;
  }
  for (auto& b : batches) state_.sent(b->tp);
  f.batches = std::move(batches);
  ++node_in_flight_[node];
  in_flight_.push_back(std::move(f));
}

void Sender::collect() {
  for (std::size_t i = 0; i < in_flight_.size();) {
    if (!cluster_->ready(in_flight_[i].sent)) {
      ++i;
      continue;
    }
    InFlight f = std::move(in_flight_[i]);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    if (--node_in_flight_[f.sent.node] <= 0) node_in_flight_.erase(f.sent.node);
    for (auto& b : f.batches) state_.answered(b->tp);
    try {
      auto resp = cluster_->receive<ProduceResponse>(f.sent);
      on_answer(f, resp.body, resp.version);
    } catch (const TimeoutError&) {
      on_lost(f, static_cast<std::int16_t>(ErrorCode::request_timed_out));
    } catch (const ClientError&) {
      on_lost(f, static_cast<std::int16_t>(ErrorCode::network_exception));
    }
  }
}

Clock::time_point Sender::expire(Clock::time_point now) {
  // No queued batch expires before expire_check_ (the earliest deadline the
  // last look found; a batch made since has delivery.timeout.ms from after
  // it; retry() lowers it for a batch put back): the accumulator's lock is
  // not taken for nothing.
  if (now < expire_check_) return expire_check_;
  std::vector<BatchPtr> expired;
  const auto next = acc_.expire(now, expired);
  expire_check_ = std::min(next, now + std::chrono::milliseconds(config_.delivery_timeout_ms));
  for (auto& b : expired) {
    const std::int16_t code = b->last_error ? b->last_error : static_cast<std::int16_t>(ErrorCode::request_timed_out);
    auto error = std::make_exception_ptr(DeliveryTimeoutError(
        b->tp, code, true,
        fmt::format("Expiring {} record(s) for {}: {} ms has passed since batch creation (delivery.timeout.ms){}",
                    b->record_count(), to_string(b->tp), config_.delivery_timeout_ms,
                    b->last_error ? fmt::format("; last error {}", error_name(b->last_error)) : std::string())));
    fail(std::move(b), error);
  }
  return expire_check_;
}

}  // namespace kwire::client
