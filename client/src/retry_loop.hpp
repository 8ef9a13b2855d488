// The client's one retry loop: attempts of one call until its deadline, with
// the one back-off rule (backoff.hpp: KIP-580, retry.backoff.ms doubling with
// 20% jitter, capped by retry.backoff.max.ms) between them. Every loop that
// retries a request to a coordinator (FindCoordinator, JoinGroup,
// OffsetCommit, OffsetFetch, the group tools' requests) runs on it.
//
//   RetryLoop loop(config, deadline, "OffsetFetch for group g");
//   for (;;) {
//     std::int16_t code = attempt();
//     if (code == 0) break;
//     loop.back_off(code);  // waits, or throws TimeoutError once the deadline passed
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kwire/client/config.hpp"
#include "kwire/client/types.hpp"

namespace kwire::client {

class RetryLoop {
 public:
  /// `what` names the call in the TimeoutError ("OffsetCommit for group g").
  RetryLoop(const ClientConfig& config, Deadline deadline, std::string what);

  Deadline deadline() const noexcept { return deadline_; }
  /// The deadline of one request: request.timeout.ms from now, never past the loop's.
  Deadline request_deadline() const;
  /// Failed attempts so far.
  int attempts() const noexcept { return attempts_; }
  /// The error of the last failed attempt (-1: no answer, a lost connection or a time-out).
  std::int16_t last_error() const noexcept { return last_error_; }

  /// After a failed attempt with `code` (-1: no answer): waits the next
  /// back-off, never past the deadline. Throws TimeoutError naming the call
  /// and `code` when the deadline has passed.
  void back_off(std::int16_t code);
  /// The same without the wait, for the answers the Java client retries at
  /// once (MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS on JoinGroup...).
  void again(std::int16_t code);
  /// How back_off() waits until a time point (default: sleeping). A caller
  /// that can do better (wait for the event that makes a retry worth it, and
  /// take it in) sets its own; the wait may return early.
  void wait_with(std::function<void(Deadline)> wait) { wait_ = std::move(wait); }
  /// Throws the TimeoutError of a loop whose deadline passed.
  [[noreturn]] void expired() const;

 private:
  const ClientConfig& config_;
  Deadline deadline_;
  std::string what_;
  int attempts_ = 0;
  std::int16_t last_error_ = -1;
  std::function<void(Deadline)> wait_;
};

}  // namespace kwire::client
