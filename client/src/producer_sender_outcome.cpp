// What the sender does with each batch once its Produce request is answered
// or lost: complete it, put it back for a retry, or fail it with a typed
// error (the rules are listed in producer_sender.hpp).
#include <fmt/format.h>

#include "backoff.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "producer_sender.hpp"
#include "retriable.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

constexpr auto code_of(ErrorCode e) { return static_cast<std::int16_t>(e); }

template <class E>
std::exception_ptr make_error(const ProducerBatch& b, std::int16_t code, const std::string& what) {
  return std::make_exception_ptr(E(code, fmt::format("produce to {} failed: {}", to_string(b.tp), what)));
}

}  // namespace

void Sender::on_answer(InFlight& f, const ProduceResponse& resp, std::int16_t version) {
  std::map<TopicPartition, const ProduceResponse::PartitionProduceResponse*> by_tp;
  for (auto& t : resp.responses) {
    std::string name = t.name;
    if (version >= 13)
      if (const std::string* n = cluster_->topic_name(t.topic_id)) name = *n;
    for (auto& p : t.partition_responses) by_tp[TopicPartition{name, p.index}] = &p;
  }
  for (auto& b : f.batches) {
    auto it = by_tp.find(b->tp);
    if (it == by_tp.end()) {
      // Not in the answer: as if the request was lost.
      const auto code = code_of(ErrorCode::network_exception);
      b->last_error = code;
      retry(std::move(b), code, true);
      continue;
    }
    const auto& p = *it->second;
    // KIP-951: a refusal that names the new leader moves the partition
    // there without a Metadata request.
    const bool moved = p.error_code == code_of(ErrorCode::not_leader_or_follower) && version >= 10 &&
                       cluster_->new_leader(b->tp, resp, p);
    on_partition(std::move(b), p.error_code, p.base_offset, p.log_append_time_ms, moved);
  }
}

void Sender::on_lost(InFlight& f, std::int16_t code) {
  metadata_due_ = true;
  // Sent and not answered: it may have been written. Not sent (no
  // connection): it keeps what its last attempt said.
  const bool sent = f.sent.node >= 0;
  for (auto& b : f.batches) {
    if (sent) b->last_error = code;
    const bool unknown = sent || b->fate_unknown;
    retry(std::move(b), code, unknown);
  }
}

void Sender::on_partition(BatchPtr b, std::int16_t code, std::int64_t base_offset, std::int64_t append_time,
                          bool leader_moved) {
  b->last_error = code;
  if (code == 0) return complete(std::move(b), base_offset, append_time);
  // Written by an earlier attempt whose answer was lost: a success.
  if (code == code_of(ErrorCode::duplicate_sequence_number)) return complete(std::move(b), -1, -1);
  const bool txn = state_.transactional();
  const std::string name(error_name(code));
  if (code == code_of(ErrorCode::cluster_authorization_failed) && state_.idempotent()) {
    auto e = std::make_exception_ptr(IdempotenceDeniedError(
        code, fmt::format("produce to {} denied: CLUSTER_AUTHORIZATION_FAILED (the principal may not write "
                          "idempotently: ACL operation IDEMPOTENT_WRITE). Grant it, or set enable.idempotence=false",
                          to_string(b->tp))));
    state_.fatal(e);
    return fail(std::move(b), e);
  }
  if (code == code_of(ErrorCode::transactional_id_authorization_failed)) {
    auto e = make_error<ProducerFatalError>(*b, code, name + " (transactional.id " + state_.transactional_id() + ")");
    state_.fatal(e);
    return fail(std::move(b), e);
  }
  if (code == code_of(ErrorCode::producer_fenced) ||
      (code == code_of(ErrorCode::invalid_producer_epoch) && txn && state_.v2())) {
    auto e = make_error<ProducerFencedError>(
        *b, code,
        fmt::format("{}: another producer with transactional.id '{}' has started, or the coordinator ended the "
                    "transaction after transaction.timeout.ms ({} ms); close this producer",
                    name, state_.transactional_id(), config_.transaction_timeout_ms));
    state_.fatal(e);
    return fail(std::move(b), e);
  }
  if (txn &&
      (code == code_of(ErrorCode::invalid_producer_epoch) || code == code_of(ErrorCode::transaction_abortable) ||
       code == code_of(ErrorCode::out_of_order_sequence_number) || code == code_of(ErrorCode::unknown_producer_id))) {
    // The transaction cannot commit; after the abort the epoch is bumped
    // (the broker's sequence for the partition no longer matches ours).
    // The error is made before the batch is moved into fail(): the order in
    // which a call's arguments are evaluated is unspecified.
    if (code == code_of(ErrorCode::invalid_producer_epoch)) {
      // The classic protocol's answer to a fenced producer (KIP-588): the
      // abort then says whether it was fenced.
      auto e = make_error<TransactionAbortableError>(
          *b, code,
          fmt::format("{}: the broker knows a newer epoch of transactional.id '{}' (another "
                      "producer of the id may have started); call abort_transaction(), "
                      "which raises ProducerFencedError if this producer was fenced",
                      name, state_.transactional_id()));
      return fail(std::move(b), e);
    }
    auto e = batch_error(*b, code, false);
    return fail(std::move(b), e);
  }
  if (state_.idempotent() &&
      (code == code_of(ErrorCode::out_of_order_sequence_number) || code == code_of(ErrorCode::unknown_producer_id))) {
    // An earlier batch of the partition still pending explains the gap: wait
    // for it. Otherwise the broker's state and ours differ for good: start
    // the sequences over under a bumped epoch (KIP-360), then resend.
    if (!(code == code_of(ErrorCode::out_of_order_sequence_number) && state_.earlier_pending(*b)))
      state_.request_bump();
    return retry(std::move(b), code, false);
  }
  if (refresh_worthy(code) && !leader_moved) metadata_due_ = true;
  if (refresh_worthy(code) || is_retriable(code)) return retry(std::move(b), code, false);
  auto e = batch_error(*b, code, false);
  fail(std::move(b), e);
}

