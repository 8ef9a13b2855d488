#include "retry_loop.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "backoff.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/protocol/errors.hpp"

namespace kwire::client {

RetryLoop::RetryLoop(const ClientConfig& config, Deadline deadline, std::string what)
    : config_(config), deadline_(deadline), what_(std::move(what)) {}

Deadline RetryLoop::request_deadline() const {
  return std::min(deadline_, Clock::now() + std::chrono::milliseconds(config_.request_timeout_ms));
}

void RetryLoop::again(std::int16_t code) {
  last_error_ = code;
  ++attempts_;
  if (Clock::now() >= deadline_) expired();
}

void RetryLoop::back_off(std::int16_t code) {
  again(code);
  const auto until = std::min(deadline_, Clock::now() + retry_backoff(config_, attempts_ - 1));
  if (wait_) wait_(until);
  else std::this_thread::sleep_until(until);
  if (Clock::now() >= deadline_) expired();
}

void RetryLoop::expired() const {
  throw TimeoutError(fmt::format("{} did not succeed in time (last error {})", what_,
                                 last_error_ >= 0 ? protocol::error_name(last_error_) : std::string_view("no answer")));
}

}  // namespace kwire::client
