// kwire groups delete-offsets (OffsetDelete, KIP-496) against real brokers
// (Kafka 4.1 and 3.9): the committed offsets of the partitions named are
// forgotten and the others kept; while a member subscribes to the topic
// each partition is refused with GROUP_SUBSCRIBED_TO_TOPIC and the command
// fails, as Kafka's kafka-consumer-groups --delete-offsets reports it.
#include <set>

#include "group_support.hpp"

using namespace kwire_test;
using namespace kwire_test::groups;

namespace {

class GroupOffsets : public Groups {};

}  // namespace

TEST_P(GroupOffsets, DeleteOffsetsForgetsTheNamedPartitionsOnly) {
  auto topic = unique_topic("groups-del-offsets");
  auto group = topic + "-g";
  create(topic);
  produce_numbered(servers(), topic, 0, 60);
  auto consumed = run_kwire({"consume", "-b", servers(), "-G", group, "-q", "-e", topic});
  ASSERT_EQ(consumed.exit_code, 0) << consumed.describe();
  auto before = committed(servers(), group, topic);
  for (auto& [p, off] : before) ASSERT_GE(off, 0) << "partition " << p << " has no committed offset";

  auto del = run_kwire({"groups", "delete-offsets", "-b", servers(), group, "--topic", topic + ":0,3"});
  ASSERT_EQ(del.exit_code, 0) << del.describe() << del.err;
  EXPECT_NE(del.out.find("Successful"), std::string::npos) << del.out;
  auto after = committed(servers(), group, topic);
  EXPECT_EQ(after[0], -1);
  EXPECT_EQ(after[3], -1);
  for (int p : {1, 2, 4, 5}) EXPECT_EQ(after[p], before[p]) << p;

  // A member subscribed to the topic: every partition is refused.
  Seen seen;
  Member m(member_props(servers(), group), topic, seen);
  ASSERT_TRUE(wait_balanced({&m}, 6, 60s)) << m.error();
  auto busy = run_kwire({"groups", "delete-offsets", "-b", servers(), group, "--topic", topic + ":1", "--json"});
  EXPECT_EQ(busy.exit_code, 1) << busy.describe();
  EXPECT_NE(busy.out.find("\"error\":\"GROUP_SUBSCRIBED_TO_TOPIC\""), std::string::npos) << busy.out << busy.err;
  m.stop();
  EXPECT_EQ(committed(servers(), group, topic)[1], before[1]);
}

INSTANTIATE_TEST_SUITE_P(Brokers, GroupOffsets, ::testing::Values("current", "previous"),
                         [](const auto& info) { return std::string(info.param); });
