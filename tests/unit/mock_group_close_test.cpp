// close(timeout) of a classic group member returns by its deadline in every
// case: a heartbeat of the background thread in flight to a coordinator that
// stopped answering, an async commit still unanswered, the final commit and
// the leave. An unanswered async commit's callback gets the time-out.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <thread>

#include "kwire/client/errors.hpp"
#include "mock_classic_coordinator.hpp"
#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using namespace kwire;
using namespace kwire::mock_support;
using client::Consumer;
using client::OffsetAndMetadata;
using Clock = std::chrono::steady_clock;

namespace {

mock::Fault silent(ApiKey api) {
  mock::Fault f;
  f.api = api;
  f.delay = 20s;  // far past close's deadline
  f.times = 1000;
  return f;
}

}  // namespace

TEST_F(MockGroup, CloseReturnsByItsDeadlineWithAHeartbeatInFlightToASilentCoordinator) {
  Consumer c(group_props({{"request.timeout.ms", "15000"}, {"auto.commit.interval.ms", "600000"}}));
  c.subscribe({"t"});
  ASSERT_EQ(poll_until(c, 20).size(), 20u);
  auto heartbeats = [&] {
    std::lock_guard lock(coord.mu);
    return coord.heartbeats;
  };
  cluster.inject(silent(ApiKey::heartbeat));
  // The background thread's next heartbeat (every 50 ms) now waits for an
  // answer that comes after 20 s.
  const int sent = heartbeats();
  const auto until = Clock::now() + 3s;
  while (heartbeats() == sent && Clock::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_GT(heartbeats(), sent);
  std::this_thread::sleep_for(100ms);
  const auto t0 = Clock::now();
  c.close(500ms);
  const auto took = Clock::now() - t0;
  EXPECT_LT(took, 1500ms);  // not request.timeout.ms (15 s)
  cluster.clear_faults();
  std::lock_guard lock(coord.mu);
  EXPECT_EQ(coord.leaves, 1);  // the leave was still sent, on the application's connection
}

TEST_F(MockGroup, CloseBoundsAnUnansweredAsyncCommitByItsDeadline) {
  Consumer c(group_props({{"request.timeout.ms", "15000"}, {"enable.auto.commit", "false"}}));
  c.subscribe({"t"});
  ASSERT_EQ(poll_until(c, 20).size(), 20u);
  cluster.inject(silent(ApiKey::offset_commit));
  std::exception_ptr error;
  bool called = false;
  c.commit_async([&](const std::map<TopicPartition, OffsetAndMetadata>&, std::exception_ptr e) {
    called = true;
    error = e;
  });
  const auto t0 = Clock::now();
  c.close(500ms);
  const auto took = Clock::now() - t0;
  EXPECT_LT(took, 1500ms);  // not request.timeout.ms (15 s)
  EXPECT_TRUE(called);
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), client::TimeoutError);
  cluster.clear_faults();
}
