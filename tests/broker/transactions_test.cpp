// Transactions on real brokers, Kafka 4.x (transactions v2) and 3.9 (the
// classic protocol). Written by Kafka's own Java producer (committed and
// aborted), read by kwire under read_committed and read_uncommitted and
// compared with what Kafka's console consumer reads under the same isolation
// level; the streaming source under read_committed ends with lag 0 (its
// position steps over the final commit marker). Written by kwire's
// transactional producer: the same reads; offsets sent to a transaction
// reach the group only when it commits; an older producer of the id is
// fenced; a producer killed inside a transaction leaves nothing of it
// visible once the id is taken up again.
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "common.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/stream.hpp"

using namespace kwire_test;

namespace {

std::multiset<std::string> values_of(const std::vector<JsonRecord>& recs) {
  std::multiset<std::string> out;
  for (auto& r : recs) out.insert(r.value.value_or("<null>"));
  return out;
}

// "t<transaction>-<i>"; built piecewise: GCC 12 at -O3 reports a false
// -Wrestrict for `"t" + std::string&&`.
std::string txn_value(int t, int i) {
  std::string value = "t";
  value += std::to_string(t);
  value += '-';
  value += std::to_string(i);
  return value;
}

std::multiset<std::string> expected(int transactions, int per, bool committed_only) {
  std::multiset<std::string> out;
  for (int t = 0; t < transactions; ++t) {
    if (committed_only && t % 3 == 1) continue;
    for (int i = 0; i < per; ++i) out.insert(txn_value(t, i));
  }
  return out;
}

kwire::client::ProducerMessage message(const std::string& topic, const std::string& value) {
  kwire::client::ProducerMessage m;
  m.topic = topic;
  m.value = kwire::protocol::Bytes(value.begin(), value.end());
  return m;
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
  // A producer of transactional.id "ktxn-<topic>" with a transaction open
  // that holds one flushed record `value`.
  std::unique_ptr<kwire::client::Producer> producer_in_transaction(const std::string& topic, const std::string& value) {
    auto p = std::make_unique<kwire::client::Producer>(txn_props(topic));
    p->init_transactions();
    p->begin_transaction();
    p->send(message(topic, value));
    p->flush();
    return p;
  }
  std::map<std::string, std::string> txn_props(const std::string& topic) const {
    return {{"bootstrap.servers", broker()}, {"transactional.id", "ktxn-" + topic}};
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

namespace {

using namespace std::chrono_literals;
using kwire::client::Producer;
using kwire::client::TopicPartition;

}  // namespace

// A commit returns once the coordinator has decided; the markers that make
// the records readable under read_committed follow: reads are retried until
// they show what is expected (15 s at most).
#define EXPECT_EVENTUALLY_EQ(expr, want)                                  \
  do {                                                                    \
    auto until_ = std::chrono::steady_clock::now() + 15s;                 \
    auto got_ = (expr);                                                   \
    while (got_ != (want) && std::chrono::steady_clock::now() < until_) { \
      std::this_thread::sleep_for(200ms);                                 \
      got_ = (expr);                                                      \
    }                                                                     \
    EXPECT_EQ(got_, (want));                                              \
  } while (0)

TEST_P(Transactions, KwireProducerTransactionsReadTheSameUnderEachIsolationLevel) {
  auto topic = unique_topic("ktxn");
  create_on_broker(topic, 2);
  const int transactions = 6, per = 10;
  Producer p({{"bootstrap.servers", broker()}, {"transactional.id", "ktxn-" + topic}});
  p.init_transactions();
  // Kafka 4.x clusters finalize transaction.version 2 (KIP-890); 3.9 has the classic protocol.
  EXPECT_EQ(p.transactions_v2(), std::string(GetParam()) == "current");
  for (int t = 0; t < transactions; ++t) {
    p.begin_transaction();
    for (int i = 0; i < per; ++i) p.send(message(topic, txn_value(t, i)));
    if (t % 3 == 1) {
      p.flush();  // in the log, then aborted
      p.abort_transaction();
    } else {
      p.commit_transaction();
    }
  }
  EXPECT_EQ(p.stats().transactions_committed, 4u);
  EXPECT_EQ(p.stats().transactions_aborted, 2u);
  p.close();
  EXPECT_EVENTUALLY_EQ(values_of(consume_on_broker(topic, {"-X", "isolation.level=read_committed"})),
                       expected(transactions, per, true));
  EXPECT_EQ(values_of(consume_on_broker(topic)), expected(transactions, per, false));
  auto java = run_kafka_tool({"console-consumer", "--bootstrap-server", broker(), "--topic", topic, "--from-beginning",
                              "--isolation-level", "read_committed", "--max-messages", "40", "--timeout-ms", "20000"});
  ASSERT_EQ(java.exit_code, 0) << java.describe();
  std::multiset<std::string> java_values;
  for (auto& line : split_lines(java.out)) java_values.insert(line);
  EXPECT_EQ(java_values, expected(transactions, per, true));
}

TEST_P(Transactions, OffsetsSentToATransactionReachTheGroupOnlyWhenItCommits) {
  auto topic = unique_topic("ktxn-offsets");
  create_on_broker(topic, 1);
  const std::string group = "g-" + topic;
  const TopicPartition tp{topic, 0};
  kwire::client::Consumer consumer({{"bootstrap.servers", broker()}, {"group.id", group}});
  consumer.assign({tp});
  Producer p({{"bootstrap.servers", broker()}, {"transactional.id", "ktxn-" + topic}});
  p.init_transactions();
  p.begin_transaction();
  p.send(message(topic, "aborted"));
  p.send_offsets_to_transaction({{tp, {5, -1, ""}}}, consumer.group_metadata());
  p.abort_transaction();
  p.begin_transaction();
  p.send(message(topic, "committed"));
  p.send_offsets_to_transaction({{tp, {7, -1, "txn"}}}, consumer.group_metadata());
  p.commit_transaction();
  kwire::client::KafkaClient client({{"bootstrap.servers", broker()}});
  kwire::client::GroupAdmin admin(client);
  auto committed = [&] {
    auto offsets = admin.committed_offsets(group, {tp});
    auto it = offsets.find(tp);
    return it == offsets.end() ? std::int64_t{-1} : it->second.offset;
  };
  // Never 5 (aborted), then 7.
  EXPECT_EVENTUALLY_EQ(committed(), std::int64_t{7});
  EXPECT_EQ(admin.committed_offsets(group, {tp}).at(tp).metadata, "txn");
  EXPECT_EVENTUALLY_EQ(values_of(consume_on_broker(topic, {"-X", "isolation.level=read_committed"})),
                       std::multiset<std::string>{"committed"});
}

TEST_P(Transactions, AnOlderProducerOfTheIdIsFenced) {
  auto topic = unique_topic("ktxn-fence");
  create_on_broker(topic, 1);
  auto older_p = producer_in_transaction(topic, "older");
  Producer& older = *older_p;
  Producer newer(txn_props(topic));
  newer.init_transactions();  // fences `older` and aborts its open transaction
  newer.begin_transaction();
  newer.send(message(topic, "newer"));
  newer.commit_transaction();
  EXPECT_THROW(older.commit_transaction(), kwire::client::ProducerFencedError);
  // Fatal: every later call says so.
  EXPECT_THROW(older.begin_transaction(), kwire::client::ProducerFencedError);
  EXPECT_EVENTUALLY_EQ(values_of(consume_on_broker(topic, {"-X", "isolation.level=read_committed"})),
                       std::multiset<std::string>{"newer"});
  EXPECT_EQ(values_of(consume_on_broker(topic)), (std::multiset<std::string>{"newer", "older"}));
}

TEST_P(Transactions, AFencedProducersNextRecordFailsTypedAndTheAbortSaysFenced) {
  auto topic = unique_topic("ktxn-fence-send");
  create_on_broker(topic, 1);
  auto older_p = producer_in_transaction(topic, "older-1");
  Producer& older = *older_p;
  Producer newer(txn_props(topic));
  newer.init_transactions();
  older.send(message(topic, "older-2"));
  if (std::string(GetParam()) == "current") {
    // Transactions v2: the broker says PRODUCER_FENCED or INVALID_PRODUCER_EPOCH; both are fencing.
    EXPECT_THROW(older.flush(), kwire::client::ProducerFencedError);
  } else {
    // The classic protocol: INVALID_PRODUCER_EPOCH makes the transaction
    // abortable (KIP-588), and the abort tells that it was fenced.
    try {
      older.flush();
      ADD_FAILURE() << "flush succeeded after the producer was fenced";
    } catch (const kwire::client::TransactionAbortableError& e) {
      EXPECT_EQ(e.code(), 47) << e.what();
      EXPECT_NE(std::string(e.what()).find("call abort_transaction()"), std::string::npos) << e.what();
    }
    EXPECT_THROW(older.abort_transaction(), kwire::client::ProducerFencedError);
  }
  EXPECT_THROW(older.begin_transaction(), kwire::client::ProducerFencedError);
}

TEST_P(Transactions, AProducerKilledInsideATransactionLeavesNothingOfItVisible) {
  auto topic = unique_topic("ktxn-kill");
  create_on_broker(topic, 1);
  const std::string id = "ktxn-" + topic;
  TempDir dir;
  {
    PipedKwire cli({"produce", "-b", broker(), "-t", topic, "--transactional-id", id}, dir.path());
    ASSERT_TRUE(cli.running());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(cli.write_line("killed-" + std::to_string(i)));
    // Written (read_uncommitted sees them), not committed: then SIGKILL.
    EXPECT_EVENTUALLY_EQ(consume_on_broker(topic).size(), std::size_t{5});
    auto open = run_kwire({"transactions", "describe", "-b", broker(), "--transactional-id", id, "--json"});
    ASSERT_EQ(open.exit_code, 0) << open.describe();
    EXPECT_NE(open.out.find("\"state\":\"Ongoing\""), std::string::npos) << open.out;
    EXPECT_NE(open.out.find("{\"topic\":\"" + topic + "\",\"partition\":0}"), std::string::npos) << open.out;
    cli.kill(SIGKILL);
  }
  // Nothing is readable under read_committed while the transaction is open.
  EXPECT_TRUE(consume_on_broker(topic, {"-X", "isolation.level=read_committed"}).empty());
  // The id taken up again: the open transaction is aborted first.
  auto again = run_kwire({"produce", "-b", broker(), "-t", topic, "--transactional-id", id}, "new-0\nnew-1\nnew-2\n");
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_NE(again.err.find("produced 3 records to '" + topic + "' in 1 transaction of '" + id + "'"), std::string::npos)
      << again.err;
  EXPECT_EVENTUALLY_EQ(values_of(consume_on_broker(topic, {"-X", "isolation.level=read_committed"})),
                       (std::multiset<std::string>{"new-0", "new-1", "new-2"}));
  EXPECT_EQ(consume_on_broker(topic).size(), 8u);
  auto listed = run_kwire({"transactions", "list", "-b", broker(), "--state", "Ongoing", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.describe();
  EXPECT_EQ(listed.out.find(id), std::string::npos) << listed.out;
  auto done = run_kwire({"transactions", "describe", "-b", broker(), "--transactional-id", id, "--json"});
  EXPECT_NE(done.out.find("\"state\":\"CompleteCommit\""), std::string::npos) << done.out;
}

TEST_P(Transactions, AnInterruptedProducerAbortsItsOpenTransaction) {
  auto topic = unique_topic("ktxn-int");
  create_on_broker(topic, 1);
  const std::string id = "ktxn-" + topic;
  TempDir dir;
  PipedKwire cli({"produce", "-b", broker(), "-t", topic, "--transactional-id", id}, dir.path());
  ASSERT_TRUE(cli.write_line("open-0"));
  EXPECT_EVENTUALLY_EQ(consume_on_broker(topic).size(), std::size_t{1});
  cli.kill(SIGINT);  // Ctrl-C: the transaction is aborted before the exit
  EXPECT_NE(read_file(dir.path() / "err").find("interrupted: the open transaction (1 record) was aborted"),
            std::string::npos)
      << read_file(dir.path() / "err");
  auto d = run_kwire({"transactions", "describe", "-b", broker(), "--transactional-id", id, "--json"});
  EXPECT_NE(d.out.find("\"state\":\"CompleteAbort\""), std::string::npos) << d.out;
  // Nothing holds read_committed readers back: a plain record is readable at once.
  ASSERT_EQ(run_kwire({"produce", "-b", broker(), "-t", topic}, "plain\n").exit_code, 0);
  EXPECT_EVENTUALLY_EQ(values_of(consume_on_broker(topic, {"-X", "isolation.level=read_committed"})),
                       std::multiset<std::string>{"plain"});
}

INSTANTIATE_TEST_SUITE_P(BothMajors, Transactions, ::testing::Values("current", "previous"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });
