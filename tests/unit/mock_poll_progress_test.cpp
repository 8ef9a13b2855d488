// Short polls make progress: a poll bounds what it blocks on, and a
// connection whose setup a poll's deadline cut short is taken up again by
// the next poll where it was, so polls shorter than the handshake still end
// up reading (as Java's consumer, whose connections outlive a poll).
#include <gtest/gtest.h>

#include <chrono>

#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using namespace kwire::mock_support;
using kwire::client::Consumer;
using kwire::client::TopicPartition;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using Clock = std::chrono::steady_clock;

namespace {

const TopicPartition t0{"t", 0};

// Polls with `timeout` until `n` records came (or 10 s); the longest poll.
std::chrono::milliseconds read_with_short_polls(Consumer& c, std::size_t n, std::chrono::milliseconds timeout,
                                                std::size_t& got) {
  std::chrono::milliseconds longest{0};
  const auto end = Clock::now() + 10s;
  while (got < n && Clock::now() < end) {
    const auto start = Clock::now();
    got += c.poll(timeout).size();
    longest = std::max(longest, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
  }
  return longest;
}

}  // namespace

TEST(MockPollProgress, PollZeroInALoopReads) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  std::size_t got = 0;
  const auto longest = read_with_short_polls(cons, 5, 0ms, got);
  EXPECT_EQ(got, 5u);
  EXPECT_LT(longest, 1500ms);
}

TEST(MockPollProgress, AHandshakeSlowerThanEveryPollIsTakenUpAgainUntilItCompletes) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  // Every ApiVersions answer takes 1.5 s: longer than any of the polls
  // (and than what one poll may block for, Fetcher::kMinBlockingWork).
  Fault slow;
  slow.api = ApiKey::api_versions;
  slow.delay = 1500ms;
  slow.times = 1000;
  c.inject(slow);
  // request.timeout.ms far beyond the handshakes: a connection started over
  // could only come from a poll cutting a setup or a request short.
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"request.timeout.ms", "15000"}}));
  cons.assign({t0});
  std::size_t got = 0;
  const auto longest = read_with_short_polls(cons, 5, 50ms, got);
  EXPECT_EQ(got, 5u);
  EXPECT_LT(longest, 1500ms);
  // Each connection asked ApiVersions once: none was started over.
  EXPECT_LE(c.requests(ApiKey::api_versions).size(), 2u);
  c.clear_faults();
}
