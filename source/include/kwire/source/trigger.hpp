// When a streaming query runs its micro-batches.
#pragma once

#include <cstdint>
#include <string_view>

namespace kwire::source {

/// Spark's triggers: AvailableNow (rate-limited batches up to the latest
/// offsets seen at start, then stop), Once (one batch of everything, limits
/// ignored with a warning), ProcessingTime (a batch every interval while new
/// data exists; runs until stop()). A ProcessingTime trigger that found no new
/// data waits at least kNoDataPollingDelayMs (Spark's pollingDelay) before the
/// next one, so an interval of 0 does not spin on ListOffsets.
struct Trigger {
  enum class Kind { available_now, once, processing_time };
  /// Spark's pollingDelay (ms): the wait after a trigger that found no new data.
  static constexpr std::int64_t kNoDataPollingDelayMs = 10;

  Kind kind = Kind::available_now;
  std::int64_t interval_ms = 0;
  /// "available-now", "once", "processing-time=10 seconds" (Spark durations).
  /// Throws SourceOptionError for anything else.
  static Trigger parse(std::string_view text);
  /// ProcessingTime: the wall-clock ms of the next trigger after one that
  /// started at `started_ms` (Spark's ProcessingTimeExecutor: the next
  /// multiple of the interval); `started_ms` itself for an interval of 0.
  std::int64_t next_trigger_ms(std::int64_t started_ms) const;
};

}  // namespace kwire::source
