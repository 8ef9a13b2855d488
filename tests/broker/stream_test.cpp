// Real-broker tests of the streaming source: exactly-once output across stops,
// restarts, an uncommitted batch and kill -9 of the stream process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <simdjson.h>

#include "common.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/stream.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace kwire;

namespace {

std::string bootstrap() {
  const char* b = std::getenv("KWIRE_BOOTSTRAP");
  return b ? b : "127.0.0.1:19092";
}

std::string unique_topic(const std::string& base) {
  static int n = 0;
  return fmt::format("{}-{}-{}-{}", base, getpid(),
                     std::chrono::steady_clock::now().time_since_epoch().count() % 100000, n++);
}

fs::path temp_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / fmt::format("kwire-stream-test-{}-{}", getpid(), name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void create_topic(const std::string& topic, int partitions) {
  client::KafkaClient c({{"bootstrap.servers", bootstrap()}});
  c.create_topics({{topic, partitions, 1, {}}});
}

// Produces values "<prefix><i>" for i in [from, to), keyed by i so they spread
// over the partitions.
void produce(const std::string& topic, int from, int to, const std::string& prefix = "v-") {
  kwire_test::produce_numbered(bootstrap(), topic, from, to, prefix, {{"compression.type", "lz4"}});
}

struct SinkContents {
  std::map<std::string, int> value_counts;         // value -> times seen
  std::map<std::pair<int, long>, int> pos_counts;  // (partition, offset) -> times seen
  std::size_t lines = 0;
  std::set<long> batch_files;
};

SinkContents read_sink(const fs::path& dir) {
  SinkContents c;
  simdjson::ondemand::parser parser;
  if (!fs::exists(dir)) return c;
  for (auto& e : fs::directory_iterator(dir)) {
    auto name = e.path().filename().string();
    if (name.rfind("part-", 0) != 0 || e.path().extension() != ".jsonl") continue;
    c.batch_files.insert(std::stol(name.substr(5, 20)));
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      simdjson::padded_string ps(line);
      auto doc = parser.iterate(ps);
      std::string value(std::string_view(doc["value"].get_string().value()));
      int partition = static_cast<int>(int64_t(doc["partition"].get_int64().value()));
      long offset = static_cast<long>(int64_t(doc["offset"].get_int64().value()));
      c.value_counts[value]++;
      c.pos_counts[{partition, offset}]++;
      c.lines++;
    }
  }
  return c;
}

void expect_exactly_once(const SinkContents& c, int from, int to, const std::string& prefix = "v-") {
  EXPECT_EQ(c.lines, static_cast<std::size_t>(to - from));
  for (int i = from; i < to; ++i) {
    auto it = c.value_counts.find(prefix + std::to_string(i));
    ASSERT_NE(it, c.value_counts.end()) << "missing " << prefix << i;
    ASSERT_EQ(it->second, 1) << "duplicate " << prefix << i;
  }
  for (auto& [pos, n] : c.pos_counts) ASSERT_EQ(n, 1) << "offset " << pos.second << " of partition " << pos.first;
}

std::map<std::string, std::string> options_for(const std::string& topic) {
  return {{"kafka.bootstrap.servers", bootstrap()},
          {"subscribe", topic},
          {"startingOffsets", "earliest"},
          {"maxOffsetsPerTrigger", "7000"}};
}

// A sink that fails (like a crash) while committing one chosen batch, once.
class FailingSink : public source::JsonLinesSink {
 public:
  FailingSink(fs::path dir, std::int64_t fail_batch) : JsonLinesSink(std::move(dir)), fail_batch_(fail_batch) {}
  std::int64_t commit_batch(std::int64_t id) override {
    if (id == fail_batch_) throw std::runtime_error("simulated crash before the batch was committed");
    return JsonLinesSink::commit_batch(id);
  }

 private:
  std::int64_t fail_batch_;
};

}  // namespace

