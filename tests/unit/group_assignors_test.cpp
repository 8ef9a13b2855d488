// The client-side assignors and the group settings.
#include <gtest/gtest.h>

#include <set>

#include "kwire/client/group.hpp"

using namespace kwire::client;

namespace {

MemberSubscription member(std::string id, std::vector<std::string> topics, std::vector<TopicPartition> owned = {},
                          std::int32_t generation = -1) {
  MemberSubscription m;
  m.member_id = std::move(id);
  m.topics = std::move(topics);
  m.owned = std::move(owned);
  m.generation = generation;
  return m;
}

std::vector<TopicPartition> tps(const std::string& t, std::vector<std::int32_t> ps) {
  std::vector<TopicPartition> out;
  for (auto p : ps) out.push_back({t, p});
  return out;
}

// Every partition of `counts` exactly once across the assignment.
void expect_exact_cover(const GroupAssignment& a, const std::map<std::string, std::int32_t>& counts) {
  std::multiset<TopicPartition> seen;
  for (auto& [m, v] : a) seen.insert(v.begin(), v.end());
  std::size_t total = 0;
  for (auto& [t, n] : counts) {
    total += static_cast<std::size_t>(n);
    for (std::int32_t p = 0; p < n; ++p) EXPECT_EQ(seen.count({t, p}), 1u) << t << "-" << p;
  }
  EXPECT_EQ(seen.size(), total);
}

}  // namespace

TEST(GroupAssignors, RangeMatchesJavaRangeAssignor) {
  // Java's RangeAssignor: 7 partitions over 3 members -> 3, 2, 2, per topic.
  std::vector<MemberSubscription> m{member("c", {"t1", "t2"}), member("a", {"t1", "t2"}), member("b", {"t1"})};
  std::map<std::string, std::int32_t> counts{{"t1", 7}, {"t2", 3}};
  auto a = assign_partitions(Assignor::range, m, counts);
  EXPECT_EQ(a["a"], (std::vector<TopicPartition>{{"t1", 0}, {"t1", 1}, {"t1", 2}, {"t2", 0}, {"t2", 1}}));
  EXPECT_EQ(a["b"], tps("t1", {3, 4}));
  EXPECT_EQ(a["c"], (std::vector<TopicPartition>{{"t1", 5}, {"t1", 6}, {"t2", 2}}));
  expect_exact_cover(a, counts);
}

TEST(GroupAssignors, RangeOrdersStaticMembersFirstByInstanceId) {
  auto x = member("a-dynamic", {"t"});
  auto y = member("z-static", {"t"});
  y.group_instance_id = "i1";
  auto a = assign_partitions(Assignor::range, {x, y}, {{"t", 3}});
  EXPECT_EQ(a["z-static"], tps("t", {0, 1}));
  EXPECT_EQ(a["a-dynamic"], tps("t", {2}));
}

TEST(GroupAssignors, RoundRobinDealsSortedPartitionsSkippingUnsubscribed) {
  std::vector<MemberSubscription> m{member("a", {"t1", "t2"}), member("b", {"t2"})};
  std::map<std::string, std::int32_t> counts{{"t1", 2}, {"t2", 3}};
  auto a = assign_partitions(Assignor::roundrobin, m, counts);
  // t1-0 a, t1-1 (b skipped) a, t2-0 b, t2-1 a, t2-2 b
  EXPECT_EQ(a["a"], (std::vector<TopicPartition>{{"t1", 0}, {"t1", 1}, {"t2", 1}}));
  EXPECT_EQ(a["b"], (std::vector<TopicPartition>{{"t2", 0}, {"t2", 2}}));
  expect_exact_cover(a, counts);
}

TEST(GroupAssignors, EmptyAndUnknownTopics) {
  auto a = assign_partitions(Assignor::range, {member("a", {"missing"})}, {});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a["a"].empty());
  EXPECT_TRUE(assign_partitions(Assignor::roundrobin, {}, {{"t", 3}}).empty());
}

