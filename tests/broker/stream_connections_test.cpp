// `kwire stream` reads all its batches with one consumer: with a
// processing-time trigger of 0 and a producer writing while batches run, the
// connections the query makes (`--stats`) are the same for 2 and for 8
// batches, over PLAINTEXT and over SASL_SSL with SCRAM-SHA-512, and the sink
// holds every record up to the last committed offsets exactly once.
// Also: --plan-only creates no checkpoint or sink folder and leaves an
// existing checkpoint and sink byte-for-byte unchanged.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/producer.hpp"

namespace fs = std::filesystem;
using namespace kwire_test;

namespace {

using Props = std::map<std::string, std::string>;
// (partition, offset) -> value
using Contents = std::map<std::pair<std::int32_t, std::int64_t>, std::string>;

struct StreamRun {
  CommandResult result;
  std::uint64_t connects = 0;
  std::uint64_t consumers = 0;
  std::uint64_t batches = 0;
  Contents sink;
  std::size_t sink_lines = 0;
  kwire::checkpoint::PartitionOffsets committed;  // end offsets of the last committed batch
};

// Parses "stream stats: B batches in S s, ... connections C (admin A, consumer K), ..., consumers N".
bool parse_stats(const std::string& err, StreamRun& run) {
  static const std::regex re(
      R"(stream stats: (\d+) batches in .* connections (\d+) \(admin \d+, consumer \d+\), reauthentications \d+, )"
      R"(consumers (\d+))");
  std::smatch m;
  if (!std::regex_search(err, m, re)) return false;
  run.batches = std::stoull(m[1]);
  run.connects = std::stoull(m[2]);
  run.consumers = std::stoull(m[3]);
  return true;
}

void read_sink(const fs::path& dir, StreamRun& run) {
  simdjson::dom::parser parser;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".jsonl") continue;
    for (auto& line : split_lines(read_file(e.path()))) {
      ++run.sink_lines;
      simdjson::dom::element doc = parser.parse(line);
      const auto partition = static_cast<std::int32_t>(std::int64_t(doc["partition"].get_int64()));
      const std::int64_t offset = doc["offset"].get_int64();
      run.sink[{partition, offset}] = std::string(std::string_view(doc["value"].get_string()));
    }
  }
}

class StreamConnectionsBase {
 protected:
  // Runs `kwire stream` with a processing-time trigger of 0 for `batches`
  // batches over `servers` with client properties `props`, while a producer
  // (over the PLAINTEXT listener) writes 20 records every 5 ms.
  StreamRun stream_while_producing(const std::string& topic, const std::string& servers, const Props& props,
                                   int batches, const fs::path& dir) {
    produce_numbered(bootstrap(), topic, 0, 50);  // the first batch has data at once
    std::atomic<bool> stop{false};
    std::thread producer([&] {
      kwire::client::Producer p({{"bootstrap.servers", bootstrap()}});
      for (int i = 50; !stop;) {
        for (int end = i + 20; i < end; ++i) {
          std::string k = std::to_string(i), v = "v-" + k;
          kwire::client::ProducerMessage m;
          m.topic = topic;
          m.key = kwire::protocol::Bytes(k.begin(), k.end());
          m.value = kwire::protocol::Bytes(v.begin(), v.end());
          p.send(std::move(m));
        }
        p.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::vector<std::string> args = {"stream",
                                     "-b",
                                     servers,
                                     "-o",
                                     "subscribe=" + topic,
                                     "-o",
                                     "startingOffsets=earliest",
                                     "--trigger",
                                     "processing-time=0",
                                     "--max-batches",
                                     std::to_string(batches),
                                     "--checkpoint",
                                     (dir / "ck").string(),
                                     "--sink",
                                     "jsonl:" + (dir / "out").string(),
                                     "--stats"};
    for (auto& [k, v] : props) {
      args.push_back("-X");
      args.push_back(k + "=" + v);
    }
    StreamRun run;
    run.result = run_kwire(args, {}, 120);
    stop = true;
    producer.join();
    EXPECT_EQ(run.result.exit_code, 0) << run.result.describe();
    EXPECT_TRUE(parse_stats(run.result.err, run)) << run.result.err;
    read_sink(dir / "out", run);
    auto cp = kwire::checkpoint::Checkpoint::open_read_only(dir / "ck");
    if (auto last = cp.latest_commit_batch()) run.committed = cp.read_offsets(*last);
    return run;
  }

  // Every record of the topic below the committed offsets is in the sink once
  // with its value, and nothing else is.
  void expect_exactly_once(const StreamRun& run, const std::vector<JsonRecord>& topic_records, const std::string& topic,
                           int batches) {
    EXPECT_EQ(run.batches, static_cast<std::uint64_t>(batches));
    ASSERT_TRUE(run.committed.count(topic)) << run.result.err;
    Contents want;
    for (auto& r : topic_records) {
      auto end = run.committed.at(topic).find(r.partition);
      if (end != run.committed.at(topic).end() && r.offset < end->second) want[{r.partition, r.offset}] = *r.value;
    }
    EXPECT_GE(want.size(), 50u);
    EXPECT_EQ(run.sink_lines, want.size());  // no line twice
    EXPECT_EQ(run.sink, want);
  }

  // The connections of 2 and of 8 batches over one listener.
  void expect_constant_connections(const std::string& servers, const Props& props, const std::string& label) {
    std::map<int, StreamRun> runs;
    for (int n : {2, 8}) {
      auto topic = unique_topic("stream-conn-" + label + "-" + std::to_string(n));
      auto r = run_kwire({"create-topic", "-b", bootstrap(), "-t", topic, "--partitions", "3"});
      ASSERT_EQ(r.exit_code, 0) << r.describe();
      TempDir dir;
      runs[n] = stream_while_producing(topic, servers, props, n, dir.path());
      auto consumed = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-e", "-q", "--json"});
      ASSERT_EQ(consumed.exit_code, 0) << consumed.describe();
      expect_exactly_once(runs[n], parse_json_records(consumed.out), topic, n);
      EXPECT_EQ(runs[n].consumers, 1u) << runs[n].result.err;
    }
    std::printf("%s: connections for 2 batches %llu, for 8 batches %llu\n", label.c_str(),
                static_cast<unsigned long long>(runs[2].connects), static_cast<unsigned long long>(runs[8].connects));
    EXPECT_GT(runs[2].connects, 0u);
    EXPECT_EQ(runs[8].connects, runs[2].connects) << runs[8].result.err;
  }
};

class StreamConnections : public BrokerTest, protected StreamConnectionsBase {};
class StreamConnectionsSecure : public SecureBrokerTest, protected StreamConnectionsBase {};

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    const auto rel = fs::relative(e.path(), dir).string();
    const auto mtime = std::to_string(fs::last_write_time(e.path()).time_since_epoch().count());
    out[rel] = (e.is_directory() ? std::string("<folder>") : read_file(e.path())) + " " + mtime;
  }
  return out;
}

}  // namespace

