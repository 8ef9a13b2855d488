// Real-broker tests of where the streaming query follows Spark 4.2's
// micro-batch execution: an empty batch 0 for a new query, the conf map of
// offsets/N, AvailableNow lag against the prefetched end, an assigned
// partition that does not exist, the readers' group in
// COULD_NOT_READ_OFFSET_RANGE, Scala's Set(...) in the startingOffsets
// assertion, retried offset look-ups, and the example job over SASL_SSL
// with null fields left out of its JSON output.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/stream.hpp"

namespace fs = std::filesystem;
using namespace kwire;
using namespace kwire_test;

namespace {

void make_topic(const std::string& topic, int partitions) {
  client::KafkaClient c({{"bootstrap.servers", bootstrap()}});
  c.create_topics({{topic, partitions, 1, {}}});
}

void send(const std::string& topic, int partition, int from, int to, const std::string& prefix = "v-") {
  client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (int i = from; i < to; ++i) {
    client::ProducerMessage m;
    m.topic = topic;
    m.partition = partition;
    const std::string v = prefix + std::to_string(i);
    m.value = protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
  p.flush();
}

std::map<std::string, std::string> opts(const std::string& topic, const std::string& starting = "earliest") {
  return {{"kafka.bootstrap.servers", bootstrap()}, {"subscribe", topic}, {"startingOffsets", starting}};
}

// Line `n` (0-based) of a file.
std::string line_of(const fs::path& p, std::size_t n) {
  auto lines = split_lines(read_file(p));
  return n < lines.size() ? lines[n] : std::string();
}

class StreamParity : public BrokerTest {};

}  // namespace

// Item: a new query at latest runs and commits an empty batch 0 (end = start)
// with lag 0, so its batch ids match Spark's; the first data is batch 1.
TEST_F(StreamParity, NewQueryAtLatestCommitsAnEmptyBatchZero) {
  auto topic = unique_topic("sp-batch0");
  make_topic(topic, 2);
  send(topic, 0, 0, 7);
  TempDir dir;
  auto ck = dir / "ck";
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "--trigger", "available-now",
                      "--checkpoint", ck.string(), "--sink", "jsonl:" + (dir / "out").string(), "--json-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(line_of(ck / "offsets" / "0", 2), fmt::format(R"({{"{}":{{"0":7,"1":0}}}})", topic));
  EXPECT_TRUE(fs::exists(ck / "commits" / "0"));
  auto logged = split_lines(read_file(ck / "progress.jsonl"));
  ASSERT_EQ(logged.size(), 1u);
  simdjson::dom::parser parser;
  simdjson::dom::element p = parser.parse(logged[0]);
  EXPECT_EQ(std::int64_t(p["batchId"].get_int64()), 0);
  EXPECT_EQ(std::int64_t(p["numInputRows"].get_int64()), 0);
  simdjson::dom::element m = p["sources"].at(0)["metrics"];
  EXPECT_EQ(std::string_view(m["maxOffsetsBehindLatest"].get_string()), "0");
  EXPECT_EQ(std::string_view(m["avgOffsetsBehindLatest"].get_string()), "0.0");
  EXPECT_TRUE(read_file(dir / "out" / "part-00000000000000000000.jsonl").empty());

  // Run again with nothing new: no batch. Then new records are batch 1.
  r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "--trigger", "available-now", "--checkpoint",
                 ck.string(), "--sink", "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(fs::exists(ck / "offsets" / "1"));
  send(topic, 1, 0, 3);
  r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "--trigger", "available-now", "--checkpoint",
                 ck.string(), "--sink", "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(line_of(ck / "offsets" / "1", 2), fmt::format(R"({{"{}":{{"0":7,"1":3}}}})", topic));
  EXPECT_EQ(split_lines(read_file(dir / "out" / "part-00000000000000000001.jsonl")).size(), 3u);
}

// Item: offsets/N carries the conf map Spark 4.2 writes, with a default
// session's values.
TEST_F(StreamParity, OffsetsLogCarriesSparksConfMap) {
  auto topic = unique_topic("sp-conf");
  make_topic(topic, 1);
  send(topic, 0, 0, 3);
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  source::StreamingQuery q(opts(topic), dir / "ck", sink);
  ASSERT_TRUE(q.run_once_batch());
  auto meta = line_of(dir / "ck" / "offsets" / "0", 1);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(meta);
  EXPECT_EQ(std::int64_t(doc["batchWatermarkMs"].get_int64()), 0);
  EXPECT_GT(std::int64_t(doc["batchTimestampMs"].get_int64()), 0);
  simdjson::dom::object conf = doc["conf"].get_object();
  // Every key Spark 4.2 reads back from the offset log, with a default
  // session's value (the real-Spark tests check that Spark resumes without
  // a missing-key warning).
  const auto& want = checkpoint::spark_offset_log_conf();
  EXPECT_EQ(want.size(), 15u);
  EXPECT_EQ(want.at("spark.sql.shuffle.partitions"), "200");
  EXPECT_EQ(want.at("spark.sql.streaming.multipleWatermarkPolicy"), "min");
  std::map<std::string, std::string> got;
  for (auto field : conf) got[std::string(field.key)] = std::string(std::string_view(field.value.get_string()));
  EXPECT_EQ(got, want);
}

// Item: AvailableNow reports every batch's lag and latestOffset against the
// end fixed at the start of the run, though records keep arriving.
TEST_F(StreamParity, AvailableNowLagIsAgainstThePrefetchedEnd) {
  auto topic = unique_topic("sp-an-lag");
  make_topic(topic, 1);
  send(topic, 0, 0, 30);
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  auto o = opts(topic);
  o["maxOffsetsPerTrigger"] = "10";
  std::vector<source::BatchProgress> seen;
  source::StreamingQuery q(o, dir / "ck", sink, source::Trigger::parse("available-now"));
  q.run([&](const source::BatchProgress& p) {
    seen.push_back(p);
    if (seen.size() == 1) send(topic, 0, 30, 130);
  });
  ASSERT_EQ(seen.size(), 3u);
  const std::int64_t behind[] = {20, 10, 0};
  for (std::size_t i = 0; i < seen.size(); ++i) {
    ASSERT_TRUE(seen[i].lag) << i;
    EXPECT_EQ(seen[i].lag->max_offsets_behind_latest, behind[i]) << i;
    EXPECT_EQ(seen[i].latest_offsets, (source::PartitionOffsets{{topic, {{0, 30}}}})) << i;
  }
  // The progress log says the same.
  auto logged = split_lines(read_file(dir / "ck" / "progress.jsonl"));
  ASSERT_EQ(logged.size(), 3u);
  EXPECT_NE(logged[2].find(fmt::format(R"("latestOffset":{{"{}":{{"0":30}}}})", topic)), std::string::npos)
      << logged[2];
  EXPECT_NE(logged[2].find(R"("maxOffsetsBehindLatest":"0")"), std::string::npos) << logged[2];
}

// Item: `assign` naming a partition the topic does not have reads the others
// (Spark's AssignStrategy keeps the partitions that exist); a missing topic
// still fails, after fetchOffset.numRetries attempts.
TEST_F(StreamParity, AssignLeavesOutAMissingPartitionButFailsOnAMissingTopic) {
  auto topic = unique_topic("sp-assign");
  make_topic(topic, 1);
  send(topic, 0, 0, 3);
  TempDir dir;
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", R"(assign={")" + topic + R"(":[0,7]})", "-o",
                      "startingOffsets=earliest", "--trigger", "available-now", "--checkpoint", (dir / "ck").string(),
                      "--sink", "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(split_lines(read_file(dir / "out" / "part-00000000000000000000.jsonl")).size(), 3u);
  EXPECT_EQ(line_of(dir / "ck" / "offsets" / "0", 2), fmt::format(R"({{"{}":{{"0":3}}}})", topic));

  auto missing =
      run_kwire({"stream", "-b", bootstrap(), "-o", R"(assign={")" + topic + R"(":[0],"kwire-no-such-topic":[0]})",
                 "-o", "startingOffsets=earliest", "-o", "fetchOffset.retryIntervalMs=200", "--checkpoint",
                 (dir / "ck2").string(), "--sink", "jsonl:" + (dir / "out2").string()});
  EXPECT_NE(missing.exit_code, 0) << missing.describe();
  EXPECT_NE(missing.err.find("This server does not host this topic-partition. (assigned topic "
                             "'kwire-no-such-topic', UNKNOWN_TOPIC_OR_PARTITION)"),
            std::string::npos)
      << missing.err;
  EXPECT_NE(missing.err.find("attempt 2 of 3"), std::string::npos) << missing.err;
  EXPECT_GE(missing.seconds, 0.4);
  EXPECT_FALSE(fs::exists(dir / "ck2" / "sources" / "0" / "0"));
}

// Item: a subscribe to a missing topic is retried fetchOffset.numRetries
// times, fetchOffset.retryIntervalMs apart, before the query fails.
TEST_F(StreamParity, OffsetLookUpsAreRetriedBeforeFailing) {
  TempDir dir;
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=kwire-no-such-topic-sp", "-o",
                      "fetchOffset.numRetries=4", "-o", "fetchOffset.retryIntervalMs=300", "--checkpoint",
                      (dir / "ck").string(), "--sink", "jsonl:" + (dir / "out").string()});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("attempt 3 of 4"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("attempt 4 of 4"), std::string::npos) << r.err;  // the last attempt's error is the failure
  EXPECT_GE(r.seconds, 0.9);
}

