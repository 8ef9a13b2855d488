// Follower fetching (KIP-392) on the fake cluster: client.rack in Fetch, the
// leader's preferred_read_replica honoured, and the ways back to the leader
// the Java consumer takes (an error or OFFSET_OUT_OF_RANGE from the follower,
// metadata.max.age.ms passing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "fetcher_fake_cluster.hpp"
#include "kwire/client/fetcher.hpp"

using namespace kwire_test;

namespace {

constexpr std::int32_t kLeader = 1;
constexpr std::int32_t kFollower = 3;

ClientConfig rack_config(const std::string& rack) {
  auto c = config();
  c.client_rack = rack;
  return c;
}

// The leader's answer when it names a follower: no records, the replica id.
void name_follower(FetchResponse& r, std::int32_t replica) {
  auto& p = r.responses.front().partitions.front();
  p.records.data.reset();
  p.preferred_read_replica = replica;
}

std::vector<std::int32_t> nodes(const FakeCluster& c) {
  std::vector<std::int32_t> out;
  for (auto& f : c.fetches) out.push_back(f.node);
  return out;
}

}  // namespace

TEST(FetcherFollower, SendsClientRackAndReadsFromTheFollowerTheLeaderNames) {
  FakeCluster c;
  c.append(A, 5);
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    if (node == kLeader) name_follower(r, kFollower);
  };
  Fetcher f(c, rack_config("rack3"), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 5, 200ms), range(0, 0, 5));
  ASSERT_GE(c.fetches.size(), 2u);
  EXPECT_EQ(c.fetches[0].node, kLeader);
  EXPECT_EQ(c.fetches[0].request.rack_id, "rack3");
  EXPECT_EQ(c.fetches[1].node, kFollower);
  EXPECT_EQ(asked(c.fetches[1].request).at(A), 0);  // the leader's empty answer moved nothing
  EXPECT_EQ(f.read_replica(A), kFollower);
  ASSERT_TRUE(f.last_fetch_info(A));
  EXPECT_EQ(f.last_fetch_info(A)->node, kFollower);
  // Later records come from the follower too.
  c.append(A, 2);
  EXPECT_EQ(poll_for(f, 2, 200ms), range(0, 5, 7));
  EXPECT_EQ(c.fetches.back().node, kFollower);
}

TEST(FetcherFollower, WithoutClientRackTheRackIdIsEmptyAndTheLeaderServes) {
  FakeCluster c;
  c.append(A, 3);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 3, 200ms), range(0, 0, 3));
  EXPECT_EQ(c.fetches.front().request.rack_id, "");
  for (auto n : nodes(c)) EXPECT_EQ(n, kLeader);
  EXPECT_FALSE(f.read_replica(A));
  EXPECT_EQ(f.last_fetch_info(A)->node, kLeader);
}

TEST(FetcherFollower, OffsetOutOfRangeFromALaggingFollowerGoesBackToTheLeaderWithoutAReset) {
  FakeCluster c;
  c.append(A, 4);
  int named = 0;
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    auto& p = r.responses.front().partitions.front();
    if (node == kLeader && named++ == 0) name_follower(r, kFollower);
    if (node == kFollower) {
      // The follower has not replicated offset 0.. yet as far as it knows.
      p.records.data.reset();
      p.error_code = static_cast<std::int16_t>(ErrorCode::offset_out_of_range);
    }
  };
  // auto.offset.reset=none: an out-of-range answer from the leader would
  // raise; from the follower it only sends the partition back.
  Fetcher f(c, rack_config("rack3"), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 4, 200ms), range(0, 0, 4));
  auto n = nodes(c);
  ASSERT_GE(n.size(), 3u);
  EXPECT_EQ(std::vector<std::int32_t>(n.begin(), n.begin() + 3),
            (std::vector<std::int32_t>{kLeader, kFollower, kLeader}));
  EXPECT_EQ(asked(c.fetches[2].request).at(A), 0);
  EXPECT_FALSE(f.read_replica(A));
  EXPECT_EQ(f.position(A), 4);
}

