// Real-broker tests of the streaming query's features: minOffsetsPerTrigger /
// maxTriggerDelay, triggers, subscribePattern discovery, restart with changed
// starting options, progress (JSON log and Prometheus file), JSON value
// decoding, --plan-only and read-range.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "../manual_clock.hpp"
#include "common.hpp"
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

// Sends `values` to one partition of `topic`.
void send(const std::string& topic, int partition, const std::vector<std::string>& values) {
  client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (auto& v : values) {
    client::ProducerMessage m;
    m.topic = topic;
    m.partition = partition;
    m.value = protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
  p.flush();
}

std::vector<std::string> numbered(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("v-" + std::to_string(i));
  return out;
}

std::map<std::string, std::string> opts(const std::string& topic) {
  return {{"kafka.bootstrap.servers", bootstrap()}, {"subscribe", topic}, {"startingOffsets", "earliest"}};
}

// All lines of every part file of a JsonLinesSink folder, in batch order.
std::vector<std::string> sink_lines(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (auto& f : files)
    for (auto& l : split_lines(read_file(f))) out.push_back(l);
  return out;
}

std::int64_t total_rows(const std::vector<source::BatchProgress>& batches) {
  std::int64_t n = 0;
  for (auto& b : batches) n += b.num_input_rows;
  return n;
}

class StreamFeatures : public BrokerTest {};

}  // namespace

TEST_F(StreamFeatures, MinOffsetsPerTriggerHoldsBatchesUntilEnoughOrDelayPassed) {
  auto topic = unique_topic("sf-min");
  make_topic(topic, 2);
  send(topic, 0, numbered(0, 10));
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  auto o = opts(topic);
  o["minOffsetsPerTrigger"] = "50";
  o["maxTriggerDelay"] = "15m";
  source::StreamingQuery q(o, dir / "ck", sink, source::Trigger::parse("processing-time=100ms"));
  auto clock = std::make_shared<kwire_test::ManualQueryClock>(1'800'000'000'000);
  q.set_clock(clock);
  // The first trigger always fires, whatever the backlog.
  auto b0 = q.run_once_batch();
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->num_input_rows, 10);
  // 10 new offsets < 50: held back.
  send(topic, 1, numbered(10, 20));
  EXPECT_FALSE(q.run_once_batch());
  // 10 + 45 >= 50 over both partitions: fires.
  send(topic, 0, numbered(20, 65));
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->num_input_rows, 55);
  // 5 new: held back until maxTriggerDelay has passed since the last batch.
  send(topic, 1, numbered(65, 70));
  EXPECT_FALSE(q.run_once_batch());
  clock->advance(15 * 60'000 - 1);  // 1 ms short of the delay since b1
  EXPECT_FALSE(q.run_once_batch());
  clock->advance(1);
  auto b2 = q.run_once_batch();
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->num_input_rows, 5);
  EXPECT_EQ(sink_lines(dir / "out").size(), 70u);
}

TEST_F(StreamFeatures, AvailableNowHonoursMinAndMaxOffsetsPerTrigger) {
  auto topic = unique_topic("sf-an-min");
  make_topic(topic, 1);
  send(topic, 0, numbered(0, 45));
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  auto o = opts(topic);
  o["maxOffsetsPerTrigger"] = "20";
  o["minOffsetsPerTrigger"] = "15";
  std::vector<source::BatchProgress> seen;
  source::StreamingQuery q(o, dir / "ck", sink, source::Trigger::parse("available-now"));
  q.run([&](const source::BatchProgress& p) { seen.push_back(p); });
  // 45 -> batch of 20 (the first trigger fires) -> 25 left >= 15 -> 20 ->
  // 5 left < 15: held back, which ends an AvailableNow run (Spark's behaviour).
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(total_rows(seen), 40);
}

TEST_F(StreamFeatures, AvailableNowFixesItsEndAtStart) {
  auto topic = unique_topic("sf-an-end");
  make_topic(topic, 1);
  send(topic, 0, numbered(0, 20));
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  auto o = opts(topic);
  o["maxOffsetsPerTrigger"] = "8";
  std::vector<source::BatchProgress> seen;
  source::StreamingQuery q(o, dir / "ck", sink);
  q.run([&](const source::BatchProgress& p) {
    seen.push_back(p);
    if (seen.size() == 1) send(topic, 0, numbered(20, 30));  // arrives after the target was fixed
  });
  EXPECT_EQ(total_rows(seen), 20);
  ASSERT_EQ(seen.size(), 3u);  // 8 + 8 + 4
  EXPECT_EQ(seen.back().end_offsets.at(topic).at(0), 20);
}

