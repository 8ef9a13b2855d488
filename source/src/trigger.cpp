// Trigger parsing and the processing-time schedule.
#include "kwire/source/trigger.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "kwire/source/options.hpp"

namespace kwire::source {

Trigger Trigger::parse(std::string_view text) {
  Trigger t;
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "available-now" || s == "availablenow" || s == "available_now") {
    t.kind = Kind::available_now;
  } else if (s == "once") {
    t.kind = Kind::once;
  } else if (s.rfind("processing-time=", 0) == 0 || s.rfind("processingtime=", 0) == 0) {
    t.kind = Kind::processing_time;
    t.interval_ms = parse_duration_ms(s.substr(s.find('=') + 1));
  } else {
    throw SourceOptionError(
        fmt::format("invalid trigger '{}': expected available-now, once or processing-time=DURATION", text));
  }
  return t;
}

std::int64_t Trigger::next_trigger_ms(std::int64_t started_ms) const {
  // As Spark's ProcessingTimeExecutor, boundaries are wall-clock multiples of
  // the interval; a trigger that overran its interval is followed at once.
  if (interval_ms <= 0) return started_ms;
  return started_ms / interval_ms * interval_ms + interval_ms;
}

}  // namespace kwire::source
