// The transaction calls the sender thread runs for the callers' threads, as
// Java's TransactionManager: InitProducerId for the transactional id,
// AddPartitionsToTxn before a partition's first batch (transactions v1; v2
// adds it with the Produce itself, KIP-890), AddOffsetsToTxn and
// TxnOffsetCommit, and EndTxn once every batch of the transaction has
// completed. Every coordinator request goes through the client's one
// coordinator lookup and retry loop (coordinators.hpp).
#include <fmt/format.h>

#include "backoff.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "producer_sender.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

constexpr auto code_of(ErrorCode e) { return static_cast<std::int16_t>(e); }
bool is(std::int16_t code, ErrorCode e) { return code == code_of(e); }

// Answers a transaction coordinator gives while it is busy with the previous
// transaction or moving: asked again after the back-off.
bool txn_retriable(std::int16_t code) {
  return coordinator_retriable(code) || is(code, ErrorCode::concurrent_transactions) ||
         is(code, ErrorCode::request_timed_out) || is(code, ErrorCode::network_exception) ||
         is(code, ErrorCode::unknown_topic_or_partition) || is(code, ErrorCode::operation_not_attempted);
}

// The first error of a per-partition result list (0 when none).
template <class Topics, class Parts, class Code>
std::int16_t first_error(const Topics& topics, Parts parts, Code code) {
  for (auto& t : topics)
    for (auto& p : t.*parts)
      if (p.*code) return p.*code;
  return 0;
}

}  // namespace

void Sender::txn_failed(std::int16_t code, const std::string& what) {
  const std::string id = state_.transactional_id();
  if (is(code, ErrorCode::producer_fenced) || is(code, ErrorCode::invalid_producer_epoch)) {
    auto e = std::make_exception_ptr(ProducerFencedError(
        code, fmt::format("{}: {}: another producer with transactional.id '{}' has started, or the coordinator "
                          "ended the transaction after transaction.timeout.ms ({} ms); close this producer",
                          what, error_name(code), id, config_.transaction_timeout_ms)));
    state_.fatal(e);
    std::rethrow_exception(e);
  }
  if (is(code, ErrorCode::transaction_abortable) || is(code, ErrorCode::topic_authorization_failed) ||
      is(code, ErrorCode::group_authorization_failed) || is(code, ErrorCode::unknown_member_id) ||
      is(code, ErrorCode::illegal_generation) || is(code, ErrorCode::fenced_instance_id) ||
      is(code, ErrorCode::unknown_producer_id) || is(code, ErrorCode::invalid_producer_id_mapping)) {
    auto e = std::make_exception_ptr(TransactionAbortableError(
        code, fmt::format("{}: {}; call abort_transaction(), then begin a new transaction", what, error_name(code))));
    // The coordinator lost the producer's id or state: after the abort the
    // epoch is bumped (KIP-360), as Java's abortableErrorIfPossible.
    state_.abortable(e, is(code, ErrorCode::unknown_producer_id) || is(code, ErrorCode::invalid_producer_id_mapping));
    std::rethrow_exception(e);
  }
  auto e = std::make_exception_ptr(ProducerFatalError(
      code, fmt::format("{}: {} (transactional.id '{}'); close this producer", what, error_name(code), id)));
  state_.fatal(e);
  std::rethrow_exception(e);
}

void Sender::run_tasks() {
  for (;;) {
    TxnTask* front = nullptr;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty()) return;
      front = tasks_.front().get();
    }
    if (front->kind == TxnTask::Kind::abort && !front->dropped) {
      // What was not sent is dropped; what is in flight is waited for.
      std::vector<BatchPtr> queued;
      acc_.take_all(queued);
      to_add_.clear();
      auto aborted =
          std::make_exception_ptr(TransactionAbortedError("the transaction was aborted before the record was sent"));
      for (auto& b : queued) fail(std::move(b), aborted);
      front->dropped = true;
    }
    std::unique_ptr<TxnTask> task;
    {
      std::lock_guard lock(mu_);
      if (!task_ready(*tasks_.front())) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      run_task(*task);
      task->done.set_value();
    } catch (...) {
      task->done.set_exception(std::current_exception());
    }
  }
}