TEST_F(StreamFeatures, ProcessingTimeWaitsForIntervalBoundariesAndSkipsEmptyTriggers) {
  auto topic = unique_topic("sf-pt");
  make_topic(topic, 1);
  send(topic, 0, numbered(0, 5));
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  std::vector<source::BatchProgress> seen;
  source::StreamingQuery q(opts(topic), dir / "ck", sink, source::Trigger::parse("processing-time=500ms"));
  // The query's clock moves only when it waits: to the next 500 ms boundary.
  const std::int64_t t0 = 1'800'000'000'123;
  auto clock = std::make_shared<kwire_test::ManualQueryClock>(t0);
  clock->on_sleep = [&](std::size_t n) {
    if (n == 4) send(topic, 0, numbered(5, 8));  // after three empty triggers
  };
  q.set_clock(clock);
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 150 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    q.stop();
  });
  q.run([&](const source::BatchProgress& p) { seen.push_back(p); }, 2);
  finished = true;
  watchdog.join();
  ASSERT_EQ(seen.size(), 2u);  // no batch for the empty triggers in between
  EXPECT_EQ(seen[0].num_input_rows, 5);
  EXPECT_EQ(seen[0].timestamp_ms, t0);
  EXPECT_EQ(seen[1].num_input_rows, 3);
  EXPECT_EQ(seen[1].batch_id, 1);
  // Every wait ends on a 500 ms boundary of the clock, the first after t0;
  // the second batch ran at the fourth.
  const std::int64_t b1 = (t0 / 500 + 1) * 500;
  ASSERT_EQ(clock->sleeps.size(), 4u);
  for (std::size_t i = 0; i < clock->sleeps.size(); ++i)
    EXPECT_EQ(clock->sleeps[i].second, b1 + 500 * static_cast<std::int64_t>(i)) << "wait " << i;
  EXPECT_EQ(seen[1].timestamp_ms, b1 + 3 * 500);
}

TEST_F(StreamFeatures, SubscribePatternPicksUpNewTopicsFromEarliest) {
  auto base = unique_topic("sf-pat");
  make_topic(base + "-a", 1);
  send(base + "-a", 0, numbered(0, 5));
  TempDir dir;
  source::JsonLinesSink sink(dir / "out");
  std::map<std::string, std::string> o = {{"kafka.bootstrap.servers", bootstrap()},
                                          {"subscribePattern", "^" + base + "-.*"},
                                          {"startingOffsets", "latest"}};
  source::StreamingQuery q(o, dir / "ck", sink, source::Trigger::parse("processing-time=100ms"));
  auto b0 = q.run_once_batch();  // starts at latest: an empty batch 0, as in Spark
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->num_input_rows, 0);
  EXPECT_FALSE(q.run_once_batch());  // nothing new
  make_topic(base + "-b", 2);
  send(base + "-b", 0, numbered(5, 9));
  send(base + "-b", 1, numbered(9, 11));
  auto b = q.run_once_batch();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->num_input_rows, 6);  // the new topic's partitions are read from earliest
  EXPECT_EQ(b->end_offsets.at(base + "-b").at(0), 4);
  EXPECT_EQ(b->end_offsets.at(base + "-b").at(1), 2);
  EXPECT_EQ(b->end_offsets.at(base + "-a").at(0), 5);
  EXPECT_EQ(sink_lines(dir / "out").size(), 6u);
}

TEST_F(StreamFeatures, RestartKeepsStoredOffsetsAndWarnsWhenStartingOptionsChanged) {
  auto topic = unique_topic("sf-restart");
  make_topic(topic, 1);
  send(topic, 0, numbered(0, 10));
  TempDir dir;
  auto ck = (dir / "ck").string();
  auto first = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=latest",
                          "--checkpoint", ck, "--sink", "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  send(topic, 0, numbered(10, 13));
  auto second = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest",
                           "--checkpoint", ck, "--sink", "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(second.exit_code, 0) << second.describe();
  EXPECT_NE(second.err.find("starting options differ"), std::string::npos) << second.err;
  auto lines = sink_lines(dir / "out");
  ASSERT_EQ(lines.size(), 3u);  // only the records after the stored start (10)
  EXPECT_NE(lines[0].find("\"offset\":10"), std::string::npos) << lines[0];
}

TEST_F(StreamFeatures, ProgressLogJsonProgressAndPrometheusFile) {
  auto topic = unique_topic("sf-progress");
  make_topic(topic, 2);
  send(topic, 0, numbered(0, 60));
  send(topic, 1, numbered(60, 100));
  TempDir dir;
  auto ck = dir / "ck";
  auto prom = dir / "metrics.prom";
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest", "-o",
                      "maxOffsetsPerTrigger=40", "--checkpoint", ck.string(), "--sink",
                      "jsonl:" + (dir / "out").string(), "--json-progress", "--prometheus", prom.string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto logged = split_lines(read_file(ck / "progress.jsonl"));
  ASSERT_EQ(logged.size(), 3u);  // 40 + 40 + 20
  // The same lines on stderr.
  for (auto& l : logged) EXPECT_NE(r.err.find(l), std::string::npos);
  auto meta = read_file(ck / "metadata");
  simdjson::dom::parser parser;
  std::string id(std::string_view(parser.parse(meta)["id"].get_string()));
  std::string run_id;
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < logged.size(); ++i) {
    simdjson::dom::element p = parser.parse(logged[i]);
    EXPECT_EQ(std::string_view(p["id"].get_string()), id);
    if (i == 0) run_id = std::string(std::string_view(p["runId"].get_string()));
    EXPECT_EQ(std::string_view(p["runId"].get_string()), run_id);
    EXPECT_EQ(std::int64_t(p["batchId"].get_int64()), static_cast<std::int64_t>(i));
    rows += std::int64_t(p["numInputRows"].get_int64());
    for (auto key : {"addBatch", "latestOffset", "queryPlanning", "walCommit", "triggerExecution"})
      EXPECT_FALSE(p["durationMs"][key].error()) << key << " in " << logged[i];
    EXPECT_FALSE(p["inputRowsPerSecond"].error());
    EXPECT_FALSE(p["processedRowsPerSecond"].error());
    simdjson::dom::element src = p["sources"].at(0);
    EXPECT_EQ(std::string_view(src["description"].get_string()), "KafkaV2[Subscribe[" + topic + "]]");
    EXPECT_EQ(i == 0, src["startOffset"].is_null());
    simdjson::dom::element m = src["metrics"];
    for (auto key : {"minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest",
                     "estimatedTotalBytesBehindLatest"})
      EXPECT_FALSE(m[key].error()) << key << " in " << logged[i];
    EXPECT_FALSE(p["sink"]["description"].error());
  }
  EXPECT_EQ(rows, 100);
  // First batch: 24 of 60 offsets read from partition 0 and 16 of 40 from
  // partition 1, so 36 and 24 behind. Observed sizes: partition 0 read "v-0".."v-23"
  // (86 bytes / 24 records), partition 1 "v-60".."v-75" (4 bytes each):
  // 36 * 86 / 24 + 24 * 4 = 129 + 96.
  simdjson::dom::element first = parser.parse(logged[0]);
  EXPECT_EQ(std::string_view(first["sources"].at(0)["metrics"]["maxOffsetsBehindLatest"].get_string()), "36");
  EXPECT_EQ(std::string_view(first["sources"].at(0)["metrics"]["estimatedTotalBytesBehindLatest"].get_string()), "225");
  auto text = read_file(prom);
  EXPECT_NE(text.find("kwire_batch_id 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kwire_batch_input_rows 20\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kwire_source_offsets_behind_latest{stat=\"max\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kwire_batch_duration_ms{phase=\"triggerExecution\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE kwire_batch_input_rows gauge"), std::string::npos) << text;
}

TEST_F(StreamFeatures, JsonValuesAreDecodedPermissively) {
  auto topic = unique_topic("sf-json");
  make_topic(topic, 1);
  send(topic, 0,
       {R"({"user_id":"u1","amount":12.5,"action":"purchase","event_ts":1714557600000})", "not json",
        R"({"user_id":"u2","amount":"many"})"});
  TempDir dir;
  auto r = run_kwire(
      {"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest", "--checkpoint",
       (dir / "ck").string(), "--sink", "jsonl:" + (dir / "out").string(), "--value-format", "json", "--schema",
       "user_id STRING, amount DOUBLE, action STRING, event_ts BIGINT", "--kafka-columns", "partition,offset"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto lines = sink_lines(dir / "out");
  ASSERT_EQ(lines.size(), 3u);
  // Null columns (and _corrupt_record on a row that decoded) are left out,
  // as Spark's JSON writer does.
  EXPECT_EQ(lines[0], R"({"user_id":"u1","amount":12.5,"action":"purchase","event_ts":1714557600000,)"
                      R"("partition":0,"offset":0})");
  EXPECT_EQ(lines[1], R"({"_corrupt_record":"not json","partition":0,"offset":1})");
  EXPECT_EQ(
      lines[2],
      R"({"user_id":"u2","_corrupt_record":"{\"user_id\":\"u2\",\"amount\":\"many\"}","partition":0,"offset":2})");
}

TEST_F(StreamFeatures, PlanOnlyPrintsThePlanAndWritesNoCheckpoint) {
  auto topic = unique_topic("sf-plan");
  make_topic(topic, 2);
  send(topic, 0, numbered(0, 7));
  send(topic, 1, numbered(7, 10));
  TempDir dir;
  auto ck = dir / "ck";
  auto r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest", "-o",
                      "maxOffsetsPerTrigger=5", "--checkpoint", ck.string(), "--plan-only"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  simdjson::dom::parser parser;
  simdjson::dom::element plan = parser.parse(r.out);
  EXPECT_EQ(std::int64_t(plan["batchId"].get_int64()), 0);
  simdjson::dom::array ranges = plan["ranges"].get_array();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(std::string_view(ranges.at(0)["topic"].get_string()), topic);
  EXPECT_EQ(std::int64_t(ranges.at(0)["fromOffset"].get_int64()), 0);
  EXPECT_EQ(std::int64_t(ranges.at(0)["untilOffset"].get_int64()), 3);  // 5 * 7/10 = 3.5 -> 3
  EXPECT_EQ(std::int64_t(ranges.at(1)["untilOffset"].get_int64()), 1);  // 5 * 3/10 = 1.5 -> 1
  // Nothing at all is created: no metadata, no folder.
  EXPECT_FALSE(fs::exists(ck));
  fs::create_directory(ck);
  auto again = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest",
                          "--checkpoint", ck.string(), "--plan-only"});
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(fs::is_empty(ck));
}

