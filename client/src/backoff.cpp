#include "backoff.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace kwire::client {

std::chrono::milliseconds retry_backoff(std::int64_t initial_ms, std::int64_t max_ms, int retry,
                                        double random01) noexcept {
  initial_ms = std::max<std::int64_t>(initial_ms, 0);
  max_ms = std::max<std::int64_t>(max_ms, 0);
  // 2^retry grows past any cap within 63 doublings; stop before overflow.
  const int exponent = std::clamp(retry, 0, 62);
  double term = static_cast<double>(initial_ms) * std::ldexp(1.0, exponent);
  double factor = 0.8 + 0.4 * std::clamp(random01, 0.0, 1.0);
  double ms = term * factor;
  if (ms >= static_cast<double>(max_ms)) return std::chrono::milliseconds(max_ms);
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::chrono::milliseconds retry_backoff(const ClientConfig& config, int retry) {
  thread_local std::minstd_rand engine{std::random_device{}()};
  std::uniform_real_distribution<double> draw(0.0, 1.0);
  return retry_backoff(config.retry_backoff_ms, config.retry_backoff_max_ms, retry, draw(engine));
}

}  // namespace kwire::client