// EndTxn goes once every batch of the transaction has completed (commit:
// commit_transaction() flushed them; abort: the queued ones were dropped).
bool Sender::task_ready(const TxnTask& t) const {
  switch (t.kind) {
    case TxnTask::Kind::commit: return acc_.empty() && in_flight_.empty();
    case TxnTask::Kind::abort: return in_flight_.empty();
    default: return true;
  }
}

void Sender::run_task(TxnTask& t) {
  state_.check(false);  // a fatal error ends every call
  switch (t.kind) {
    case TxnTask::Kind::init:
      init_producer_id(t.deadline, false);
      state_.clear_abortable();
      state_.set_started(false);
      state_.clear_added();
      state_.set_state(TxnState::ready);
      return;
    case TxnTask::Kind::send_offsets: try { send_offsets(t);
      } catch (const TimeoutError& e) {
        // Offsets that may not be in the transaction: it must not commit
        // without them (the records would be read again after a restart).
        state_.abortable(std::make_exception_ptr(TransactionAbortableError(
                             -1, fmt::format("the offsets could not be added to the transaction: {}; call "
                                             "abort_transaction(), then begin a new transaction",
                                             e.what()))),
                         false);
        throw;
      }
      return;
    case TxnTask::Kind::commit:
      if (auto e = state_.abortable_error()) std::rethrow_exception(e);
      end_transaction(true, t.deadline);
      return;
    case TxnTask::Kind::abort: {
      // A coordinator that lost the id (INVALID_PRODUCER_ID_MAPPING) takes
      // no EndTxn for it: the abort goes straight to a new InitProducerId.
      bool id_lost = false;
      if (auto e = state_.abortable_error()) {
        try {
          std::rethrow_exception(e);
        } catch (const KafkaError& k) {
          id_lost = is(k.code(), ErrorCode::invalid_producer_id_mapping);
        } catch (...) {
        }
      }
      if (id_lost) state_.set_started(false);
      end_transaction(false, t.deadline);
      if (id_lost || (state_.bump_after_abort() && !state_.v2())) init_producer_id(t.deadline, true);  // KIP-360
      state_.clear_abortable();
      state_.set_state(TxnState::ready);
      return;
    }
  }
}

// InitProducerId for the transactional id at its coordinator: fences older
// producers of the id and completes their open transaction. `keep_id`: bump
// the epoch of the current id (KIP-360) rather than start over.
void Sender::init_producer_id(Clock::time_point deadline, bool keep_id) {
  const std::string& id = state_.transactional_id();
  RetryLoop loop(config_, deadline, fmt::format("InitProducerId for transactional.id '{}'", id));
  InitProducerIdRequest req;
  req.transactional_id = id;
  req.transaction_timeout_ms = config_.transaction_timeout_ms;
  if (keep_id) {
    req.producer_id = state_.id().id;
    req.producer_epoch = state_.id().epoch;
  }
  call_coordinator(*client_, coordinators_, CoordinatorType::transaction, id, loop, [&](Connection& c) {
    const std::int16_t v = c.version_for<InitProducerIdRequest>();
    auto r = c.receive<InitProducerIdResponse>(c.send(req, v), v, loop.request_deadline()).body;
    if (txn_retriable(r.error_code)) return CoordinatorReply::retry(r.error_code);
    if (r.error_code) txn_failed(r.error_code, "InitProducerId");
    // Transactions v2 (KIP-890) when the cluster has finalized
    // transaction.version 2 and the broker speaks what it needs.
    const auto& features = c.finalized_features();
    const auto tv = features.find("transaction.version");
    const auto& versions = c.broker_versions();
    const auto produce = versions.find(static_cast<std::int16_t>(ApiKey::produce));
    const auto end = versions.find(static_cast<std::int16_t>(ApiKey::end_txn));
    state_.set_v2(tv != features.end() && tv->second >= 2 && produce != versions.end() && produce->second.max >= 12 &&
                  end != versions.end() && end->second.max >= 5);
    state_.set_id({r.producer_id, r.producer_epoch});
    return CoordinatorReply::done();
  });
}