TEST_F(StreamFeatures, StreamRejectsBadArgumentsBeforeWritingAnything) {
  auto topic = unique_topic("sf-bad-args");
  make_topic(topic, 2);
  send(topic, 0, numbered(0, 3));
  TempDir dir;
  const auto ck = (dir / "ck").string();
  const auto out = "jsonl:" + (dir / "out").string();
  auto stream = [&](std::vector<std::string> extra, const std::string& checkpoint) {
    std::vector<std::string> args{"stream",       "-b",       bootstrap(), "-o", "subscribe=" + topic,
                                  "--checkpoint", checkpoint, "--sink",    out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kwire(args);
  };
  auto empty = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "--checkpoint", "", "--sink", out});
  EXPECT_NE(empty.exit_code, 0) << empty.describe();
  EXPECT_NE(empty.err.find("--checkpoint must name a folder"), std::string::npos) << empty.err;

  auto negative = stream({"-o", R"(startingOffsets={")" + topic + R"(":{"0":-1,"1":-3}})"}, ck);
  EXPECT_NE(negative.exit_code, 0) << negative.describe();
  EXPECT_NE(negative.err.find("startingOffsets for " + topic + "-1 has invalid offset -3"), std::string::npos)
      << negative.err;

  auto prom = stream({"-o", "startingOffsets=earliest", "--prometheus", (dir / "no" / "such" / "m.prom").string()}, ck);
  EXPECT_NE(prom.exit_code, 0) << prom.describe();
  EXPECT_NE(prom.err.find("--prometheus " + (dir / "no" / "such" / "m.prom").string() + ": folder " +
                          (dir / "no" / "such").string() + " does not exist"),
            std::string::npos)
      << prom.err;

  auto max_batches = stream({"--max-batches", "-1"}, ck);
  EXPECT_NE(max_batches.exit_code, 0) << max_batches.describe();
  EXPECT_NE(max_batches.err.find("max"), std::string::npos) << max_batches.err;

  // None of them wrote a checkpoint file or a batch.
  EXPECT_FALSE(fs::exists(dir / "ck" / "offsets" / "0"));
  EXPECT_FALSE(fs::exists(dir / "ck" / "sources" / "0" / "0"));
  EXPECT_FALSE(fs::exists(dir / "out" / "part-00000000000000000000.jsonl"));
}

TEST_F(StreamFeatures, ReadRangeReadsExactlyOneRange) {
  auto topic = unique_topic("sf-range");
  make_topic(topic, 2);
  send(topic, 1, numbered(0, 10));
  TempDir dir;
  auto r = run_kwire({"read-range", "-b", bootstrap(), "-t", topic, "-p", "1", "--from", "2", "--until", "5", "--sink",
                      "jsonl:" + (dir / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto lines = sink_lines(dir / "out");
  ASSERT_EQ(lines.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(lines[i].find(fmt::format("\"offset\":{}", i + 2)), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(fmt::format("\"value\":\"v-{}\"", i + 2)), std::string::npos) << lines[i];
  }
  // The console sink prints the rows on standard output.
  auto c = run_kwire({"read-range", "-b", bootstrap(), "-t", topic, "-p", "1", "--from", "9", "--until", "10"});
  ASSERT_EQ(c.exit_code, 0) << c.describe();
  EXPECT_EQ(split_lines(c.out).size(), 1u);
}