TEST(GroupAssignors, CooperativeStickyBalancesAndKeepsOwners) {
  std::map<std::string, std::int32_t> counts{{"t", 6}};
  // First rebalance: nobody owns anything -> balanced, every partition once.
  auto first = assign_partitions(Assignor::cooperative_sticky, {member("a", {"t"}), member("b", {"t"})}, counts);
  expect_exact_cover(first, counts);
  EXPECT_EQ(first["a"].size(), 3u);
  EXPECT_EQ(first["b"].size(), 3u);
  // A third member joins: a and b keep what they may keep; the partitions
  // that must move to c are left out of this round (KIP-429).
  auto second = assign_partitions(
      Assignor::cooperative_sticky,
      {member("a", {"t"}, first["a"], 1), member("b", {"t"}, first["b"], 1), member("c", {"t"}, {}, -1)}, counts);
  EXPECT_EQ(second["a"].size(), 2u);
  EXPECT_EQ(second["b"].size(), 2u);
  EXPECT_TRUE(second["c"].empty());
  for (auto& tp : second["a"]) EXPECT_NE(std::find(first["a"].begin(), first["a"].end(), tp), first["a"].end());
  for (auto& tp : second["b"]) EXPECT_NE(std::find(first["b"].begin(), first["b"].end(), tp), first["b"].end());
  // Follow-up rebalance after the revocation: c gets the two freed partitions.
  auto third = assign_partitions(
      Assignor::cooperative_sticky,
      {member("a", {"t"}, second["a"], 2), member("b", {"t"}, second["b"], 2), member("c", {"t"}, {}, 2)}, counts);
  expect_exact_cover(third, counts);
  EXPECT_EQ(third["a"], second["a"]);
  EXPECT_EQ(third["b"], second["b"]);
  EXPECT_EQ(third["c"].size(), 2u);
}

TEST(GroupAssignors, CooperativeStickyDropsClaimsOfMembersThatLeftOrUnsubscribed) {
  std::map<std::string, std::int32_t> counts{{"t", 4}};
  // b claims t-3 but no longer subscribes to t; a's claim on t-9 does not exist.
  auto a = assign_partitions(Assignor::cooperative_sticky,
                             {member("a", {"t"}, {{"t", 0}, {"t", 9}}, 3), member("b", {"u"}, {{"t", 3}}, 3)}, counts);
  expect_exact_cover(a, counts);
  EXPECT_EQ(a["a"].size(), 4u);
}

TEST(GroupConfig, JavaNamesAndDefaults) {
  auto d = GroupConfig::from_properties({{"group.id", "g"}});
  EXPECT_EQ(d.group_id, "g");
  EXPECT_EQ(d.session_timeout_ms, 45000);
  EXPECT_EQ(d.heartbeat_interval_ms, 3000);
  EXPECT_EQ(d.max_poll_interval_ms, 300000);
  EXPECT_TRUE(d.enable_auto_commit);
  EXPECT_EQ(d.auto_commit_interval_ms, 5000);
  EXPECT_EQ(d.assignors, (std::vector<Assignor>{Assignor::range, Assignor::cooperative_sticky}));
  auto c = GroupConfig::from_properties(
      {{"group.id", "g"},
       {"group.instance.id", "i"},
       {"partition.assignment.strategy",
        "org.apache.kafka.clients.consumer.RoundRobinAssignor, range,CooperativeStickyAssignor"},
       {"session.timeout.ms", "6000"},
       {"heartbeat.interval.ms", "500"},
       {"enable.auto.commit", "FALSE"}});
  EXPECT_EQ(c.group_instance_id, std::optional<std::string>("i"));
  EXPECT_EQ(c.assignors, (std::vector<Assignor>{Assignor::roundrobin, Assignor::range, Assignor::cooperative_sticky}));
  EXPECT_EQ(c.session_timeout_ms, 6000);
  EXPECT_FALSE(c.enable_auto_commit);
  EXPECT_THROW(GroupConfig::from_properties({{"partition.assignment.strategy", "sticky-ish"}}), ConfigError);
  EXPECT_THROW(GroupConfig::from_properties({{"session.timeout.ms", "abc"}}), ConfigError);
  EXPECT_THROW(GroupConfig::from_properties({{"session.timeout.ms", "1000"}, {"heartbeat.interval.ms", "1000"}}),
               ConfigError);
  EXPECT_EQ(GroupConfig::from_properties({{"group.protocol", "CLASSIC"}}).group_id, "");
}

TEST(GroupConfig, ConsumerProtocolRejectsClassicOnlySettingsAsJavaDoes) {
  auto k = GroupConfig::from_properties({{"group.protocol", "consumer"}, {"group.remote.assignor", "range"}});
  EXPECT_EQ(k.group_protocol, GroupProtocol::consumer);
  EXPECT_EQ(k.group_remote_assignor, std::optional<std::string>("range"));
  EXPECT_THROW(GroupConfig::from_properties({{"group.protocol", "consumer"}, {"session.timeout.ms", "10000"}}),
               ConfigError);
  EXPECT_THROW(GroupConfig::from_properties({{"group.protocol", "consumer"}, {"heartbeat.interval.ms", "100"}}),
               ConfigError);
  EXPECT_THROW(
      GroupConfig::from_properties({{"group.protocol", "consumer"}, {"partition.assignment.strategy", "range"}}),
      ConfigError);
  EXPECT_THROW(GroupConfig::from_properties({{"group.protocol", "share"}}), ConfigError);
}