void Sender::send_offsets(const TxnTask& t) {
  const std::string& id = state_.transactional_id();
  const auto pid = state_.id();
  if (!state_.v2()) {
    // Transactions v1: the group joins the transaction first (its offsets
    // are written with the markers); v2 lets TxnOffsetCommit do it.
    RetryLoop loop(config_, t.deadline, fmt::format("AddOffsetsToTxn for group '{}'", t.group.group_id));
    call_coordinator(*client_, coordinators_, CoordinatorType::transaction, id, loop, [&](Connection& c) {
      AddOffsetsToTxnRequest req;
      req.transactional_id = id;
      req.producer_id = pid.id;
      req.producer_epoch = pid.epoch;
      req.group_id = t.group.group_id;
      const std::int16_t v = c.version_for<AddOffsetsToTxnRequest>();
      auto r = c.receive<AddOffsetsToTxnResponse>(c.send(req, v), v, loop.request_deadline()).body;
      if (txn_retriable(r.error_code)) return CoordinatorReply::retry(r.error_code);
      if (r.error_code) txn_failed(r.error_code, "AddOffsetsToTxn");
      return CoordinatorReply::done();
    });
  }
  state_.set_started(true);
  TxnOffsetCommitRequest req;
  req.transactional_id = id;
  req.group_id = t.group.group_id;
  req.producer_id = pid.id;
  req.producer_epoch = pid.epoch;
  req.generation_id = t.group.generation;
  req.member_id = t.group.member_id;
  req.group_instance_id = t.group.group_instance_id;
  for (auto& [tp, om] : t.offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
    TxnOffsetCommitRequest::Partition p;
    p.partition_index = tp.partition;
    p.committed_offset = om.offset;
    p.committed_leader_epoch = om.leader_epoch;
    p.committed_metadata = om.metadata;
    req.topics.back().partitions.push_back(std::move(p));
  }
  RetryLoop loop(config_, t.deadline, fmt::format("TxnOffsetCommit for group '{}'", t.group.group_id));
  call_coordinator(*client_, coordinators_, CoordinatorType::group, t.group.group_id, loop, [&](Connection& c) {
    std::int16_t v = c.version_for<TxnOffsetCommitRequest>();
    if (!state_.v2()) v = std::min<std::int16_t>(v, 4);  // v5 is transactions v2's
    auto r = c.receive<TxnOffsetCommitResponse>(c.send(req, v), v, loop.request_deadline()).body;
    using Resp = TxnOffsetCommitResponse;
    const std::int16_t code = first_error(r.topics, &Resp::Topic::partitions, &Resp::Partition::error_code);
    if (txn_retriable(code) || is(code, ErrorCode::coordinator_load_in_progress) ||
        is(code, ErrorCode::unstable_offset_commit))
      return CoordinatorReply::retry(code);
    if (code) txn_failed(code, fmt::format("TxnOffsetCommit for group '{}'", t.group.group_id));
    return CoordinatorReply::done();
  });
}

void Sender::end_transaction(bool commit, Clock::time_point deadline) {
  if (state_.started()) {
    const std::string& id = state_.transactional_id();
    const auto pid = state_.id();
    RetryLoop loop(config_, deadline,
                   fmt::format("EndTxn ({}) for transactional.id '{}'", commit ? "commit" : "abort", id));
    Clock::duration round_trip{};
    bool v2_end = false;
    call_coordinator(*client_, coordinators_, CoordinatorType::transaction, id, loop, [&](Connection& c) {
      EndTxnRequest req;
      req.transactional_id = id;
      req.producer_id = pid.id;
      req.producer_epoch = pid.epoch;
      req.committed = commit;
      std::int16_t v = c.version_for<EndTxnRequest>();
      if (!state_.v2()) v = std::min<std::int16_t>(v, 4);
      const auto sent = Clock::now();
      auto r = c.receive<EndTxnResponse>(c.send(req, v), v, loop.request_deadline()).body;
      round_trip = Clock::now() - sent;
      v2_end = v >= 5;
      if (txn_retriable(r.error_code)) return CoordinatorReply::retry(r.error_code);
      if (r.error_code) txn_failed(r.error_code, fmt::format("EndTxn ({})", commit ? "commit" : "abort"));
      // Transactions v2: every transaction ends with a new epoch, and the
      // next one numbers its batches from 0.
      if (v >= 5 && r.producer_id >= 0) state_.set_id({r.producer_id, r.producer_epoch});
      return CoordinatorReply::done();
    });
    // Transactions v2: the coordinator writes the transaction's markers
    // after it answers EndTxn. A Produce of the next transaction that reaches
    // a leader before they are written is held by that broker for
    // add.partitions.to.txn.retry.backoff.ms (20 ms by default), which made
    // back-to-back small transactions 5x slower on a local broker. Writing
    // the markers takes about what EndTxn took (its own transaction log
    // write), so the next transaction's batches go no sooner than one EndTxn
    // round trip after the answer; a caller that does work between
    // transactions does not wait at all.
    if (v2_end) txn_produce_not_before_ = Clock::now() + round_trip;
  }
  state_.set_started(false);
  state_.clear_added();
  state_.set_state(TxnState::ready);
  std::lock_guard lock(mu_);
  if (commit) ++stats_.transactions_committed;
  else ++stats_.transactions_aborted;
}