TEST(Stream, EveryRecordExactlyOnceAcrossStopAndRestart) {
  auto topic = unique_topic("stream-restart");
  create_topic(topic, 3);
  produce(topic, 0, 30000);
  auto dir = temp_dir("restart");
  source::JsonLinesSink sink(dir / "out");
  std::vector<source::BatchProgress> seen;
  {
    source::StreamingQuery q(options_for(topic), dir / "ck", sink);
    q.run([&](const source::BatchProgress& p) { seen.push_back(p); }, 2);  // stop after 2 batches
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].batch_id, 0);
  EXPECT_EQ(seen[1].batch_id, 1);
  EXPECT_LE(seen[0].num_input_rows, 7002);  // rate limit: floor per partition, at least 1 each
  EXPECT_GE(seen[0].num_input_rows, 6997);
  // batch 1 starts where batch 0 ended
  EXPECT_EQ(seen[1].start_offsets, seen[0].end_offsets);
  ASSERT_TRUE(seen[0].lag.has_value());
  EXPECT_GT(seen[0].lag->max_offsets_behind_latest, 0);
  {
    source::StreamingQuery q(options_for(topic), dir / "ck", sink);
    q.run([&](const source::BatchProgress& p) { seen.push_back(p); });
  }
  EXPECT_EQ(seen.back().lag->max_offsets_behind_latest, 0);
  EXPECT_EQ(seen[2].batch_id, 2);
  EXPECT_EQ(seen[2].start_offsets, seen[1].end_offsets);
  expect_exactly_once(read_sink(dir / "out"), 0, 30000);

  // Nothing new: a run makes no batch.
  std::size_t before = seen.size();
  {
    source::StreamingQuery q(options_for(topic), dir / "ck", sink);
    q.run([&](const source::BatchProgress& p) { seen.push_back(p); });
  }
  EXPECT_EQ(seen.size(), before);

  // New data: only the new rows are read.
  produce(topic, 30000, 35000);
  std::int64_t new_rows = 0;
  {
    source::StreamingQuery q(options_for(topic), dir / "ck", sink);
    q.run([&](const source::BatchProgress& p) { new_rows += p.num_input_rows; });
  }
  EXPECT_EQ(new_rows, 5000);
  expect_exactly_once(read_sink(dir / "out"), 0, 35000);
  fs::remove_all(dir);
}

TEST(Stream, UncommittedBatchIsReplayedWithTheLoggedRange) {
  auto topic = unique_topic("stream-replay");
  create_topic(topic, 2);
  produce(topic, 0, 20000);
  auto dir = temp_dir("replay");
  std::vector<source::BatchProgress> first;
  {
    FailingSink failing(dir / "out", 1);
    source::StreamingQuery q(options_for(topic), dir / "ck", failing);
    EXPECT_THROW(q.run([&](const source::BatchProgress& p) { first.push_back(p); }), std::runtime_error);
  }
  ASSERT_EQ(first.size(), 1u);  // batch 0 committed, batch 1 failed
  EXPECT_TRUE(fs::exists(dir / "ck" / "offsets" / "1"));
  EXPECT_FALSE(fs::exists(dir / "ck" / "commits" / "1"));
  auto logged_end = checkpoint::Checkpoint(dir / "ck").read_offsets(1);

  produce(topic, 20000, 21000);  // more data must not change the replayed range
  std::vector<source::BatchProgress> second;
  {
    source::JsonLinesSink sink(dir / "out");
    source::StreamingQuery q(options_for(topic), dir / "ck", sink);
    q.run([&](const source::BatchProgress& p) { second.push_back(p); });
  }
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(second[0].batch_id, 1);
  EXPECT_TRUE(second[0].replayed);
  EXPECT_EQ(second[0].start_offsets, first[0].end_offsets);
  EXPECT_EQ(second[0].end_offsets, logged_end);
  EXPECT_FALSE(second[1].replayed);
  EXPECT_EQ(second[1].batch_id, 2);
  expect_exactly_once(read_sink(dir / "out"), 0, 21000);
  fs::remove_all(dir);
}

TEST(Stream, KillNineDuringBatchesStillExactlyOnce) {
  auto topic = unique_topic("stream-kill");
  create_topic(topic, 3);
  const int total = 120000;
  produce(topic, 0, total);
  auto dir = temp_dir("kill");
  std::string bin = KWIRE_BIN;
  std::vector<std::string> args = {
      bin, "stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest", "-o",
      // Small batches: about 240 of them, so the run
      // outlasts the first kill (a batch takes a few ms).
      "maxOffsetsPerTrigger=500", "--checkpoint", (dir / "ck").string(), "--sink", "jsonl:" + (dir / "out").string()};
  auto spawn = [&]() {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
  };
  std::mt19937 rng(12345);
  int kills = 0;
  for (int round = 0; round < 6; ++round) {
    pid_t pid = spawn();
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 250));
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++kills;
    }
  }
  EXPECT_GE(kills, 1);
  // Run to the end.
  pid_t pid = spawn();
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto contents = read_sink(dir / "out");
  expect_exactly_once(contents, 0, total);
  // Batch files are numbered without gaps.
  ASSERT_FALSE(contents.batch_files.empty());
  EXPECT_EQ(*contents.batch_files.begin(), 0);
  EXPECT_EQ(static_cast<std::size_t>(*contents.batch_files.rbegin() + 1), contents.batch_files.size());
  fs::remove_all(dir);
}

TEST(Stream, StartingOffsetsLatestReadsOnlyNewRecordsAndHeadersArePassed) {
  auto topic = unique_topic("stream-latest");
  create_topic(topic, 1);
  produce(topic, 0, 100, "old-");
  auto dir = temp_dir("latest");
  auto opts = options_for(topic);
  opts["startingOffsets"] = "latest";
  opts["includeHeaders"] = "true";
  source::JsonLinesSink sink(dir / "out");
  {
    source::StreamingQuery q(opts, dir / "ck", sink);
    q.run();  // resolves and stores the initial offsets (latest = 100) in an empty batch 0, as Spark
  }
  EXPECT_TRUE(kwire_test::read_file(dir / "out" / "part-00000000000000000000.jsonl").empty());
  {
    client::Producer p({{"bootstrap.servers", bootstrap()}});
    client::ProducerMessage m;
    m.topic = topic;
    std::string v = "new-0";
    m.value = protocol::Bytes(v.begin(), v.end());
    m.headers.push_back({"h1", protocol::Bytes{'x'}});
    m.headers.push_back({"h2", std::nullopt});
    p.send(std::move(m));
    p.flush();
  }
  {
    source::StreamingQuery q(opts, dir / "ck", sink);
    q.run();
  }
  std::ifstream in(dir / "out" / "part-00000000000000000001.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("\"value\":\"new-0\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"offset\":100"), std::string::npos) << line;
  // Null fields are left out, as Spark's JSON writer does: no "key" for a
  // null key, no "value" for a header without one.
  EXPECT_NE(line.find("\"headers\":[{\"key\":\"h1\",\"value\":\"x\"},{\"key\":\"h2\"}]"), std::string::npos) << line;
  EXPECT_EQ(line.rfind("{\"value\":\"new-0\",\"topic\":", 0), 0u) << line;
  EXPECT_EQ(line.find("null"), std::string::npos) << line;
  EXPECT_FALSE(std::getline(in, line));
  fs::remove_all(dir);
}

TEST(Stream, SubscribeToMissingTopicFailsAfterRetries) {
  auto dir = temp_dir("missing");
  source::JsonLinesSink sink(dir / "out");
  auto opts = options_for(unique_topic("does-not-exist"));
  opts["fetchOffset.retryIntervalMs"] = "10";
  source::StreamingQuery q(opts, dir / "ck", sink);
  try {
    q.run();
    FAIL() << "expected an error";
  } catch (const client::KafkaError& e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("UNKNOWN_TOPIC_OR_PARTITION"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Stream, TriggerOnceReadsEverythingInOneBatchIgnoringLimits) {
  auto topic = unique_topic("stream-once");
  create_topic(topic, 2);
  produce(topic, 0, 500);
  auto dir = temp_dir("once");
  source::JsonLinesSink sink(dir / "out");
  auto opts = options_for(topic);
  opts["maxOffsetsPerTrigger"] = "10";
  std::vector<source::BatchProgress> seen;
  {
    source::Trigger once;
    once.kind = source::Trigger::Kind::once;
    source::StreamingQuery q(opts, dir / "ck", sink, once);
    q.run([&](const source::BatchProgress& p) { seen.push_back(p); });
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].num_input_rows, 500);
  EXPECT_EQ(seen[0].lag->max_offsets_behind_latest, 0);
  expect_exactly_once(read_sink(dir / "out"), 0, 500);
  fs::remove_all(dir);
}
