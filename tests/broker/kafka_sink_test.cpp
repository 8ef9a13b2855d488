// The Kafka sink on a real broker: Spark's contract (rows keep key, value,
// headers and partition; the topic option overrides the row's topic), the
// exactly-once mode (one transaction per batch with the source offsets in the
// query's group; a batch committed before a crash is not written again; a
// stale copy of the query is fenced), and SIGKILL at random points of a
// Kafka -> Kafka `kwire stream` with read_committed readers finding every
// row exactly once.
// KWIRE_SINK_KILL_POINTS sets the number of SIGKILLs (kill_sweep.hpp).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../temp_dir.hpp"
#include "child_process.hpp"
#include "common.hpp"
#include "kill_sweep.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/stream.hpp"
#include "sink_support.hpp"

namespace fs = std::filesystem;
using namespace kwire;
using namespace kwire_test;
using Clock = std::chrono::steady_clock;

namespace {

std::string text(const std::optional<protocol::ByteSpan>& b) {
  return b ? std::string(reinterpret_cast<const char*>(b->data()), b->size()) : std::string("<null>");
}

// One output record: partition, key, value, headers as "k=v;" text.
using OutRecord = std::tuple<std::int32_t, std::string, std::string, std::string>;

// Every record of `topic` a reader with `isolation` sees, read to the end.
std::vector<OutRecord> read_topic(const std::string& topic, const std::string& isolation = "read_committed") {
  client::KafkaClient admin({{"bootstrap.servers", bootstrap()}});
  auto md = admin.metadata(std::vector<std::string>{topic});
  std::vector<client::TopicPartition> tps;
  for (auto& p : md.topic(topic)->partitions) tps.push_back({topic, p.partition});
  client::Consumer consumer(
      {{"bootstrap.servers", bootstrap()}, {"auto.offset.reset", "earliest"}, {"isolation.level", isolation}});
  consumer.assign(tps);
  auto ends = consumer.end_offsets(tps);
  for (auto& tp : tps) consumer.seek(tp, 0);
  std::vector<OutRecord> out;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  auto done = [&] {
    for (auto& tp : tps)
      if (consumer.position(tp) < ends.at(tp)) return false;
    return true;
  };
  while (!done() && Clock::now() < deadline)
    for (auto& r : consumer.poll(std::chrono::milliseconds(300))) {
      std::string h;
      if (r.headers)
        for (auto& hd : *r.headers)
          h += hd.key + "=" + (hd.value ? std::string(hd.value->begin(), hd.value->end()) : "<null>") + ";";
      out.emplace_back(r.partition, text(r.key), text(r.value), h);
    }
  return out;
}

// read_topic, again until it holds `want` records or 20 s pass: a commit
// returns before the transaction's markers make its records readable.
std::vector<OutRecord> read_committed_until(const std::string& topic, std::size_t want) {
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (;;) {
    auto out = read_topic(topic);
    if (out.size() >= want || Clock::now() >= deadline) return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::map<std::string, std::string> source_opts(const std::string& topic,
                                               std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> o = {{"kafka.bootstrap.servers", bootstrap()},
                                          {"subscribe", topic},
                                          {"startingOffsets", "earliest"},
                                          {"includeHeaders", "true"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

std::map<std::string, std::string> sink_opts(const std::string& topic, bool exactly_once) {
  return {{"kafka.bootstrap.servers", bootstrap()}, {"topic", topic}, {"exactlyOnce", exactly_once ? "true" : "false"}};
}

// Input values by count: value -> copies.
std::map<std::string, int> value_counts(const std::vector<OutRecord>& records) {
  std::map<std::string, int> out;
  for (auto& r : records) out[std::get<2>(r)]++;
  return out;
}

class KafkaSinkTest : public BrokerTest {};

}  // namespace

TEST_F(KafkaSinkTest, RowsKeepKeyValueHeadersAndPartitionAndTheTopicOptionOverrides) {
  const auto in = unique_topic("sink-in"), out = unique_topic("sink-out");
  create_topic(in, 3);
  create_topic(out, 3);
  produce_with_headers(in, 0, 300);
  TempDir dir;
  source::KafkaSink sink(sink_opts(out, false));
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  std::int64_t rows = 0;
  q.run([&](const source::BatchProgress& p) { rows += p.num_output_rows; });
  EXPECT_EQ(rows, 300);
  auto src = read_topic(in, "read_uncommitted");
  auto dst = read_topic(out, "read_uncommitted");
  std::sort(src.begin(), src.end());
  std::sort(dst.begin(), dst.end());
  ASSERT_EQ(dst.size(), 300u);
  EXPECT_EQ(dst, src);  // same partition, key, value and headers
  EXPECT_EQ(sink.description(), "KafkaSink[topic=" + out + "]");
}

TEST_F(KafkaSinkTest, ExactlyOnceCommitsEachBatchWithTheSourceOffsetsInTheQueryGroup) {
  const auto in = unique_topic("sink-eo-in"), out = unique_topic("sink-eo-out");
  create_topic(in, 2);
  create_topic(out, 2);
  produce_with_headers(in, 0, 400);
  TempDir dir;
  source::KafkaSink sink(sink_opts(out, true));
  source::StreamingQuery q(source_opts(in, {{"maxOffsetsPerTrigger", "150"}}), dir / "ck", sink);
  q.run();
  const std::string query_id = checkpoint::Checkpoint::open_read_only(dir / "ck").id();
  EXPECT_EQ(sink.transactional_id(), "kwire-query-" + query_id);
  auto dst = read_committed_until(out, 400);
  EXPECT_EQ(dst.size(), 400u);
  for (auto& [v, n] : value_counts(dst)) EXPECT_EQ(n, 1) << v;
  // The group holds the last batch's end offsets, with its id.
  checkpoint::Checkpoint cp = checkpoint::Checkpoint::open_read_only(dir / "ck");
  const auto last = cp.latest_commit_batch();
  ASSERT_TRUE(last.has_value());
  EXPECT_GE(*last, 2);  // 400 records at most 150 per batch
  EXPECT_EQ(sink.last_committed_batch(), *last);
  client::KafkaClient admin({{"bootstrap.servers", bootstrap()}});
  client::GroupAdmin groups(admin);
  auto committed = groups.committed_offsets(sink.transactional_id());
  std::int64_t total = 0;
  for (auto& [tp, o] : committed) {
    EXPECT_EQ(tp.topic, in);
    EXPECT_EQ(o.metadata, query_id + ":" + std::to_string(*last));
    EXPECT_EQ(o.offset, cp.read_offsets(*last).at(in).at(tp.partition));
    total += o.offset;
  }
  EXPECT_EQ(total, 400);
}

TEST_F(KafkaSinkTest, ExactlyOnceBatchCommittedBeforeACrashIsNotWrittenAgain) {
  const auto in = unique_topic("sink-eo-crash-in"), out = unique_topic("sink-eo-crash-out");
  create_topic(in, 2);
  create_topic(out, 2);  // a row keeps its partition
  produce_with_headers(in, 0, 100);
  TempDir dir;
  {
    source::KafkaSink inner(sink_opts(out, true));
    FailAfterCommit sink(inner, "crash after the transaction committed");
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    EXPECT_THROW(q.run(), std::runtime_error);
  }
  // offsets/0 written, commits/0 not: the restart replays batch 0.
  EXPECT_FALSE(checkpoint::Checkpoint::open_read_only(dir / "ck").latest_commit_batch().has_value());
  EXPECT_EQ(read_committed_until(out, 100).size(), 100u);
  produce_with_headers(in, 100, 150);
  source::KafkaSink sink(sink_opts(out, true));
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  std::vector<std::int64_t> output_rows;
  q.run([&](const source::BatchProgress& p) { output_rows.push_back(p.num_output_rows); });
  EXPECT_EQ(sink.batches_skipped(), 1);
  ASSERT_EQ(output_rows.size(), 2u);  // the replay of batch 0, then batch 1
  EXPECT_EQ(output_rows[0], 100);     // rows seen (not written again)
  EXPECT_EQ(output_rows[1], 50);
  auto dst = read_committed_until(out, 150);
  EXPECT_EQ(dst.size(), 150u);
  for (auto& [v, n] : value_counts(dst)) EXPECT_EQ(n, 1) << v;
}

TEST_F(KafkaSinkTest, ExactlyOnceStaleCopyOfTheQueryIsFencedAndItsRowsNeverVisible) {
  const auto in = unique_topic("sink-zombie-in"), out = unique_topic("sink-zombie-out");
  create_topic(in, 1);
  create_topic(out, 1);
  produce_with_headers(in, 0, 10);
  TempDir dir;
  source::KafkaSink old_sink(sink_opts(out, true));
  source::StreamingQuery old_query(source_opts(in), dir / "ck", old_sink, source::Trigger::parse("processing-time=0"));
  ASSERT_TRUE(old_query.run_once_batch().has_value());  // batch 0: 10 rows, committed
  // A copy of the checkpoint (same query id) runs on: its producer takes the
  // transactional id over.
  fs::copy(dir / "ck", dir / "ck2", fs::copy_options::recursive);
  produce_with_headers(in, 10, 20);
  {
    source::KafkaSink new_sink(sink_opts(out, true));
    source::StreamingQuery new_query(source_opts(in), dir / "ck2", new_sink);
    new_query.run();
    EXPECT_EQ(new_sink.transactional_id(), old_sink.transactional_id());
  }
  produce_with_headers(in, 20, 30);
  try {
    old_query.run_once_batch();
    FAIL() << "the stale query wrote a batch";
  } catch (const client::ProducerFencedError& e) {
    EXPECT_NE(std::string(e.what()).find(old_sink.transactional_id()), std::string::npos) << e.what();
  }
  // Fenced for good: the next batch does not take the id back.
  EXPECT_THROW(old_query.run_once_batch(), client::ProducerFencedError);
  auto dst = read_committed_until(out, 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // nothing more may come
  dst = read_topic(out);
  EXPECT_EQ(dst.size(), 20u);  // v-0..v-19: the stale batch (v-10..v-29) never became visible
  for (auto& [v, n] : value_counts(dst)) EXPECT_EQ(n, 1) << v;
  EXPECT_EQ(value_counts(dst).count("v-25"), 0u);
}

TEST_F(KafkaSinkTest, ExactlyOnceCheckpointBehindItsOutputIsRefused) {
  const auto in = unique_topic("sink-behind-in"), out = unique_topic("sink-behind-out");
  create_topic(in, 1);
  create_topic(out, 1);
  produce_with_headers(in, 0, 10);
  TempDir dir;
  {
    source::KafkaSink sink(sink_opts(out, true));
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();  // batch 0
  }
  fs::copy(dir / "ck", dir / "old", fs::copy_options::recursive);
  produce_with_headers(in, 10, 20);
  {
    source::KafkaSink sink(sink_opts(out, true));
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();  // batch 1
  }
  // The copy taken after batch 0 would plan batch 1 again over 10..20.
  produce_with_headers(in, 20, 30);
  source::KafkaSink sink(sink_opts(out, true));
  source::StreamingQuery q(source_opts(in), dir / "old", sink);
  try {
    q.run();
    FAIL() << "a stale checkpoint wrote a batch";
  } catch (const source::KafkaSinkError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the last batch this query committed to Kafka (batch 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_committed_until(out, 20).size(), 20u);
}

namespace {

// Deletes `topic` (and waits until the broker no longer lists it) before
// batch 0's commit.
class DeleteBeforeCommit : public source::Sink {
 public:
  DeleteBeforeCommit(source::Sink& inner, std::string topic) : inner_(inner), topic_(std::move(topic)) {}
  void prepare_batch(const source::BatchContext& c) override { inner_.prepare_batch(c); }
  void begin_batch(std::int64_t id) override { inner_.begin_batch(id); }
  void write(std::span<const source::Row> rows) override { inner_.write(rows); }
  std::int64_t commit_batch(std::int64_t id) override {
    if (id == 0) {
      EXPECT_TRUE(delete_topic_and_wait(topic_)) << topic_;
    }
    return inner_.commit_batch(id);
  }

 private:
  source::Sink& inner_;
  std::string topic_;
};

}  // namespace

TEST_F(KafkaSinkTest, ExactlyOnceSourceTopicDeletedUnderFailOnDataLossFalseIsLeftOutOfTheCommit) {
  // One prefix for both topics: subscribePattern (a deleted topic named by
  // `subscribe` fails the listing, as with Spark's admin-based reader).
  const auto prefix = unique_topic("sink-del");
  const auto keep = prefix + "-keep", gone = prefix + "-gone", out = unique_topic("sink-del-out");
  create_topic(keep, 2);
  create_topic(gone, 2);
  create_topic(out, 2);
  produce_with_headers(keep, 0, 50);
  produce_with_headers(gone, 50, 100);
  TempDir dir;
  auto opts = source_opts(keep, {{"failOnDataLoss", "false"}, {"subscribePattern", "^" + prefix + "-(keep|gone)$"}});
  opts.erase("subscribe");
  // Batch 0 reads both topics; `gone` is deleted before its commit, which
  // then commits the offsets of `keep` only (the group coordinator refuses
  // offsets of a deleted topic). Batch 1 goes on without `gone`.
  source::KafkaSink inner(sink_opts(out, true));
  DeleteBeforeCommit sink(inner, gone);
  source::StreamingQuery q(opts, dir / "ck", sink, source::Trigger::parse("processing-time=0"));
  auto b0 = q.run_once_batch();
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(b0->num_output_rows, 100);
  EXPECT_EQ(inner.last_committed_batch(), 0);
  produce_with_headers(keep, 100, 120);
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->num_output_rows, 20);
  EXPECT_EQ(inner.last_committed_batch(), 1);
  const std::string query_id = checkpoint::Checkpoint::open_read_only(dir / "ck").id();
  client::KafkaClient admin({{"bootstrap.servers", bootstrap()}});
  client::GroupAdmin groups(admin);
  std::int64_t total = 0;
  for (auto& [tp, o] : groups.committed_offsets("kwire-query-" + query_id)) {
    EXPECT_EQ(tp.topic, keep);
    EXPECT_EQ(o.metadata, query_id + ":1");
    total += o.offset;
  }
  EXPECT_EQ(total, 70);
  auto dst = read_committed_until(out, 120);
  EXPECT_EQ(dst.size(), 120u);
  for (auto& [v, n] : value_counts(dst)) EXPECT_EQ(n, 1) << v;
}

namespace {

// SIGKILL at random points of `kwire stream --sink kafka` (exactlyOnce as
// given), then a last run that drains the input; returns the output's value
// counts as a read_committed reader sees them, and the input row count.
std::pair<std::map<std::string, int>, int> kafka_kill_sweep(bool exactly_once, const std::string& in,
                                                            const std::string& out) {
  TempDir dir;
  const std::vector<std::string> args = {"stream",
                                         "-b",
                                         bootstrap(),
                                         "-o",
                                         "subscribe=" + in,
                                         "-o",
                                         "startingOffsets=earliest",
                                         "-o",
                                         "maxOffsetsPerTrigger=15",
                                         "--checkpoint",
                                         (dir / "ck").string(),
                                         "--sink",
                                         "kafka",
                                         "-S",
                                         "topic=" + out,
                                         "-S",
                                         exactly_once ? "exactlyOnce=true" : "exactlyOnce=false"};
  // Batches of 15 rows, about 10 ms each, back to back: a kill 20-320 ms
  // into a run with 300 new rows lands in some phase of some batch (startup,
  // inside a transaction, between its commit and commits/N, planning).
  const auto sweep = kill_sweep(args, dir / "ck", [&](int from, int to) { produce_with_headers(in, from, to); });
  return {value_counts(read_committed_until(out, static_cast<std::size_t>(sweep.produced))), sweep.produced};
}

}  // namespace

TEST_F(KafkaSinkTest, KillNineAtRandomPointsExactlyOnceForReadCommittedReaders) {
  const auto in = unique_topic("sink-kill-in"), out = unique_topic("sink-kill-out");
  create_topic(in, 3);
  create_topic(out, 3);
  auto [counts, produced] = kafka_kill_sweep(true, in, out);
  std::size_t duplicates = 0, missing = 0, rows = 0;
  for (auto& [v, n] : counts) rows += static_cast<std::size_t>(n);
  for (int i = 0; i < produced; ++i) {
    auto it = counts.find("v-" + std::to_string(i));
    if (it == counts.end()) ++missing;
    else if (it->second > 1) ++duplicates;
  }
  std::cout << fmt::format("exactly-once: {} read_committed output rows, {} missing, {} duplicated\n", rows, missing,
                           duplicates);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicates, 0u);
  EXPECT_EQ(rows, static_cast<std::size_t>(produced));
  // Uncommitted readers may see aborted transactions' records: at least once.
  auto all = value_counts(read_topic(out, "read_uncommitted"));
  std::size_t twice = 0;
  for (auto& [v, n] : all) twice += n > 1;
  std::cout << fmt::format("read_uncommitted sees {} distinct rows, {} of them more than once (aborted batches)\n",
                           all.size(), twice);
  EXPECT_EQ(all.size(), static_cast<std::size_t>(produced));
}

TEST_F(KafkaSinkTest, KillNineAtRandomPointsAtLeastOnceInTheDefaultMode) {
  const auto in = unique_topic("sink-kill-alo-in"), out = unique_topic("sink-kill-alo-out");
  create_topic(in, 3);
  create_topic(out, 3);
  auto [counts, produced] = kafka_kill_sweep(false, in, out);
  std::size_t missing = 0, twice = 0, extra = 0;
  for (int i = 0; i < produced; ++i) {
    auto it = counts.find("v-" + std::to_string(i));
    if (it == counts.end()) ++missing;
    else if (it->second > 1) {
      ++twice;
      extra += static_cast<std::size_t>(it->second - 1);
    }
  }
  std::cout << fmt::format("at-least-once: {} input rows, {} missing, {} written more than once ({} extra records)\n",
                           produced, missing, twice, extra);
  EXPECT_EQ(missing, 0u);
}

TEST_F(KafkaSinkTest, PurchasesExampleWritesItsPurchasesToATopicExactlyOnce) {
  const auto in = unique_topic("sink-purchases-in"), out = unique_topic("sink-purchases-out");
  create_topic(in, 1);
  create_topic(out, 2);
  {
    client::Producer p({{"bootstrap.servers", bootstrap()}});
    for (int i = 0; i < 50; ++i) {
      client::ProducerMessage m;
      m.topic = in;
      const std::string k = "u" + std::to_string(i);
      const std::string v = fmt::format(R"({{"user_id":{},"action":"{}","amount":{}.5,"event_ts":{}}})", i,
                                        i % 2 ? "purchase" : "view", i, 1700000000000 + i);
      m.key = protocol::Bytes(k.begin(), k.end());
      m.value = protocol::Bytes(v.begin(), v.end());
      p.send(std::move(m));
    }
    p.flush();
  }
  TempDir dir;
  auto r = run(
      join_quoted({std::string(KWIRE_BIN_DIR) + "/purchases", "--bootstrap", bootstrap(), "--topic", in, "--checkpoint",
                   (dir / "ck").string(), "--output-topic", out, "--max-offsets-per-trigger", "20"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("25 purchases written to topic " + out), std::string::npos) << r.out;
  auto records = read_committed_until(out, 25);
  ASSERT_EQ(records.size(), 25u);
  std::set<std::string> keys;
  for (auto& [partition, key, value, headers] : records) {
    const int user = std::stoi(key.substr(1));
    EXPECT_EQ(user % 2, 1) << value;
    // The source offset of user i's event is i (one partition, produced in order).
    EXPECT_EQ(headers, "source=0:" + std::to_string(user) + ";");
    EXPECT_NE(value.find(fmt::format(R"("user_id":{},"action":"purchase")", user)), std::string::npos) << value;
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), 25u);
}