void Sender::retry(BatchPtr b, std::int16_t code, bool fate_unknown) {
  const auto now = Clock::now();
  if (b->attempts > config_.producer_retries) {
    auto e = batch_error(*b, code, true);
    return fail(std::move(b), e);
  }
  if (now >= b->delivery_deadline) {
    auto e = std::make_exception_ptr(DeliveryTimeoutError(
        b->tp, code, true,
        fmt::format("Expiring {} record(s) for {}: {} ms has passed since batch creation (delivery.timeout.ms); "
                    "last error {}",
                    b->record_count(), to_string(b->tp), config_.delivery_timeout_ms, error_name(code))));
    return fail(std::move(b), e);
  }
  b->fate_unknown = fate_unknown;
  b->retry_at = now + retry_backoff(config_, b->attempts - 1);
  expire_check_ = std::min(expire_check_, b->delivery_deadline);
  acc_.reenqueue(std::move(b));
}

void Sender::complete(BatchPtr b, std::int64_t base_offset, std::int64_t append_time) {
  if (b->sequenced()) state_.acknowledged(*b);
  RecordMetadata md;  // one for every record: its partition is copied once
  md.partition = b->tp;
  for (auto& p : b->callbacks) {
    md.offset = base_offset >= 0 ? base_offset + p.index : -1;
    md.timestamp = append_time >= 0 ? append_time : p.timestamp;
    try {
      p.callback(md, nullptr);
    } catch (...) {
      // A callback's own error is its business (as Java logs and goes on).
    }
  }
  {
    std::lock_guard lock(mu_);
    stats_.records_sent += static_cast<std::uint64_t>(b->record_count());
    ++stats_.batches_sent;
  }
  acc_.release(std::move(b));
}

void Sender::fail(BatchPtr b, std::exception_ptr error) {
  if (b->sequenced()) {
    // Surely not written: its last attempt was refused (not lost, not
    // appended before a replication error). Then the later batches take its
    // sequences, and the partition keeps no gap.
    const bool maybe_written = b->fate_unknown || b->last_error == code_of(ErrorCode::request_timed_out) ||
                               b->last_error == code_of(ErrorCode::not_enough_replicas_after_append) ||
                               b->last_error == code_of(ErrorCode::network_exception);
    if (!maybe_written && state_.unnumber(*b)) {
      const std::int32_t n = b->record_count();
      acc_.shift_sequences(b->tp, b->base_sequence, n);
      for (auto& f : in_flight_)
        for (auto& x : f.batches)
          if (x && x->tp == b->tp && x->sequenced() && x->producer_epoch == b->producer_epoch &&
              x->base_sequence > b->base_sequence)
            x->base_sequence -= n;
    } else {
      state_.failed(*b);
    }
  }
  if (state_.transactional() && !state_.fatal_error()) {
    std::string why = "a record of the transaction failed";
    std::int16_t code = b->last_error;
    try {
      std::rethrow_exception(error);
    } catch (const KafkaError& e) {
      why += std::string(": ") + e.what();
      code = e.code();
    } catch (const std::exception& e) {
      why += std::string(": ") + e.what();
    }
    state_.abortable(std::make_exception_ptr(TransactionAbortableError(
                         code, why + "; call abort_transaction(), then begin a new transaction")),
                     b->sequenced());
  }
  RecordMetadata md;
  md.partition = b->tp;
  for (auto& p : b->callbacks) {
    md.timestamp = p.timestamp;
    try {
      p.callback(md, error);
    } catch (...) {
    }
  }
  // A record dropped by an abort is not a delivery error to report later.
  bool aborted = false;
  try {
    std::rethrow_exception(error);
  } catch (const TransactionAbortedError&) {
    aborted = true;
  } catch (...) {
  }
  if (b->silent && !aborted) hooks_.silent_error(error);
  {
    std::lock_guard lock(mu_);
    stats_.records_failed += static_cast<std::uint64_t>(b->record_count());
  }
  acc_.release(std::move(b));
}

void Sender::fail_all(std::exception_ptr error) {
  std::vector<BatchPtr> all;
  acc_.take_all(all);
  for (auto& f : in_flight_)
    for (auto& b : f.batches) {
      state_.answered(b->tp);
      all.push_back(std::move(b));
    }
  in_flight_.clear();
  node_in_flight_.clear();
  for (auto& b : all) fail(std::move(b), error);
}

std::exception_ptr Sender::batch_error(const ProducerBatch& b, std::int16_t code, bool exhausted) const {
  const bool retriable = is_retriable(code) || refresh_worthy(code);
  const std::string tries = exhausted ? fmt::format(" after {} attempts", b.attempts) : std::string();
  if (code == code_of(ErrorCode::not_enough_replicas) || code == code_of(ErrorCode::not_enough_replicas_after_append))
    return std::make_exception_ptr(NotEnoughReplicasError(
        b.tp, code, true,
        fmt::format("produce to {} failed{}: {} (acks={}: fewer in-sync replicas than the topic's "
                    "min.insync.replicas)",
                    to_string(b.tp), tries, error_name(code), config_.acks == -1 ? "all" : "1")));
  return std::make_exception_ptr(ProduceError(
      b.tp, code, retriable, fmt::format("produce to {} failed{}: {}", to_string(b.tp), tries, error_name(code))));
}

}  // namespace kwire::client
