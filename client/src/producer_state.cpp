#include "producer_state.hpp"

#include <fmt/format.h>

namespace kwire::client {

const char* to_string(TxnState s) noexcept {
  switch (s) {
    case TxnState::uninitialized: return "UNINITIALIZED";
    case TxnState::ready: return "READY";
    case TxnState::in_transaction: return "IN_TRANSACTION";
    case TxnState::committing: return "COMMITTING_TRANSACTION";
    case TxnState::aborting: return "ABORTING_TRANSACTION";
    case TxnState::abortable_error: return "ABORTABLE_ERROR";
    case TxnState::fatal_error: return "FATAL_ERROR";
  }
  return "?";
}

ProducerState::ProducerState(bool idempotent, std::string transactional_id)
    : idempotent_(idempotent), transactional_id_(std::move(transactional_id)) {}

ProducerState::Id ProducerState::id() const {
  std::lock_guard lock(mu_);
  return id_;
}

void ProducerState::set_id(Id id) {
  {
    std::lock_guard lock(mu_);
    id_ = id;
  }
  for (auto& [tp, p] : partitions_) {
    p.next = 0;
    p.last_acked = -1;
    p.pending.clear();
  }
}

TxnState ProducerState::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void ProducerState::check(bool abortable_throws) const {
  if (!errored_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mu_);
  if (fatal_) std::rethrow_exception(fatal_);
  if (abortable_throws && abortable_) std::rethrow_exception(abortable_);
}

void ProducerState::transition(std::initializer_list<TxnState> from, TxnState to, const char* call) {
  std::lock_guard lock(mu_);
  if (fatal_) std::rethrow_exception(fatal_);
  for (auto f : from)
    if (state_ == f) {
      state_ = to;
      return;
    }
  if (state_ == TxnState::abortable_error && abortable_ && to != TxnState::aborting) std::rethrow_exception(abortable_);
  throw TransactionStateError(fmt::format("{} is not allowed in state {}{}", call, client::to_string(state_),
                                          state_ == TxnState::uninitialized ? ": call init_transactions() first"
                                          : state_ == TxnState::ready       ? ": call begin_transaction() first"
                                                                            : ""));
}

void ProducerState::set_state(TxnState s) {
  std::lock_guard lock(mu_);
  if (state_ != TxnState::fatal_error) state_ = s;
}

void ProducerState::abortable(std::exception_ptr error, bool bump) {
  std::lock_guard lock(mu_);
  if (fatal_) return;
  if (!abortable_) abortable_ = std::move(error);
  errored_.store(true, std::memory_order_release);
  bump_after_abort_ = bump_after_abort_ || bump;
  if (state_ == TxnState::in_transaction || state_ == TxnState::committing) state_ = TxnState::abortable_error;
}

void ProducerState::fatal(std::exception_ptr error) {
  std::lock_guard lock(mu_);
  if (!fatal_) fatal_ = std::move(error);
  errored_.store(true, std::memory_order_release);
  state_ = TxnState::fatal_error;
}

std::exception_ptr ProducerState::fatal_error() const {
  std::lock_guard lock(mu_);
  return fatal_;
}

std::exception_ptr ProducerState::abortable_error() const {
  std::lock_guard lock(mu_);
  return abortable_;
}

bool ProducerState::bump_after_abort() const {
  std::lock_guard lock(mu_);
  return bump_after_abort_;
}

void ProducerState::clear_abortable() {
  std::lock_guard lock(mu_);
  abortable_ = nullptr;
  errored_.store(fatal_ != nullptr, std::memory_order_release);
  bump_after_abort_ = false;
}

bool ProducerState::v2() const {
  std::lock_guard lock(mu_);
  return v2_;
}

void ProducerState::set_v2(bool on) {
  std::lock_guard lock(mu_);
  v2_ = on;
}

bool ProducerState::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

void ProducerState::set_started(bool on) {
  std::lock_guard lock(mu_);
  started_ = on;
}

void ProducerState::number(ProducerBatch& b) {
  const Id current = id();
  auto& p = partitions_[b.tp];
  b.producer_id = current.id;
  b.producer_epoch = current.epoch;
  b.base_sequence = p.next;
  b.transactional = transactional();
  p.next = increment_sequence(p.next, b.record_count());
  p.pending.insert(b.base_sequence);
}

void ProducerState::acknowledged(const ProducerBatch& b) {
  const Id current = id();
  auto it = partitions_.find(b.tp);
  // A batch numbered under an earlier id or epoch says nothing about the current sequences.
  if (it == partitions_.end() || b.producer_id != current.id || b.producer_epoch != current.epoch) return;
  auto& p = it->second;
  const std::int32_t last = increment_sequence(b.base_sequence, b.record_count() - 1);
  // Sequences complete in order; a larger one supersedes (wrap-around aside).
  if (p.last_acked < 0 || last > p.last_acked || p.last_acked - last > 0x3fffffff) p.last_acked = last;
  p.pending.erase(b.base_sequence);
}

void ProducerState::failed(const ProducerBatch& b) {
  const Id current = id();
  auto it = partitions_.find(b.tp);
  if (it == partitions_.end() || b.producer_id != current.id || b.producer_epoch != current.epoch) return;
  it->second.pending.erase(b.base_sequence);
}

bool ProducerState::unnumber(const ProducerBatch& b) {
  const Id current = id();
  auto it = partitions_.find(b.tp);
  if (it == partitions_.end() || b.producer_id != current.id || b.producer_epoch != current.epoch) return false;
  auto& p = it->second;
  const std::int32_t n = b.record_count();
  p.pending.erase(b.base_sequence);
  std::set<std::int32_t> moved;
  for (auto s : p.pending) moved.insert(s > b.base_sequence ? s - n : s);
  p.pending.swap(moved);
  p.next = p.next >= n ? p.next - n : 0;
  return true;
}

bool ProducerState::earlier_pending(const ProducerBatch& b) const {
  auto it = partitions_.find(b.tp);
  if (it == partitions_.end() || it->second.pending.empty()) return false;
  return *it->second.pending.begin() < b.base_sequence;
}

std::int32_t ProducerState::last_acknowledged(const TopicPartition& tp) const {
  auto it = partitions_.find(tp);
  return it == partitions_.end() ? -1 : it->second.last_acked;
}

int ProducerState::in_flight(const TopicPartition& tp) const {
  auto it = partitions_.find(tp);
  return it == partitions_.end() ? 0 : it->second.in_flight;
}

void ProducerState::sent(const TopicPartition& tp) { ++partitions_[tp].in_flight; }

void ProducerState::answered(const TopicPartition& tp) {
  auto& p = partitions_[tp];
  if (p.in_flight > 0) --p.in_flight;
}

bool ProducerState::added(const TopicPartition& tp) const { return added_.count(tp) > 0; }
void ProducerState::add(const TopicPartition& tp) { added_.insert(tp); }
void ProducerState::clear_added() { added_.clear(); }

}  // namespace kwire::client