TEST_F(StreamConnections, OneConsumerForAllBatchesOverPlaintext) {
  expect_constant_connections(bootstrap(), {}, "plaintext");
}

TEST_F(StreamConnectionsSecure, OneConsumerForAllBatchesOverSaslSslScramSha512) {
  const Props props{{"security.protocol", "SASL_SSL"},
                    {"ssl.ca.location", env_.at("KWIRE_SECURE_CA")},
                    {"sasl.mechanism", "SCRAM-SHA-512"},
                    {"sasl.username", env_.at("KWIRE_SECURE_USER")},
                    {"sasl.password", env_.at("KWIRE_SECURE_PASSWORD")}};
  expect_constant_connections(addr("KWIRE_SECURE_SASL_SSL_PORT"), props, "sasl-ssl");
}

TEST_F(StreamConnections, PlanOnlyCreatesAndChangesNothing) {
  auto topic = unique_topic("stream-plan-only");
  create_topic(topic, 2);
  produce_numbered(bootstrap(), topic, 0, 10);
  TempDir dir;
  const auto ck = dir / "ck";
  const auto out = dir / "out";
  auto plan_only = [&] {
    return run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest",
                      "--checkpoint", ck.string(), "--sink", "jsonl:" + out.string(), "--plan-only"});
  };
  // Nothing exists yet: nothing is created.
  auto first = plan_only();
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_NE(first.out.find("\"batchId\":0"), std::string::npos) << first.out;
  EXPECT_FALSE(fs::exists(ck));
  EXPECT_FALSE(fs::exists(out));

  // After a run: the checkpoint and the sink are left exactly as they are.
  auto run = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest",
                        "--checkpoint", ck.string(), "--sink", "jsonl:" + out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  produce_numbered(bootstrap(), topic, 10, 15);
  // A temp file as a killed run leaves it: a sink opened for writing would delete it.
  std::ofstream(out / ".part-00000000000000000001.jsonl.0123456789abcdef.tmp") << "{\"half";
  const auto ck_before = snapshot(ck);
  const auto out_before = snapshot(out);
  ASSERT_TRUE(ck_before.count("commits/0")) << run.describe();
  auto second = plan_only();
  ASSERT_EQ(second.exit_code, 0) << second.describe();
  EXPECT_NE(second.out.find("\"batchId\":1"), std::string::npos) << second.out;
  EXPECT_EQ(snapshot(ck), ck_before);
  EXPECT_EQ(snapshot(out), out_before);
}
