// Shared by the unit and broker tests. Clocks that move only when told, so
// that tests check timers without waiting them out: a streaming query's
// (advance() from the test, or a sleep of the query, which jumps to its end)
// and a group member's timers (advance() from the test).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "kwire/client/timer_clock.hpp"
#include "kwire/source/stream.hpp"

namespace kwire_test {

class ManualQueryClock : public kwire::source::QueryClock {
 public:
  explicit ManualQueryClock(std::int64_t start_ms) : now_(start_ms) {}

  std::int64_t now_ms() override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void advance(std::int64_t ms) {
    std::lock_guard lock(mu_);
    now_ += ms;
  }
  /// Recorded as (from, until), then on_sleep runs with the number of sleeps
  /// so far (it may add records or stop the query). Nothing when `stop` is set.
  void sleep_until_ms(std::int64_t until_ms, const std::atomic<bool>& stop) override {
    if (stop) return;
    std::size_t n = 0;
    {
      std::lock_guard lock(mu_);
      sleeps.emplace_back(now_, until_ms);
      now_ = std::max(now_, until_ms);
      n = sleeps.size();
    }
    if (on_sleep) on_sleep(n);
  }

  std::vector<std::pair<std::int64_t, std::int64_t>> sleeps;
  std::function<void(std::size_t)> on_sleep;

 private:
  std::mutex mu_;
  std::int64_t now_;
};

/// A group member's timers' clock (Consumer::set_group_timer_clock): starts
/// at an arbitrary steady time and moves only by advance(); the member's
/// background thread reads it again every 2 ms of real time.
class ManualTimerClock : public kwire::client::TimerClock {
 public:
  std::chrono::steady_clock::time_point now() override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void advance(std::chrono::steady_clock::duration d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  std::optional<std::chrono::milliseconds> recheck_after() const override { return std::chrono::milliseconds(2); }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1000)};
};

}  // namespace kwire_test
