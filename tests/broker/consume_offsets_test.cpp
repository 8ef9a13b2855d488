// `kwire consume -o N` across partitions of different lengths: a partition
// that does not hold offset N starts where auto.offset.reset says (latest by
// default, as kcat and the Java consumer), with a note on stderr, and the
// others are read from N; with -p naming such a partition it is an error.
#include <gtest/gtest.h>

#include <string>

#include "common.hpp"

using namespace kwire_test;

namespace {

class ConsumeOffsetsTest : public BrokerTest {};

}  // namespace

TEST_F(ConsumeOffsetsTest, AbsoluteOffsetPastAShortPartitionResetsThatPartitionOnly) {
  const std::string topic = unique_topic("short-partition");
  create_topic(topic, 2);
  auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "0"}, "a0\na1\na2\na3\na4\na5\n");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "1"}, "b0\nb1\n");
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  // Default (latest): partition 1 holds only 2 records, so it starts at its end.
  auto c = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", "4", "-e", "-f", "%p:%o:%s\\n"});
  ASSERT_EQ(c.exit_code, 0) << c.describe() << c.err;
  EXPECT_EQ(c.out, "0:4:a4\n0:5:a5\n");
  EXPECT_NE(c.err.find("Offset 4 is outside [0, 2] for " + topic + "-1: starting at 2 (auto.offset.reset=latest)"),
            std::string::npos)
      << c.err;

  // earliest: partition 1 is read from its beginning.
  auto e = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", "4", "-e", "-q", "-X",
                      "auto.offset.reset=earliest", "-f", "%p:%o:%s\\n"});
  ASSERT_EQ(e.exit_code, 0) << e.describe() << e.err;
  EXPECT_NE(e.out.find("1:0:b0\n1:1:b1\n"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("0:4:a4\n0:5:a5\n"), std::string::npos) << e.out;

  // none, or the short partition named with -p: an error naming it.
  auto none =
      run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", "4", "-e", "-q", "-X", "auto.offset.reset=none"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("offset 4 is outside [0, 2] for " + topic + "-1"), std::string::npos) << none.err;
  auto named = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-p", "1", "-o", "4", "-e", "-q"});
  EXPECT_NE(named.exit_code, 0);
  EXPECT_NE(named.err.find("offset 4"), std::string::npos) << named.err;
}
