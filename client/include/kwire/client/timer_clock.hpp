// The clock a consumer group member's timers read.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

namespace kwire::client {

/// The time a group member's timers read: heartbeat.interval.ms (when the
/// next heartbeat is due), max.poll.interval.ms (since the last poll()),
/// auto.commit.interval.ms and, with subscribe_pattern(), metadata.max.age.ms.
/// Request deadlines (request.timeout.ms, default.api.timeout.ms, a poll's
/// timeout) keep the steady clock: they bound real network waits.
/// steady_timer_clock() by default; tests set a clock they move by hand
/// (Consumer::set_group_timer_clock), so that no test waits out a timer.
class TimerClock {
 public:
  virtual ~TimerClock() = default;
  virtual std::chrono::steady_clock::time_point now() = 0;
  /// The longest real time a thread waiting for one of these timers sleeps
  /// before it reads the clock again; nullopt (the steady clock) waits the
  /// whole time. A clock moved by hand wakes no one, so it gives a short one.
  virtual std::optional<std::chrono::milliseconds> recheck_after() const { return std::nullopt; }
};

/// std::chrono::steady_clock.
std::shared_ptr<TimerClock> steady_timer_clock();

}  // namespace kwire::client
