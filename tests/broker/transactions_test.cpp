// Transactions written by Kafka's own Java producer (committed and aborted),
// read by kwire under read_committed and read_uncommitted and compared with
// what Kafka's console consumer reads under the same isolation level; the
// streaming source under read_committed ends with lag 0 (its position steps
// over the final commit marker).
#include <set>

#include "common.hpp"
#include "kwire/source/stream.hpp"

using namespace kwire_test;

namespace {

std::multiset<std::string> values_of(const std::vector<JsonRecord>& recs) {
  std::multiset<std::string> out;
  for (auto& r : recs) out.insert(r.value.value_or("<null>"));
  return out;
}

std::multiset<std::string> expected(int transactions, int per, bool committed_only) {
  std::multiset<std::string> out;
  for (int t = 0; t < transactions; ++t) {
    if (committed_only && t % 3 == 1) continue;
    for (int i = 0; i < per; ++i) {
      // Built piecewise: GCC 12 at -O3 reports a false -Wrestrict for `"t" + std::string&&`.
      std::string value = "t";
      value += std::to_string(t);
      value += '-';
      value += std::to_string(i);
      out.insert(value);
    }
  }
  return out;
}

}  // namespace

// Runs against the current broker and against the previous major (3.9,
// KWIRE_BOOTSTRAP_PREVIOUS, started by scripts/test).
class Transactions : public BrokerTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::string broker() const {
    if (std::string(GetParam()) == "current") return bootstrap();
    const char* prev = std::getenv("KWIRE_BOOTSTRAP_PREVIOUS");
    return prev && *prev ? std::string(prev) : std::string();
  }
  void SetUp() override {
    BrokerTest::SetUp();
    ASSERT_FALSE(broker().empty()) << "KWIRE_BOOTSTRAP_PREVIOUS is not set (scripts/test sets it)";
    ASSERT_TRUE(tcp_reachable(broker())) << "nothing answers at " << broker();
  }
  void create_on_broker(const std::string& topic, int partitions) {
    auto r = run_kwire({"create-topic", "-b", broker(), "-t", topic, "--partitions", std::to_string(partitions)});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  std::vector<JsonRecord> consume_on_broker(const std::string& topic, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"consume", "-b", broker(), "-t", topic, "-e", "-q", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_kwire(args);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return parse_json_records(r.out);
  }
  void produce_transactions(const std::string& topic, int transactions, int per) {
    auto cp = run(shell_quote(source_dir() + "/scripts/kafka") + " classpath");
    ASSERT_EQ(cp.exit_code, 0) << cp.describe();
    std::string classpath = cp.out.substr(0, cp.out.find('\n'));
    auto r =
        run("java -cp " + shell_quote(classpath) + " " + shell_quote(source_dir() + "/tests/java/TxnProducer.java") +
                " " + join_quoted({broker(), topic, "txn-" + topic, std::to_string(transactions), std::to_string(per)}),
            {}, 180);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_NE(r.out.find("committed " + std::to_string(per * (transactions - transactions / 3)) + " aborted"),
              std::string::npos)
        << r.out;
  }
};

TEST_P(Transactions, ReadCommittedSkipsAbortedLikeKafkasConsoleConsumer) {
  auto topic = unique_topic("txn");
  create_on_broker(topic, 2);
  const int transactions = 6, per = 10;
  produce_transactions(topic, transactions, per);

  auto uncommitted = consume_on_broker(topic);
  EXPECT_EQ(values_of(uncommitted), expected(transactions, per, false));
  auto committed = consume_on_broker(topic, {"-X", "isolation.level=read_committed"});
  EXPECT_EQ(values_of(committed), expected(transactions, per, true));

  // Offsets: transaction markers take offsets, so the log end is beyond the
  // record count; read_committed never returns a marker.
  std::int64_t max_offset = -1;
  for (auto& r : uncommitted) max_offset = std::max<std::int64_t>(max_offset, r.offset);
  EXPECT_GE(max_offset, 0);

  // Kafka's own console consumer under each isolation level reads the same.
  for (std::string level : {"read_committed", "read_uncommitted"}) {
    auto java = run_kafka_tool({"console-consumer", "--bootstrap-server", broker(), "--topic", topic,
                                "--from-beginning", "--isolation-level", level, "--max-messages",
                                std::to_string(level == "read_committed" ? 40 : 60), "--timeout-ms", "20000"});
    ASSERT_EQ(java.exit_code, 0) << java.describe();
    std::multiset<std::string> java_values;
    for (auto& line : split_lines(java.out)) java_values.insert(line);
    EXPECT_EQ(java_values, level == "read_committed" ? values_of(committed) : values_of(uncommitted)) << level;
  }
}

TEST_P(Transactions, StreamUnderReadCommittedEndsWithZeroLag) {
  auto topic = unique_topic("txn-stream");
  create_on_broker(topic, 2);
  produce_transactions(topic, 6, 10);
  TempDir dir;
  kwire::source::JsonLinesSink sink(dir / "out");
  std::map<std::string, std::string> options{{"kafka.bootstrap.servers", broker()},
                                             {"subscribe", topic},
                                             {"startingOffsets", "earliest"},
                                             {"kafka.isolation.level", "read_committed"},
                                             {"maxOffsetsPerTrigger", "25"}};
  std::vector<kwire::source::BatchProgress> progress;
  kwire::source::StreamingQuery q(options, dir / "ck", sink);
  q.run([&](const kwire::source::BatchProgress& p) { progress.push_back(p); });
  ASSERT_FALSE(progress.empty());
  std::int64_t rows = 0;
  for (auto& p : progress) {
    rows += p.num_input_rows;
    ASSERT_TRUE(p.lag.has_value());
    EXPECT_GE(p.lag->min_offsets_behind_latest, 0);
  }
  EXPECT_EQ(rows, 40);
  EXPECT_EQ(progress.back().lag->max_offsets_behind_latest, 0);
  EXPECT_EQ(progress.back().lag->min_offsets_behind_latest, 0);
  // The checkpoint's end is the log end offset (commit marker included).
  auto end = progress.back().end_offsets.at(topic);
  auto offsets = run_kwire({"offsets", "-b", broker(), "-t", topic, "--json"});
  ASSERT_EQ(offsets.exit_code, 0) << offsets.describe();
  for (auto& [p, off] : end)
    EXPECT_NE(
        offsets.out.find("\"partition\":" + std::to_string(p) + ",\"earliest\":0,\"latest\":" + std::to_string(off)),
        std::string::npos)
        << offsets.out;
}

INSTANTIATE_TEST_SUITE_P(BothMajors, Transactions, ::testing::Values("current", "previous"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });
