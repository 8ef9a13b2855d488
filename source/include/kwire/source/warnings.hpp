// Where the source's warnings go. Spark's Kafka source logs them as WARN
// (log4j); kwire writes them on stderr as "WARN <text>" unless the program
// hosting it installs a handler that hands them to its own logging (the Python
// package sends them to Python's `logging`, logger "kwire").
//
// The warnings are those Spark logs: option warnings, data loss tolerated by
// failOnDataLoss=false (KAFKA_DATA_LOSS.* texts), retried look-ups, checkpoint
// repairs.
#pragma once

#include <functional>
#include <string>

namespace kwire::source {

/// Receives one warning's text (no "WARN " prefix, no newline). Called on the
/// thread that found the condition, possibly several threads at once.
using WarningHandler = std::function<void(const std::string& text)>;

/// Installs `handler` for the whole process (an empty one restores the
/// default, stderr) and returns the previous handler. Thread-safe; a warning
/// being delivered while the handler changes goes to one of the two.
WarningHandler set_warning_handler(WarningHandler handler);

/// Delivers `text` to the handler. Never throws: when the handler throws, the
/// text is written on stderr instead (a warning must never fail a batch).
void log_warning(const std::string& text) noexcept;

}  // namespace kwire::source
