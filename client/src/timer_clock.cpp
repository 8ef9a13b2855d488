#include "kwire/client/timer_clock.hpp"

namespace kwire::client {

namespace {

class SteadyTimerClock : public TimerClock {
 public:
  std::chrono::steady_clock::time_point now() override { return std::chrono::steady_clock::now(); }
};

}  // namespace

std::shared_ptr<TimerClock> steady_timer_clock() {
  static const auto clock = std::make_shared<SteadyTimerClock>();
  return clock;
}

}  // namespace kwire::client