TEST(FetcherFollower, AnErrorFromTheFollowerSendsThePartitionBackToTheLeader) {
  FakeCluster c;
  c.append(A, 3);
  int named = 0;
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    auto& p = r.responses.front().partitions.front();
    if (node == kLeader && named++ == 0) name_follower(r, kFollower);
    if (node == kFollower) {
      p.records.data.reset();
      p.error_code = static_cast<std::int16_t>(ErrorCode::not_leader_or_follower);
    }
  };
  Fetcher f(c, rack_config("rack3"), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 3, 200ms), range(0, 0, 3));
  auto n = nodes(c);
  ASSERT_GE(n.size(), 3u);
  EXPECT_EQ(n[1], kFollower);
  EXPECT_EQ(n[2], kLeader);
  EXPECT_GE(c.refreshes, 1);
  EXPECT_FALSE(f.read_replica(A));
}

TEST(FetcherFollower, TheLeaderIsAskedAgainOnceMetadataMaxAgeHasPassed) {
  FakeCluster c;
  c.append(A, 2);
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    if (node == kLeader) name_follower(r, kFollower);
  };
  auto cfg = rack_config("rack3");
  cfg.metadata_max_age_ms = 150;
  Fetcher f(c, cfg, OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 2, 50ms), range(0, 0, 2));
  const auto before = c.fetches.size();
  EXPECT_EQ(c.fetches.back().node, kFollower);
  std::this_thread::sleep_for(200ms);
  c.append(A, 2);
  EXPECT_EQ(poll_for(f, 2, 50ms), range(0, 2, 4));
  c.append(A, 2);
  EXPECT_EQ(poll_for(f, 2, 50ms), range(0, 4, 6));
  // After the expiry: the leader once, and then the follower it named again.
  const auto n = nodes(c);
  const std::vector<std::int32_t> later(n.begin() + static_cast<std::ptrdiff_t>(before), n.end());
  auto leader_at = std::find(later.begin(), later.end(), kLeader);
  ASSERT_NE(leader_at, later.end()) << ::testing::PrintToString(n);
  EXPECT_NE(std::find(leader_at, later.end(), kFollower), later.end()) << ::testing::PrintToString(n);
  EXPECT_EQ(f.read_replica(A), kFollower);
}

TEST(FetcherFollower, AFollowerThatCannotBeReachedSendsThePartitionBackToTheLeader) {
  FakeCluster c;
  c.append(A, 3);
  int named = 0;
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    if (node == kLeader && named++ == 0) name_follower(r, kFollower);
  };
  c.unreachable.insert(kFollower);
  Fetcher f(c, rack_config("rack3"), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(poll_for(f, 3, 200ms), range(0, 0, 3));
  for (auto n : nodes(c)) EXPECT_EQ(n, kLeader);  // the follower never got a request
  EXPECT_FALSE(f.read_replica(A));
}

// A follower that stays behind: every round trip (the leader names it, it
// answers OFFSET_OUT_OF_RANGE) is followed by the client's back-off, so the
// client does not spin on the two brokers.
TEST(FetcherFollower, ALaggingFollowerIsAskedAgainOnlyAfterABackOff) {
  FakeCluster c;
  c.append(A, 3);
  c.edit = [&](std::int32_t node, FetchResponse& r) {
    auto& p = r.responses.front().partitions.front();
    if (node == kLeader) name_follower(r, kFollower);
    if (node == kFollower) {
      p.records.data.reset();
      p.error_code = static_cast<std::int16_t>(ErrorCode::offset_out_of_range);
    }
  };
  auto cfg = rack_config("rack3");
  cfg.retry_backoff_ms = 20;
  cfg.retry_backoff_max_ms = 1000;
  Fetcher f(c, cfg, OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 400ms) EXPECT_TRUE(f.poll(50ms, 100).empty());
  // One leader/follower round trip per back-off (16..24 ms): at most about
  // 25 rounds in 400 ms; without a back-off it is thousands.
  const auto n = nodes(c);
  std::printf("Fetch requests in 400 ms with a lagging follower: %zu\n", n.size());
  EXPECT_LE(n.size(), 60u);
  EXPECT_GE(n.size(), 10u);
  for (std::size_t i = 0; i < n.size(); ++i) EXPECT_EQ(n[i], i % 2 == 0 ? kLeader : kFollower) << i;
  EXPECT_EQ(f.position(A), 0);
}