// Item: a startingOffsets JSON that leaves a partition out fails with Spark's
// assertion text, the sets printed as Scala does.
TEST_F(StreamParity, StartingOffsetsMissingAPartitionListsScalaSets) {
  auto topic = unique_topic("sp-set");
  make_topic(topic, 2);
  TempDir dir;
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o",
                      fmt::format(R"(startingOffsets={{"{}":{{"0":0}}}})", topic), "--checkpoint",
                      (dir / "ck").string(), "--sink", "jsonl:" + (dir / "out").string()});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find(fmt::format("assertion failed: If startingOffsets contains specific offsets, you must specify "
                                   "all TopicPartitions.\nUse -1 for latest, -2 for earliest, if you don't care.\n"
                                   "Specified: Set({0}-0) Assigned: Set({0}-0, {0}-1)",
                                   topic)),
            std::string::npos)
      << r.err;
}

// Item: COULD_NOT_READ_OFFSET_RANGE names the group Spark's readers use: the
// generated spark-kafka-source-<uuid>-<hash>-executor, or kafka.group.id.
TEST_F(StreamParity, CouldNotReadOffsetRangeNamesTheReadersGroup) {
  for (bool with_group : {false, true}) {
    auto topic = unique_topic("sp-group");
    make_topic(topic, 1);
    send(topic, 0, 0, 5);
    TempDir dir;
    auto o = opts(topic);
    if (with_group) o["kafka.group.id"] = "sp-readers";
    source::JsonLinesSink sink(dir / "out");
    const auto trigger = source::Trigger::parse("processing-time=1 second");
    {
      source::StreamingQuery first(o, dir / "ck", sink, trigger);
      ASSERT_TRUE(first.run_once_batch());
    }
    send(topic, 0, 5, 10);
    client::KafkaClient admin({{"bootstrap.servers", bootstrap()}});
    admin.delete_records({{client::TopicPartition{topic, 0}, 8}});
    source::StreamingQuery q(o, dir / "ck", sink, trigger);
    try {
      q.run_once_batch();
      FAIL() << "expected COULD_NOT_READ_OFFSET_RANGE";
    } catch (const source::DataLossError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Could not read records in offset [5, 10) for topic partition " + topic + "-0"),
                std::string::npos)
          << what;
      if (with_group) {
        EXPECT_NE(what.find("with consumer group sp-readers."), std::string::npos) << what;
      } else {
        const std::string path = "file:" + fs::absolute(dir / "ck").lexically_normal().string() + "/sources/0";
        EXPECT_NE(what.find("with consumer group spark-kafka-source-"), std::string::npos) << what;
        EXPECT_NE(what.find(fmt::format("-{}-executor.", source::java_string_hash(path))), std::string::npos)
            << what << " / " << path;
      }
    }
  }
}

