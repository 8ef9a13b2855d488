// Incremental fetch sessions (KIP-227) against the mock cluster: a session is
// opened and used, and when the broker forgets it (FETCH_SESSION_ID_NOT_FOUND)
// or an epoch goes wrong the client falls back to a full fetch that opens a
// new session, losing and repeating nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "kwire/client/consumer.hpp"
#include "kwire/mock/mock_cluster.hpp"

using namespace std::chrono_literals;
using kwire::client::Consumer;
using kwire::mock::MockCluster;

namespace {

std::map<std::string, std::string> props(const MockCluster& c) {
  return {{"bootstrap.servers", c.bootstrap_servers()},
          {"fetch.max.wait.ms", "20"},
          {"retry.backoff.ms", "20"},
          {"request.timeout.ms", "3000"},
          {"auto.offset.reset", "earliest"},
          {"max.partition.fetch.bytes", "200"}};  // a few batches per fetch: many fetches
}

void poll_into(Consumer& c, std::multiset<std::string>& seen, std::size_t until) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (seen.size() < until && std::chrono::steady_clock::now() < deadline)
    for (auto& r : c.poll(100ms)) seen.insert(std::string(r.value_view()));
}

}  // namespace

TEST(MockFetchSession, SessionIsOpenedUsedAndReopenedAfterEviction) {
  MockCluster cluster(1);
  cluster.enable_fetch_sessions(true);
  cluster.create_topic("s", 2);
  cluster.append_values("s", 0, 30, 5, "a");
  cluster.append_values("s", 1, 30, 5, "b");
  Consumer c(props(cluster));
  c.assign({{"s", 0}, {"s", 1}});
  std::multiset<std::string> seen;
  poll_into(c, seen, 60);
  ASSERT_EQ(seen.size(), 60u);
  auto first = c.fetch_session(1);
  ASSERT_TRUE(first.has_value());
  EXPECT_GT(first->second, 1);  // incremental fetches happened
  EXPECT_EQ(cluster.fetch_sessions_opened(1), 1);

  // The broker forgets the session: the next fetch fails with
  // FETCH_SESSION_ID_NOT_FOUND, the client opens a new one and goes on.
  cluster.evict_fetch_sessions(1);
  cluster.append_values("s", 0, 10, 5, "c");
  cluster.append_values("s", 1, 10, 5, "d");
  poll_into(c, seen, 80);
  EXPECT_EQ(seen.size(), 80u);
  EXPECT_EQ(cluster.fetch_sessions_opened(1), 2);
  auto second = c.fetch_session(1);
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->first, first->first);
  // No value twice.
  for (auto& v : seen) EXPECT_EQ(seen.count(v), 1u) << v;
}

TEST(MockFetchSession, PausedPartitionIsForgottenAndResumedLater) {
  MockCluster cluster(1);
  cluster.enable_fetch_sessions(true);
  cluster.create_topic("p", 2);
  cluster.append_values("p", 0, 20, 5, "x");
  cluster.append_values("p", 1, 20, 5, "y");
  Consumer c(props(cluster));
  c.assign({{"p", 0}, {"p", 1}});
  c.pause({{"p", 1}});
  std::multiset<std::string> seen;
  poll_into(c, seen, 20);
  ASSERT_EQ(seen.size(), 20u);
  for (auto& v : seen) EXPECT_EQ(v[0], 'x') << v;  // nothing from the paused partition
  c.resume({{"p", 1}});
  poll_into(c, seen, 40);
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(cluster.fetch_sessions_opened(1), 1);  // one session throughout
}

// A broker that cuts data at max.partition.fetch.bytes inside a batch (before
// KIP-74): the client asks again for the whole batch; a batch above
// fetch.max.bytes is a clear error naming its size.
TEST(MockFetchSize, BatchAboveMaxPartitionFetchBytesIsFetchedWhole) {
  MockCluster cluster(1);
  cluster.set_strict_fetch_size(true);
  cluster.create_topic("big", 1);
  cluster.append_values("big", 0, 40, 20, "value-with-some-length-");  // two batches of 20 records
  auto p = props(cluster);
  p["max.partition.fetch.bytes"] = "100";  // smaller than one batch
  Consumer c(p);
  c.assign({{"big", 0}});
  std::multiset<std::string> seen;
  poll_into(c, seen, 40);
  EXPECT_EQ(seen.size(), 40u);

  auto small = props(cluster);
  small["max.partition.fetch.bytes"] = "100";
  small["fetch.max.bytes"] = "120";
  Consumer d(small);
  d.assign({{"big", 0}});
  try {
    for (int i = 0; i < 20; ++i) (void)d.poll(100ms);
    FAIL() << "expected an error about the batch size";
  } catch (const kwire::client::ClientError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("above fetch.max.bytes (120)"), std::string::npos) << what;
    EXPECT_NE(what.find("big-0"), std::string::npos) << what;
  }
}
