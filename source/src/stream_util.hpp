// Small helpers shared by the streaming query's source files.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kwire/client/kafka_client.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/warnings.hpp"

namespace kwire::source::detail {

inline std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
}

// Never throws: a warning that cannot be written (stderr on a full disk)
// must not fail the batch. Goes to the handler of warnings.hpp (stderr by default).
inline void warn(const std::string& text) noexcept { source::log_warning(text); }

}  // namespace kwire::source::detail
