// The client's one back-off rule, used by every loop that retries a request
// after an error (leader requests, fetches, group coordinator calls).
//
// KIP-580, as the Java client's ExponentialBackoff applies it: the n-th retry
// (n = 0 for the first) waits retry.backoff.ms * 2^n, multiplied by a random
// factor drawn from [0.8, 1.2] so that many clients do not retry in step, and
// never more than retry.backoff.max.ms. When retry.backoff.ms is larger than
// retry.backoff.max.ms, retry.backoff.max.ms is the wait from the first retry.
#pragma once

#include <chrono>
#include <cstdint>

#include "kwire/client/config.hpp"

namespace kwire::client {

/// The wait before retry `retry` (0-based) with `random01` in [0, 1) choosing
/// the jitter: initial_ms * 2^retry * (0.8 + 0.4 * random01), at most max_ms.
std::chrono::milliseconds retry_backoff(std::int64_t initial_ms, std::int64_t max_ms, int retry,
                                        double random01) noexcept;

/// The same with the config's retry.backoff.ms / retry.backoff.max.ms and a
/// per-thread random draw.
std::chrono::milliseconds retry_backoff(const ClientConfig& config, int retry);

}  // namespace kwire::client