void Sender::add_partitions(Clock::time_point now) {
  if (to_add_.empty() || now < add_not_before_) return;
  const std::string& id = state_.transactional_id();
  std::int16_t code = 0;
  const auto deadline = now + std::chrono::milliseconds(config_.request_timeout_ms);
  try {
    const auto node = coordinators_.try_lookup(*client_, CoordinatorType::transaction, id, deadline, code);
    if (node) {
      const auto pid = state_.id();
      AddPartitionsToTxnRequest req;
      req.v3_and_below_transactional_id = id;
      req.v3_and_below_producer_id = pid.id;
      req.v3_and_below_producer_epoch = pid.epoch;
      for (auto& tp : to_add_) {
        if (req.v3_and_below_topics.empty() || req.v3_and_below_topics.back().name != tp.topic)
          req.v3_and_below_topics.push_back({tp.topic, {}, {}});
        req.v3_and_below_topics.back().partitions.push_back(tp.partition);
      }
      Connection& c = client_->broker(*node);
      const std::int16_t v = std::min(c.pick_version(static_cast<std::int16_t>(ApiKey::add_partitions_to_txn), 0,
                                                     AddPartitionsToTxnRequest::kClientMaxVersion),
                                      AddPartitionsToTxnRequest::kClientMaxVersion);
      auto r = c.receive<AddPartitionsToTxnResponse>(c.send(req, v), v, deadline).body;
      using Resp = AddPartitionsToTxnResponse;
      code = first_error(r.results_by_topic_v3_and_below, &Resp::TopicResult::results_by_partition,
                         &Resp::PartitionResult::partition_error_code);
      if (code && !txn_retriable(code)) {
        to_add_.clear();
        try {
          txn_failed(code, "AddPartitionsToTxn");
        } catch (const std::exception&) {
          fail_queued_if_abortable();  // the fatal case fails everything in loop_once
        }
        return;
      }
      if (coordinator_retriable(code)) coordinators_.answered(CoordinatorType::transaction, id, code);
    }
  } catch (const ConnectionError&) {
    code = code_of(ErrorCode::network_exception);
    coordinators_.forget(CoordinatorType::transaction, id);
  } catch (const TimeoutError&) {
    code = code_of(ErrorCode::request_timed_out);
    coordinators_.forget(CoordinatorType::transaction, id);
  }
  if (code == 0 && !to_add_.empty()) {
    for (auto& tp : to_add_) state_.add(tp);
    to_add_.clear();
    state_.set_started(true);
    add_failures_ = 0;
    return;
  }
  // CONCURRENT_TRANSACTIONS: the coordinator is still writing the previous
  // transaction's markers, a matter of milliseconds: asked again after 20 ms
  // at most, as Java does for this answer.
  const auto pause = retry_backoff(config_, add_failures_++);
  add_not_before_ =
      now + (is(code, ErrorCode::concurrent_transactions) ? std::min(pause, std::chrono::milliseconds(20)) : pause);
}

void Sender::fail_queued_if_abortable() {
  auto e = state_.abortable_error();
  if (!e || state_.state() == TxnState::aborting) return;
  std::vector<BatchPtr> queued;
  acc_.take_all(queued);
  for (auto& b : queued) fail(std::move(b), e);
}

}  // namespace kwire::client