// Item: the example job takes client properties like the CLI's -X (here a
// SASL_SSL listener) and runs without a rate limit; its JSON output, like
// every JSON Lines sink, leaves null fields out.
class StreamParitySecure : public SecureBrokerTest {};

TEST_F(StreamParitySecure, PurchasesRunsOverSaslSslWithoutARateLimit) {
  auto topic = unique_topic("sp-purchases");
  make_topic(topic, 1);
  {
    client::Producer p({{"bootstrap.servers", bootstrap()}});
    for (int i = 0; i < 50; ++i) {
      client::ProducerMessage m;
      m.topic = topic;
      m.partition = 0;
      const std::string v = fmt::format(R"({{"user_id":{},"action":"{}","amount":{}.5,"event_ts":{}}})", i,
                                        i % 2 ? "purchase" : "view", i, 1700000000000 + i);
      m.value = protocol::Bytes(v.begin(), v.end());
      p.send(std::move(m));
    }
    p.flush();
  }
  TempDir dir;
  std::vector<std::string> args{std::string(KWIRE_BIN_DIR) + "/purchases",
                                "--bootstrap",
                                addr("KWIRE_SECURE_SASL_SSL_PORT"),
                                "--topic",
                                topic,
                                "--checkpoint",
                                (dir / "ck").string(),
                                "--output",
                                (dir / "out").string(),
                                "--max-offsets-per-trigger",
                                "none",
                                "-X",
                                "security.protocol=SASL_SSL",
                                "-X",
                                "sasl.mechanism=SCRAM-SHA-512",
                                "-X",
                                "sasl.username=" + env_.at("KWIRE_SECURE_USER"),
                                "-X",
                                "sasl.password=" + env_.at("KWIRE_SECURE_PASSWORD"),
                                "-X",
                                "ssl.ca.location=" + env_.at("KWIRE_SECURE_CA")};
  auto r = run(join_quoted(args));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // No rate limit: one batch reads all 50 and keeps the 25 purchases.
  EXPECT_NE(r.out.find("done: 1 batches, 50 rows read, 25 purchases written"), std::string::npos) << r.out;
  EXPECT_EQ(split_lines(read_file(dir / "out" / "part-00000000000000000000.jsonl")).size(), 25u);
  // Without -X the SASL_SSL listener refuses the plaintext client.
  auto plain =
      run(join_quoted({std::string(KWIRE_BIN_DIR) + "/purchases", "--bootstrap", addr("KWIRE_SECURE_SASL_SSL_PORT"),
                       "--topic", topic, "--checkpoint", (dir / "ck2").string(), "--output", (dir / "out2").string(),
                       "-X", "request.timeout.ms=3000", "-X", "retries=0"}),
          {}, 60);
  EXPECT_NE(plain.exit_code, 0) << plain.describe();
  auto bad = run(join_quoted({std::string(KWIRE_BIN_DIR) + "/purchases", "--checkpoint", (dir / "ck3").string(),
                              "--output", (dir / "out3").string(), "-X", "novalue"}));
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_NE(bad.err.find("-X expects KEY=VALUE, got 'novalue'"), std::string::npos) << bad.err;
}
