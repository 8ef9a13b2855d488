// Real-broker tests of the client library and the kwire command line:
// metadata, produce/consume round trips for every codec, null versus empty
// keys, values and headers, ListOffsets (earliest, latest, by timestamp),
// interoperability with Kafka's own Java producer tools, and error reporting.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "common.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"

namespace kwire_test {
namespace {

using kwire::client::Consumer;
using kwire::client::ConsumerRecord;
using kwire::client::KafkaClient;
using kwire::client::KafkaError;
using kwire::client::NewTopic;
using kwire::client::Producer;
using kwire::client::ProducerMessage;
using kwire::client::TopicPartition;
using kwire::protocol::Bytes;
using kwire::protocol::RecordHeader;

using OptStr = std::optional<std::string>;
using KeyValue = std::pair<OptStr, OptStr>;

constexpr const char* kCodecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Bytes bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }

OptStr opt_string(const std::optional<kwire::protocol::ByteSpan>& b) {
  if (!b) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

/// The partition Java's default partitioner picks for a keyed record.
std::int32_t java_partition(const std::string& key, std::int32_t partitions) {
  auto span = kwire::protocol::ByteSpan(reinterpret_cast<const std::uint8_t*>(key.data()), key.size());
  return static_cast<std::int32_t>((static_cast<std::uint32_t>(kwire::client::murmur2(span)) & 0x7fffffffu) %
                                   static_cast<std::uint32_t>(partitions));
}

std::map<std::string, std::string> client_props() { return {{"bootstrap.servers", bootstrap()}}; }

/// Offsets of each partition are 0..n-1 with no gap or repeat, in output order.
void expect_contiguous_offsets(const std::vector<JsonRecord>& records, std::int32_t partitions,
                               std::map<std::int32_t, std::int64_t>* counts_out = nullptr) {
  std::map<std::int32_t, std::int64_t> next;
  for (auto& r : records) {
    ASSERT_GE(r.partition, 0);
    ASSERT_LT(r.partition, partitions);
    ASSERT_EQ(r.offset, next[r.partition]) << "partition " << r.partition << " skips or repeats an offset";
    ++next[r.partition];
  }
  if (counts_out) *counts_out = next;
}

/// What `kwire produce -K :` makes of a line: key before the first ':' (none
/// when there is no ':'), value after it.
KeyValue split_line(const std::string& line) {
  auto colon = line.find(':');
  if (colon == std::string::npos) return {std::nullopt, line};
  return {line.substr(0, colon), line.substr(colon + 1)};
}

/// Earliest and latest offsets per partition from `kwire offsets --json`.
std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> cli_offsets(const std::string& topic) {
  std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> out;
  auto r = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  if (r.exit_code != 0) return out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  for (simdjson::dom::element p : doc.get_array()) {
    EXPECT_EQ(std::string_view(p["topic"].get_string()), topic);
    out[static_cast<std::int32_t>(std::int64_t(p["partition"].get_int64()))] = {std::int64_t(p["earliest"].get_int64()),
                                                                                std::int64_t(p["latest"].get_int64())};
  }
  return out;
}

// ------------------------------------------------------------------ metadata

class MetadataTest : public BrokerTest {};

TEST_F(MetadataTest, TopicsCreatedByLibraryAndCliHaveThreePartitions) {
  const std::string lib_topic = unique_topic("md-lib");
  const std::string cli_topic = unique_topic("md-cli");

  KafkaClient client(client_props());
  client.create_topics({NewTopic{lib_topic, 3, 1, {}}});
  create_topic(cli_topic, 3);

  auto md = client.metadata();
  ASSERT_EQ(md.brokers.size(), 1u) << "the test broker is a single node";
  auto [host, port] = split_host_port(bootstrap());
  EXPECT_EQ(md.brokers[0].port, port);
  EXPECT_NE(md.controller_id, -1);
  ASSERT_TRUE(md.cluster_id.has_value());
  EXPECT_FALSE(md.cluster_id->empty());
  std::set<std::int32_t> broker_ids;
  for (auto& b : md.brokers) broker_ids.insert(b.node_id);

  for (const auto& name : {lib_topic, cli_topic}) {
    SCOPED_TRACE(name);
    const auto* t = md.topic(name);
    ASSERT_NE(t, nullptr) << "metadata does not list " << name;
    EXPECT_EQ(t->error_code, 0);
    EXPECT_FALSE(t->is_internal);
    ASSERT_EQ(t->partitions.size(), 3u);
    for (std::int32_t p = 0; p < 3; ++p) {
      const auto& pm = t->partitions[static_cast<std::size_t>(p)];
      EXPECT_EQ(pm.partition, p);
      EXPECT_EQ(pm.error_code, 0);
      EXPECT_TRUE(broker_ids.count(pm.leader_id)) << "leader " << pm.leader_id << " is not a listed broker";
      EXPECT_GE(pm.leader_epoch, 0);
      EXPECT_EQ(pm.replicas, std::vector<std::int32_t>{pm.leader_id});
      EXPECT_EQ(pm.isr, std::vector<std::int32_t>{pm.leader_id});
    }
    EXPECT_EQ(client.partition_count(name), 3);
  }

  // Creating an existing topic is an error unless asked to tolerate it.
  try {
    client.create_topics({NewTopic{lib_topic, 3, 1, {}}});
    ADD_FAILURE() << "creating an existing topic did not throw";
  } catch (const KafkaError& e) {
    EXPECT_EQ(e.code(), 36) << e.what();  // TOPIC_ALREADY_EXISTS
  }
  EXPECT_NO_THROW(client.create_topics({NewTopic{lib_topic, 3, 1, {}}}, /*if_not_exists=*/true));
  auto again = run_kwire({"create-topic", "-b", bootstrap(), "-t", cli_topic, "--partitions", "3"});
  EXPECT_NE(again.exit_code, 0) << again.describe();
  EXPECT_NE(again.err.find(cli_topic), std::string::npos) << again.err;
  auto tolerant =
      run_kwire({"create-topic", "-b", bootstrap(), "-t", cli_topic, "--partitions", "3", "--if-not-exists"});
  EXPECT_EQ(tolerant.exit_code, 0) << tolerant.describe();

  // kwire metadata --json lists both topics, with the same partitions and leaders.
  auto r = run_kwire({"metadata", "-b", bootstrap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  std::set<std::int64_t> json_brokers;
  for (simdjson::dom::element b : doc["brokers"].get_array()) {
    json_brokers.insert(std::int64_t(b["node_id"].get_int64()));
    EXPECT_EQ(std::int64_t(b["port"].get_int64()), port);
  }
  EXPECT_EQ(json_brokers.size(), broker_ids.size());
  EXPECT_EQ(std::int64_t(doc["controller_id"].get_int64()), md.controller_id);
  EXPECT_EQ(std::string_view(doc["cluster_id"].get_string()), *md.cluster_id);
  std::set<std::string> found;
  for (simdjson::dom::element t : doc["topics"].get_array()) {
    std::string name(std::string_view(t["name"].get_string()));
    if (name != lib_topic && name != cli_topic) continue;
    found.insert(name);
    EXPECT_TRUE(t["error"].is_null());
    EXPECT_EQ(std::string_view(t["topic_id"].get_string()), md.topic(name)->topic_id.to_base64());
    std::int64_t expected_partition = 0;
    for (simdjson::dom::element p : t["partitions"].get_array()) {
      EXPECT_EQ(std::int64_t(p["partition"].get_int64()), expected_partition++);
      EXPECT_TRUE(json_brokers.count(std::int64_t(p["leader"].get_int64())));
    }
    EXPECT_EQ(expected_partition, 3);
  }
  EXPECT_EQ(found, (std::set<std::string>{lib_topic, cli_topic}));

  // The text form for one topic.
  auto text = run_kwire({"metadata", "-b", bootstrap(), "-t", cli_topic});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_NE(text.out.find("topic \"" + cli_topic + "\" with 3 partitions"), std::string::npos) << text.out;

  // kwire delete-topic removes it from metadata (deletion is asynchronous).
  auto del = run_kwire({"delete-topic", "-b", bootstrap(), "-t", cli_topic});
  ASSERT_EQ(del.exit_code, 0) << del.describe();
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    auto after = client.metadata();
    gone = after.topic(cli_topic) == nullptr;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(gone) << cli_topic << " still listed after delete-topic";
}

// ------------------------------------------------------ codec round trips (CLI)

/// 5000 distinct lines: plain, keyed (key:value, 40 keys), an empty line, an
/// empty key, an empty value, UTF-8, JSON-sensitive characters.
std::vector<std::string> codec_lines(const std::string& codec) {
  std::vector<std::string> lines;
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    if (i == 17) s = "";  // empty value, no key
    else if (i == 18) s = ":empty key " + std::to_string(i);
    else if (i == 19) s = "key-empty-value-" + std::to_string(i) + ":";
    else if (i == 20) s = "clé-ü:Grüße, 世界 ✓ € \xF0\x9F\x98\x80 " + std::to_string(i);
    else if (i == 21) s = "quotes \"x\" back\\slash\ttab {\"json\":[1]} " + std::to_string(i);
    else if (i % 3 == 0)
      s = "key-" + std::to_string(i % 40) + ":value " + codec + " " + std::to_string(i) + " " +
          std::string(i % 50, 'x');
    else s = "line " + codec + " " + std::to_string(i) + " " + std::string(i % 70, 'a' + static_cast<char>(i % 26));
    lines.push_back(std::move(s));
  }
  return lines;
}

class CodecRoundTrip : public BrokerTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(CodecRoundTrip, ProduceAndConsumeAreByteIdentical) {
  const std::string codec = GetParam();
  const std::string topic = unique_topic("codec-" + codec);
  create_topic(topic, 3);

  auto lines = codec_lines(codec);
  std::string input;
  for (auto& l : lines) input += l + "\n";

  const std::int64_t t_before = now_ms();
  auto produced = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-z", codec, "-K", ":"}, input);
  const std::int64_t t_after = now_ms();
  ASSERT_EQ(produced.exit_code, 0) << produced.describe();
  EXPECT_NE(produced.err.find("produced 5000 records"), std::string::npos) << produced.err;

  auto records = consume_all(topic);
  ASSERT_EQ(records.size(), lines.size());

  std::vector<KeyValue> expected, actual;
  for (auto& l : lines) expected.push_back(split_line(l));
  std::map<std::string, std::set<std::int32_t>> partitions_of_key;
  for (auto& r : records) {
    EXPECT_EQ(r.topic, topic);
    EXPECT_EQ(r.timestamp_type, 0);
    EXPECT_GE(r.timestamp, t_before - 1000);
    EXPECT_LE(r.timestamp, t_after + 1000);
    EXPECT_TRUE(r.headers.empty());
    if (r.key) {
      partitions_of_key[*r.key].insert(r.partition);
      EXPECT_EQ(r.partition, java_partition(*r.key, 3)) << "key '" << *r.key << "'";
    }
    actual.emplace_back(r.key, r.value);
  }
  std::sort(expected.begin(), expected.end());
  std::sort(actual.begin(), actual.end());
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i], expected[i]) << "first difference at sorted index " << i << ": key "
                                      << actual[i].first.value_or("<null>") << " value "
                                      << actual[i].second.value_or("<null>") << " vs key "
                                      << expected[i].first.value_or("<null>") << " value "
                                      << expected[i].second.value_or("<null>");
  }
  for (auto& [key, parts] : partitions_of_key) EXPECT_EQ(parts.size(), 1u) << "key " << key << " in several partitions";

  std::map<std::int32_t, std::int64_t> counts;
  expect_contiguous_offsets(records, 3, &counts);
  std::int64_t total = 0;
  auto offsets = cli_offsets(topic);
  ASSERT_EQ(offsets.size(), 3u);
  for (auto& [p, el] : offsets) {
    EXPECT_EQ(el.first, 0) << "partition " << p;
    EXPECT_EQ(el.second, counts[p]) << "partition " << p;
    total += el.second;
  }
  EXPECT_EQ(total, 5000);

  // The plain format prints the values, one per line, in the same order as --json.
  auto plain = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-e", "-q", "-f", "%p|%o|%K|%S|%s\\n"});
  ASSERT_EQ(plain.exit_code, 0) << plain.describe();
  auto plain_lines = split_lines(plain.out);
  ASSERT_EQ(plain_lines.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto& r = records[i];
    std::string want = std::to_string(r.partition) + "|" + std::to_string(r.offset) + "|" +
                       (r.key ? std::to_string(r.key->size()) : "-1") + "|" +
                       (r.value ? std::to_string(r.value->size()) : "-1") + "|" + r.value.value_or("");
    ASSERT_EQ(plain_lines[i], want);
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecRoundTrip, ::testing::ValuesIn(kCodecs),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

/// The batches written to disk really carry the codec asked for (checked with
/// Kafka's own DumpLogSegments on the broker's log directory).
class CodecOnDiskTest : public BrokerTest {};

TEST_F(CodecOnDiskTest, ProducedBatchesCarryTheRequestedCodec) {
  std::map<std::string, std::string> topic_of;
  std::string topic_list;
  for (const char* codec : kCodecs) {
    auto topic = unique_topic(std::string("disk-") + codec);
    create_topic(topic, 1);
    std::string input;
    for (int i = 0; i < 200; ++i)
      input += "compressible record " + std::to_string(i) + " " + std::string(100, 'z') + "\n";
    auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-z", codec}, input);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    topic_of[codec] = topic;
    topic_list += (topic_list.empty() ? "" : ",") + topic;
  }
  auto dirs = run_kafka_tool({"org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", bootstrap(), "--describe",
                              "--topic-list", topic_list});
  ASSERT_EQ(dirs.exit_code, 0) << dirs.describe();
  auto json_start = dirs.out.find("{\"brokers\"");
  ASSERT_NE(json_start, std::string::npos) << dirs.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(split_lines(dirs.out.substr(json_start))[0]);
  std::string log_dir;
  std::map<std::string, std::int64_t> sizes;
  for (simdjson::dom::element b : doc["brokers"].get_array())
    for (simdjson::dom::element d : b["logDirs"].get_array()) {
      log_dir = std::string(std::string_view(d["logDir"].get_string()));
      for (simdjson::dom::element p : d["partitions"].get_array())
        sizes[std::string(std::string_view(p["partition"].get_string()))] = p["size"].get_int64();
    }
  // Compression shrinks these repetitive records a lot.
  for (const char* codec : kCodecs) {
    if (std::string(codec) == "none") continue;
    EXPECT_LT(sizes[topic_of[codec] + "-0"] * 2, sizes[topic_of["none"] + "-0"]) << codec;
  }
  if (!std::filesystem::exists(std::filesystem::path(log_dir) / (topic_of["none"] + "-0")))
    GTEST_SKIP() << "broker log directory " << log_dir << " is not on this machine";
  std::vector<std::string> args = {"dump-log", "--files"};
  std::string files;
  for (const char* codec : kCodecs)
    files += (files.empty() ? "" : ",") +
             (std::filesystem::path(log_dir) / (topic_of[codec] + "-0") / "00000000000000000000.log").string();
  args.push_back(files);
  auto dump = run_kafka_tool(args);
  ASSERT_EQ(dump.exit_code, 0) << dump.describe();
  // Output: "Dumping <file>" then one line per batch with "compresscodec: <name>".
  std::string current;
  std::map<std::string, std::set<std::string>> codecs_seen;
  for (auto& line : split_lines(dump.out)) {
    if (line.rfind("Dumping ", 0) == 0) {
      current.clear();
      for (const char* codec : kCodecs)
        if (line.find("/" + topic_of[codec] + "-0/") != std::string::npos) current = codec;
      continue;
    }
    auto at = line.find("compresscodec: ");
    if (at == std::string::npos || current.empty()) continue;
    auto rest = line.substr(at + 15);
    codecs_seen[current].insert(rest.substr(0, rest.find(' ')));
  }
  for (const char* codec : kCodecs)
    EXPECT_EQ(codecs_seen[codec], std::set<std::string>{codec}) << "batches of the " << codec << " topic";
}

// ---------------------------------------------------- library API round trip

struct SentRecord {
  OptStr key;
  OptStr value;
  std::vector<RecordHeader> headers;
  std::int64_t timestamp;  // -1: stamped by the producer
};

std::vector<SentRecord> api_records(std::int64_t base_ts) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  return {
      {"k0", "v0", {{"h1", bytes("x")}, {"h-null", std::nullopt}, {"h-empty", Bytes{}}, {"h1", bytes("dup")}}, base_ts},
      {std::nullopt, "null key", {}, base_ts + 1},
      {"", "empty key", {}, base_ts + 2},
      {"tombstone", std::nullopt, {}, base_ts + 3},
      {"empty value", "", {}, base_ts + 4},
      {std::nullopt, std::nullopt, {{"only", bytes("header")}}, -1},
      {all_bytes, all_bytes, {{"bin", bytes(all_bytes)}}, base_ts + 6},
      {"", "", {}, base_ts + 7},
  };
}

class ApiRoundTrip : public BrokerTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ApiRoundTrip, ProducerAndConsumerKeepNullAndEmptyApart) {
  const std::string codec = GetParam();
  const std::string topic = unique_topic(std::string("api-") + codec);
  {
    KafkaClient admin(client_props());
    admin.create_topics({NewTopic{topic, 2, 1, {}}});
  }
  const std::int64_t base_ts = now_ms() - 60000;
  auto sent = api_records(base_ts);

  const std::int64_t t_before = now_ms();
  {
    Producer producer({{"bootstrap.servers", bootstrap()}, {"compression.type", codec}, {"linger.ms", "0"}});
    for (auto& s : sent) {
      ProducerMessage m;
      m.topic = topic;
      m.partition = 1;
      if (s.key) m.key = bytes(*s.key);
      if (s.value) m.value = bytes(*s.value);
      m.headers = s.headers;
      m.timestamp = s.timestamp;
      producer.send(std::move(m));
    }
    producer.flush();
    EXPECT_EQ(producer.records_sent(), sent.size());
  }
  const std::int64_t t_after = now_ms();

  Consumer consumer({{"bootstrap.servers", bootstrap()}, {"auto.offset.reset", "none"}, {"max.poll.records", "3"}});
  TopicPartition tp0{topic, 0}, tp1{topic, 1};
  consumer.assign({tp0, tp1});
  auto begin = consumer.beginning_offsets({tp0, tp1});
  auto end = consumer.end_offsets({tp0, tp1});
  EXPECT_EQ(begin[tp0], 0);
  EXPECT_EQ(end[tp0], 0);
  EXPECT_EQ(begin[tp1], 0);
  EXPECT_EQ(end[tp1], static_cast<std::int64_t>(sent.size()));
  consumer.seek(tp0, 0);
  consumer.seek(tp1, 0);

  struct Got {
    std::int32_t partition;
    std::int64_t offset, timestamp;
    int timestamp_type;
    OptStr key, value;
    std::vector<RecordHeader> headers;
  };
  std::vector<Got> got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.size() < sent.size() && std::chrono::steady_clock::now() < deadline) {
    auto recs = consumer.poll(std::chrono::milliseconds(500));
    EXPECT_LE(recs.size(), 3u) << "max.poll.records";
    for (const ConsumerRecord& r : recs) {
      EXPECT_EQ(*r.topic, topic);
      got.push_back({r.partition, r.offset, r.timestamp, r.timestamp_type, opt_string(r.key), opt_string(r.value),
                     r.headers ? *r.headers : std::vector<RecordHeader>{}});
    }
  }
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(got[i].partition, 1);
    EXPECT_EQ(got[i].offset, static_cast<std::int64_t>(i));
    EXPECT_EQ(got[i].timestamp_type, 0);
    if (sent[i].timestamp >= 0) {
      EXPECT_EQ(got[i].timestamp, sent[i].timestamp);
    } else {
      EXPECT_GE(got[i].timestamp, t_before);
      EXPECT_LE(got[i].timestamp, t_after);
    }
    EXPECT_EQ(got[i].key, sent[i].key);
    EXPECT_EQ(got[i].value, sent[i].value);
    EXPECT_EQ(got[i].headers, sent[i].headers);
  }
  EXPECT_EQ(consumer.position(tp1), static_cast<std::int64_t>(sent.size()));
  EXPECT_EQ(consumer.position(tp0), 0);
  EXPECT_TRUE(consumer.poll(std::chrono::milliseconds(300)).empty());

  // Seeking back re-reads from that offset.
  consumer.seek(tp1, 5);
  std::vector<std::int64_t> reread;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (reread.size() < sent.size() - 5 && std::chrono::steady_clock::now() < deadline)
    for (auto& r : consumer.poll(std::chrono::milliseconds(500))) reread.push_back(r.offset);
  EXPECT_EQ(reread, (std::vector<std::int64_t>{5, 6, 7}));

  // The CLI's JSON keeps null and empty apart as well.
  auto records = consume_all(topic, {"-p", "1"});
  ASSERT_EQ(records.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE("json record " + std::to_string(i));
    EXPECT_EQ(records[i].offset, static_cast<std::int64_t>(i));
    EXPECT_EQ(records[i].timestamp, got[i].timestamp);
    EXPECT_EQ(records[i].timestamp_type, 0);
    if (i != 6) {  // record 6 holds bytes that are not UTF-8; JSON escapes them
      EXPECT_EQ(records[i].key, sent[i].key);
      EXPECT_EQ(records[i].value, sent[i].value);
    }
    ASSERT_EQ(records[i].headers.size(), sent[i].headers.size());
    for (std::size_t h = 0; h < sent[i].headers.size() && i != 6; ++h) {
      EXPECT_EQ(records[i].headers[h].first, sent[i].headers[h].key);
      OptStr v;
      if (sent[i].headers[h].value) v = std::string(sent[i].headers[h].value->begin(), sent[i].headers[h].value->end());
      EXPECT_EQ(records[i].headers[h].second, v);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, ApiRoundTrip, ::testing::Values("none", "zstd"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// ------------------------------------------------------------------- offsets

class OffsetsTest : public BrokerTest {};

TEST_F(OffsetsTest, EarliestLatestAndByTimestamp) {
  const std::string topic = unique_topic("offsets");
  KafkaClient client(client_props());
  client.create_topics({NewTopic{topic, 2, 1, {}}});
  TopicPartition tp0{topic, 0}, tp1{topic, 1};

  // Ten records on partition 0, one second apart, an hour ago; partition 1 stays empty.
  const std::int64_t t0 = now_ms() - 3600 * 1000;
  {
    Producer producer({{"bootstrap.servers", bootstrap()}});
    for (int i = 0; i < 10; ++i) {
      ProducerMessage m;
      m.topic = topic;
      m.partition = 0;
      m.value = bytes("at " + std::to_string(i));
      m.timestamp = t0 + 1000 * i;
      producer.send(std::move(m));
    }
    producer.flush();
  }

  auto cli = cli_offsets(topic);
  ASSERT_EQ(cli.size(), 2u);
  EXPECT_EQ(cli[0], (std::pair<std::int64_t, std::int64_t>{0, 10}));
  EXPECT_EQ(cli[1], (std::pair<std::int64_t, std::int64_t>{0, 0}));

  auto earliest =
      client.list_offsets({{tp0, kwire::client::kEarliestTimestamp}, {tp1, kwire::client::kEarliestTimestamp}});
  auto latest = client.list_offsets({{tp0, kwire::client::kLatestTimestamp}, {tp1, kwire::client::kLatestTimestamp}});
  EXPECT_EQ(earliest[tp0].offset, 0);
  EXPECT_EQ(latest[tp0].offset, 10);
  EXPECT_EQ(earliest[tp1].offset, 0);
  EXPECT_EQ(latest[tp1].offset, 0);

  const std::int64_t future = now_ms() + 24LL * 3600 * 1000;
  struct Case {
    std::int64_t ts;
    std::int64_t offset;
    std::int64_t timestamp;
  };
  for (const Case& c :
       {Case{t0 - 5000, 0, t0}, Case{t0, 0, t0}, Case{t0 + 2500, 3, t0 + 3000}, Case{t0 + 3000, 3, t0 + 3000},
        Case{t0 + 9000, 9, t0 + 9000}, Case{t0 + 9001, -1, -1}, Case{future, -1, -1}}) {
    SCOPED_TRACE("timestamp t0" + std::to_string(c.ts - t0));
    auto r = client.list_offsets({{tp0, c.ts}, {tp1, c.ts}});
    EXPECT_EQ(r[tp0].offset, c.offset);
    EXPECT_EQ(r[tp0].timestamp, c.timestamp);
    EXPECT_EQ(r[tp1].offset, -1) << "an empty partition has no offset for any timestamp";
  }
  auto max_ts = client.list_offsets({{tp0, kwire::client::kMaxTimestamp}});
  EXPECT_EQ(max_ts[tp0].offset, 9);
  EXPECT_EQ(max_ts[tp0].timestamp, t0 + 9000);

  // Consumer::offsets_for_times: nullopt, not an offset, where there is none.
  Consumer consumer({{"bootstrap.servers", bootstrap()}});
  consumer.assign({tp0, tp1});
  auto by_time = consumer.offsets_for_times({{tp0, t0 + 2500}, {tp1, t0 + 2500}});
  ASSERT_TRUE(by_time[tp0].has_value());
  EXPECT_EQ(by_time[tp0]->offset, 3);
  EXPECT_FALSE(by_time[tp1].has_value());
  auto none = consumer.offsets_for_times({{tp0, future}});
  EXPECT_FALSE(none[tp0].has_value());

  // The CLI: offset_for_timestamp is a number or null.
  auto lookup = [&](std::int64_t ts) {
    std::map<std::int32_t, std::optional<std::int64_t>> out;
    auto r = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "--json", "--timestamp", std::to_string(ts)});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    for (simdjson::dom::element p : doc.get_array()) {
      auto v = p["offset_for_timestamp"];
      out[static_cast<std::int32_t>(std::int64_t(p["partition"].get_int64()))] =
          v.is_null() ? std::nullopt : std::optional<std::int64_t>(std::int64_t(v.get_int64()));
    }
    return out;
  };
  auto mid = lookup(t0 + 2500);
  EXPECT_EQ(mid[0], std::optional<std::int64_t>(3));
  EXPECT_EQ(mid[1], std::nullopt);
  auto fut = lookup(future);
  EXPECT_EQ(fut[0], std::nullopt);
  EXPECT_EQ(fut[1], std::nullopt);
  auto text = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "-p", "0", "--timestamp", std::to_string(future)});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_EQ(text.out, topic + " [0] earliest 0 latest 10 at-timestamp none\n");

  // consume -o s@TS starts at the first record at or after TS; -o -N N before the end.
  auto from_ts = consume_all(topic, {"-o", "s@" + std::to_string(t0 + 2500)});
  ASSERT_EQ(from_ts.size(), 7u);
  EXPECT_EQ(from_ts.front().offset, 3);
  EXPECT_EQ(from_ts.front().timestamp, t0 + 3000);
  EXPECT_EQ(from_ts.back().offset, 9);
  auto last_two = consume_all(topic, {"-o", "-2", "-p", "0"});
  ASSERT_EQ(last_two.size(), 2u);
  EXPECT_EQ(last_two[0].offset, 8);
  EXPECT_EQ(*last_two[1].value, "at 9");
  auto from_5 = consume_all(topic, {"-o", "5", "-p", "0"});
  ASSERT_EQ(from_5.size(), 5u);
  EXPECT_EQ(from_5[0].offset, 5);
  auto at_end = consume_all(topic, {"-o", "end"});
  EXPECT_TRUE(at_end.empty());
}

TEST_F(OffsetsTest, LogAppendTimeTopicHeadersAndCount) {
  // A topic whose broker stamps LogAppendTime, records with -H headers, and
  // consume -c stopping after N records.
  const std::string topic = unique_topic("logappend");
  auto created = run_kwire({"create-topic", "-b", bootstrap(), "-t", topic, "--partitions", "1", "--config",
                            "message.timestamp.type=LogAppendTime"});
  ASSERT_EQ(created.exit_code, 0) << created.describe();
  const std::int64_t t_before = now_ms();
  auto produced =
      run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-H", "h1=v1", "-H", "empty=", "-z", "lz4"}, "a\nb\nc\n");
  const std::int64_t t_after = now_ms();
  ASSERT_EQ(produced.exit_code, 0) << produced.describe();

  auto records = consume_all(topic);
  ASSERT_EQ(records.size(), 3u);
  for (auto& r : records) {
    EXPECT_EQ(r.timestamp_type, 1) << "LogAppendTime";
    EXPECT_GE(r.timestamp, t_before - 1000);
    EXPECT_LE(r.timestamp, t_after + 1000);
    ASSERT_EQ(r.headers.size(), 2u);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, OptStr>{"h1", "v1"}));
    EXPECT_EQ(r.headers[1], (std::pair<std::string, OptStr>{"empty", ""}));
  }
  EXPECT_EQ(records[2].value, OptStr("c"));

  auto two = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-c", "2", "-q", "-f", "%o:%s:%h\\n"});
  ASSERT_EQ(two.exit_code, 0) << two.describe();
  EXPECT_EQ(two.out, "0:a:h1=v1,empty=\n1:b:h1=v1,empty=\n");

  // kcat's -J is --json.
  auto kcat_json = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-c", "1", "-q", "-J"});
  auto long_json = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-c", "1", "-q", "--json"});
  ASSERT_EQ(kcat_json.exit_code, 0) << kcat_json.describe();
  EXPECT_NE(kcat_json.out.find(R"("offset":0,)"), std::string::npos) << kcat_json.out;
  EXPECT_NE(kcat_json.out.find(R"("value":"a")"), std::string::npos) << kcat_json.out;
  EXPECT_EQ(kcat_json.out, long_json.out);
}

// --------------------------------------------------------------- Java interop

class InteropTest : public BrokerTest {};

TEST_F(InteropTest, ReadsJavaProducerPerformanceRecords) {
  const std::string topic = unique_topic("perf");
  create_topic(topic, 3);
  auto perf = run_kafka_tool({"producer-perf", "--topic", topic, "--num-records", "20000", "--record-size", "100",
                              "--throughput", "-1", "--producer-props", "bootstrap.servers=" + bootstrap(),
                              "compression.type=lz4", "batch.size=65536", "linger.ms=5", "acks=all"});
  ASSERT_EQ(perf.exit_code, 0) << perf.describe() << perf.out;
  EXPECT_NE(perf.out.find("20000 records sent"), std::string::npos) << perf.out;

  auto records = consume_all(topic);
  ASSERT_EQ(records.size(), 20000u);
  std::map<std::int32_t, std::int64_t> counts;
  expect_contiguous_offsets(records, 3, &counts);
  for (auto& r : records) {
    EXPECT_FALSE(r.key.has_value());
    ASSERT_TRUE(r.value.has_value());
    ASSERT_EQ(r.value->size(), 100u);
    ASSERT_TRUE(std::all_of(r.value->begin(), r.value->end(), [](char c) { return c >= 'A' && c <= 'Z'; })) << *r.value;
    EXPECT_EQ(r.timestamp_type, 0);
  }

  // Kafka's own console consumer sees the same values at the same positions.
  auto java = run_kafka_tool({"console-consumer", "--bootstrap-server", bootstrap(), "--topic", topic,
                              "--from-beginning", "--max-messages", "20000", "--timeout-ms", "30000", "--property",
                              "print.partition=true", "--property", "print.offset=true"});
  ASSERT_EQ(java.exit_code, 0) << java.describe();
  std::set<std::string> java_lines, kwire_lines;
  // Kafka 4.4 also prints a deprecation notice for --property on stdout.
  for (auto& l : split_lines(java.out))
    if (l.rfind("Partition:", 0) == 0) java_lines.insert(l);
  for (auto& r : records)
    kwire_lines.insert("Partition:" + std::to_string(r.partition) + "\tOffset:" + std::to_string(r.offset) + "\t" +
                       *r.value);
  EXPECT_EQ(java_lines.size(), 20000u);
  EXPECT_TRUE(java_lines == kwire_lines) << "kwire and the Java console consumer disagree";
}

TEST_F(InteropTest, ReadsJavaTransactionalProducerRecords) {
  // Committed transactions leave control records (commit markers) in the
  // log: they take offsets but must never be returned as records.
  const std::string topic = unique_topic("txn");
  create_topic(topic, 3);
  auto perf =
      run_kafka_tool({"producer-perf", "--topic", topic, "--num-records", "5000", "--record-size", "50", "--throughput",
                      "-1", "--transactional-id", unique_topic("txn-id"), "--transaction-duration-ms", "100",
                      "--producer-props", "bootstrap.servers=" + bootstrap(), "compression.type=zstd"});
  ASSERT_EQ(perf.exit_code, 0) << perf.describe() << perf.out;

  std::int64_t latest_total = 0;
  for (auto& [p, el] : cli_offsets(topic)) latest_total += el.second;
  EXPECT_GT(latest_total, 5000) << "commit markers should take offsets";

  for (const char* isolation : {"read_uncommitted", "read_committed"}) {
    SCOPED_TRACE(isolation);
    auto records = consume_all(topic, {"-X", std::string("isolation.level=") + isolation});
    ASSERT_EQ(records.size(), 5000u);
    std::map<std::int32_t, std::int64_t> last;
    for (auto& r : records) {
      ASSERT_TRUE(r.value.has_value());
      ASSERT_EQ(r.value->size(), 50u);
      auto it = last.find(r.partition);
      if (it != last.end()) {
        ASSERT_GT(r.offset, it->second);
      }
      last[r.partition] = r.offset;
    }
  }
}

TEST_F(InteropTest, ReadsJavaConsoleProducerRecordsForEveryCodec) {
  // Lines for ConsoleProducer with parse.key=true, key.separator=':' and
  // null.marker='<NULL>'.
  auto lines_for = [](const std::string& codec) {
    std::vector<std::string> lines;
    for (int i = 0; i < 1000; ++i) {
      if (i == 5) lines.push_back("<NULL>:no key " + std::to_string(i));
      else if (i == 6) lines.push_back("k-tomb:<NULL>");
      else if (i == 7) lines.push_back("k-empty:");
      else if (i == 8) lines.push_back(":empty key");
      else lines.push_back("k-" + std::to_string(i % 53) + ":" + codec + " value " + std::to_string(i) + " Grüße ✓");
    }
    return lines;
  };
  auto expected_of = [](const std::string& line) -> KeyValue {
    auto colon = line.find(':');
    auto k = line.substr(0, colon), v = line.substr(colon + 1);
    return {k == "<NULL>" ? OptStr() : OptStr(k), v == "<NULL>" ? OptStr() : OptStr(v)};
  };

  TempDir dir;
  std::map<std::string, std::string> topic_of;
  std::string script = "set -e; pids=''; ";
  for (const char* codec : kCodecs) {
    auto topic = unique_topic(std::string("console-") + codec);
    create_topic(topic, 3);
    topic_of[codec] = topic;
    std::string input;
    for (auto& l : lines_for(codec)) input += l + "\n";
    write_file(dir / codec, input);
    // One JVM per codec, started together.
    script += shell_quote(source_dir() + "/scripts/kafka") + " tool console-producer --bootstrap-server " +
              shell_quote(bootstrap()) + " --topic " + shell_quote(topic) + " --compression-codec " + codec +
              " --property parse.key=true --property key.separator=: --property null.marker='<NULL>'" +
              " --producer-property acks=all --producer-property linger.ms=5 <" + shell_quote((dir / codec).string()) +
              " & pids=\"$pids $!\"; ";
  }
  script += "for p in $pids; do wait $p; done";
  auto producers = run(script, {}, 180);
  ASSERT_EQ(producers.exit_code, 0) << producers.describe();

  for (const char* codec : kCodecs) {
    SCOPED_TRACE(codec);
    auto lines = lines_for(codec);
    auto records = consume_all(topic_of[codec]);
    ASSERT_EQ(records.size(), lines.size());
    expect_contiguous_offsets(records, 3);
    std::vector<KeyValue> expected, actual;
    for (auto& l : lines) expected.push_back(expected_of(l));
    for (auto& r : records) {
      actual.emplace_back(r.key, r.value);
      EXPECT_EQ(r.timestamp_type, 0);
      // The Java producer partitions keyed records with murmur2; kwire's
      // murmur2 must agree (this is what makes keyed kwire producers land
      // where Java ones do).
      if (r.key) {
        EXPECT_EQ(r.partition, java_partition(*r.key, 3)) << "key '" << *r.key << "'";
      }
    }
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    EXPECT_TRUE(actual == expected) << "records read differ from the lines produced";
  }
}

// -------------------------------------------------------------------- errors

class ErrorsTest : public BrokerTest {};

/// A TCP port on 127.0.0.1 with nothing listening (bound, then released).
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

TEST_F(ErrorsTest, MissingTopicIsNamed) {
  const std::string topic = unique_topic("does-not-exist");
  auto consume = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-e", "-q"}, {}, 60);
  EXPECT_NE(consume.exit_code, 0) << consume.describe();
  EXPECT_NE(consume.exit_code, 124) << "timed out: " << consume.describe();
  EXPECT_NE(consume.err.find(topic), std::string::npos) << consume.err;
  EXPECT_TRUE(consume.out.empty());
  EXPECT_LT(consume.seconds, 30);

  auto offsets = run_kwire({"offsets", "-b", bootstrap(), "-t", topic}, {}, 60);
  EXPECT_NE(offsets.exit_code, 0) << offsets.describe();
  EXPECT_NE(offsets.err.find(topic), std::string::npos) << offsets.err;

  auto produce = run_kwire({"produce", "-b", bootstrap(), "-t", topic}, "a\nb\n", 60);
  EXPECT_NE(produce.exit_code, 0) << produce.describe();
  EXPECT_NE(produce.exit_code, 124) << "timed out: " << produce.describe();
  EXPECT_NE(produce.err.find(topic), std::string::npos) << produce.err;

  KafkaClient client(client_props());
  try {
    client.partition_count(topic);
    ADD_FAILURE() << "partition_count of a missing topic did not throw";
  } catch (const KafkaError& e) {
    EXPECT_EQ(e.code(), 3) << e.what();  // UNKNOWN_TOPIC_OR_PARTITION
    EXPECT_NE(std::string(e.what()).find(topic), std::string::npos) << e.what();
  }
}

TEST_F(ErrorsTest, BadPartitionAndOffsetAreRejected) {
  const std::string topic = unique_topic("bad-args");
  create_topic(topic, 2);
  auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "0"}, "one\ntwo\n");
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  auto bad_partition = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-p", "5", "-e", "-q"});
  EXPECT_NE(bad_partition.exit_code, 0);
  EXPECT_NE(bad_partition.err.find("partition 5"), std::string::npos) << bad_partition.err;

  auto bad_offset = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-p", "0", "-o", "7", "-e", "-q"});
  EXPECT_NE(bad_offset.exit_code, 0);
  EXPECT_NE(bad_offset.err.find("offset 7"), std::string::npos) << bad_offset.err;

  auto bad_word = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", "middle", "-e", "-q"});
  EXPECT_NE(bad_word.exit_code, 0);
  EXPECT_NE(bad_word.err.find("middle"), std::string::npos) << bad_word.err;
}

TEST_F(ErrorsTest, RefusedConnectionIsReportedQuickly) {
  const std::string addr = "127.0.0.1:" + std::to_string(closed_port());
  auto r = run_kwire(
      {"metadata", "-b", addr, "-X", "socket.connection.setup.timeout.ms=2000", "-X", "request.timeout.ms=3000"}, {},
      60);
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.exit_code, 124) << "timed out: " << r.describe();
  EXPECT_NE(r.err.find(addr), std::string::npos) << "error should name the broker: " << r.err;
  EXPECT_LT(r.seconds, 15) << r.err;

  auto c = run_kwire({"consume", "-b", addr, "-t", "anything", "-e", "-q", "-X",
                      "socket.connection.setup.timeout.ms=2000", "-X", "request.timeout.ms=3000"},
                     {}, 60);
  EXPECT_NE(c.exit_code, 0) << c.describe();
  EXPECT_NE(c.err.find(addr), std::string::npos) << c.err;
  EXPECT_LT(c.seconds, 15) << c.err;
}

TEST_F(ErrorsTest, SilentBrokerTimesOut) {
  // A socket that accepts connections (the kernel completes the handshake)
  // but never answers a request.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string target = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  // Each attempt waits request.timeout.ms; with retries=1 there are two.
  auto r = run_kwire({"metadata", "-b", target, "-X", "socket.connection.setup.timeout.ms=2000", "-X",
                      "request.timeout.ms=2000", "-X", "retries=1"},
                     {}, 60);
  ::close(fd);
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.exit_code, 124) << "kwire did not give up by itself: " << r.describe();
  EXPECT_NE(r.err.find(target), std::string::npos) << "error should name the broker: " << r.err;
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_GE(r.seconds, 2.0) << "gave up before request.timeout.ms: " << r.err;
  EXPECT_LT(r.seconds, 10.0) << r.err;
}

TEST_F(ErrorsTest, UnknownClientPropertyIsWarnedAboutByName) {
  auto r = run_kwire({"metadata", "-b", bootstrap(), "-X", "foo.bar=s3cret", "-X", "group.id=g", "-X", "debug=all",
                      "-X", "enable.auto.commit=false"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("kwire: warning: The configuration 'foo.bar' was supplied but isn't a known config"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << "the value must not be printed: " << r.err;
  EXPECT_EQ(r.err.find("group.id"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("debug"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("enable.auto.commit"), std::string::npos) << r.err;

  auto clean = run_kwire({"metadata", "-b", bootstrap()});
  ASSERT_EQ(clean.exit_code, 0) << clean.describe();
  EXPECT_EQ(clean.err.find("warning"), std::string::npos) << clean.err;
}

TEST_F(ErrorsTest, OffsetsAndCountsAreParsedStrictly) {
  const std::string topic = unique_topic("strict-args");
  create_topic(topic, 1);
  auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "0"}, "one\ntwo\n");
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  struct Case {
    std::string offset, message;
  };
  for (const Case& c :
       {Case{"s@abc", "invalid offset 's@abc': expected a number"},
        Case{"s@123abc", "invalid offset 's@123abc': expected a number"},
        Case{"s@", "invalid offset 's@': expected a number"}, Case{"s@-5", "invalid offset 's@-5'"},
        Case{"12x", "invalid offset '12x'"}, Case{"99999999999999999999", "invalid offset '99999999999999999999'"}}) {
    auto bad = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", c.offset, "-e", "-q"}, {}, 60);
    EXPECT_EQ(bad.exit_code, 1) << bad.describe();
    EXPECT_NE(bad.err.find(c.message), std::string::npos) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << bad.out;
  }
  // -N past the beginning is clamped, not an overflow.
  auto all = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-o", "-9223372036854775807", "-e", "-q"});
  ASSERT_EQ(all.exit_code, 0) << all.describe();
  EXPECT_EQ(all.out, "one\ntwo\n");

  auto negative = run_kwire({"consume", "-b", bootstrap(), "-t", topic, "-c", "-1", "-e", "-q"});
  EXPECT_NE(negative.exit_code, 0) << negative.describe();
  EXPECT_NE(negative.err.find("--count: -1 is not allowed: must be 0 or more"), std::string::npos) << negative.err;

  auto partitions = run_kwire({"create-partitions", "-b", bootstrap(), "-t", topic, "--count", "-2"});
  EXPECT_NE(partitions.exit_code, 0) << partitions.describe();
  EXPECT_NE(partitions.err.find("--count: -2 is not allowed: must be 1 or more"), std::string::npos) << partitions.err;
  EXPECT_LT(partitions.err.size(), 200u) << partitions.err;
}

TEST_F(OffsetsTest, NegativeTimestampsOtherThanTheSpecialValuesAreRejected) {
  const std::string topic = unique_topic("neg-ts");
  create_topic(topic, 1);
  auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "0"}, "a\nb\nc\n");
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  auto bad = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "--timestamp", "-7"});
  EXPECT_EQ(bad.exit_code, 1) << bad.describe();
  EXPECT_NE(bad.err.find("invalid --timestamp -7"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("UNSUPPORTED_VERSION"), std::string::npos) << bad.err;

  auto latest = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "--timestamp", "-1"});
  ASSERT_EQ(latest.exit_code, 0) << latest.describe();
  EXPECT_EQ(latest.out, topic + " [0] earliest 0 latest 3 at-timestamp 3\n");
  auto earliest = run_kwire({"offsets", "-b", bootstrap(), "-t", topic, "--timestamp", "-2"});
  ASSERT_EQ(earliest.exit_code, 0) << earliest.describe();
  EXPECT_EQ(earliest.out, topic + " [0] earliest 0 latest 3 at-timestamp 0\n");
}

TEST_F(OffsetsTest, ReadRangePastTheLatestOffsetFailsAtOnce) {
  const std::string topic = unique_topic("range-past-end");
  create_topic(topic, 1);
  std::string input;
  for (int i = 0; i < 200; ++i) input += std::to_string(i) + "\n";
  auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", "0"}, input);
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  auto past =
      run_kwire({"read-range", "-b", bootstrap(), "-t", topic, "-p", "0", "--from", "190", "--until", "500"}, {}, 60);
  EXPECT_EQ(past.exit_code, 1) << past.describe();
  EXPECT_NE(past.err.find("--until 500 is past the latest offset 200"), std::string::npos) << past.err;
  EXPECT_TRUE(past.out.empty()) << past.out;
  EXPECT_LT(past.seconds, 30) << past.err;

  auto ok = run_kwire({"read-range", "-b", bootstrap(), "-t", topic, "-p", "0", "--from", "197", "--until", "200"});
  ASSERT_EQ(ok.exit_code, 0) << ok.describe();
  EXPECT_NE(ok.out.find("\"value\":\"199\""), std::string::npos) << ok.out;
}

class ClientSecurityErrorsTest : public SecureBrokerTest {};

TEST_F(ClientSecurityErrorsTest, WrongSecurityProtocolGetsAHint) {
  const std::string hint = "(is security.protocol right? the broker may expect SSL or SASL on this port)";
  auto ssl = run_kwire({"metadata", "-b", addr("KWIRE_SECURE_SSL_PORT"), "-X", "request.timeout.ms=3000", "-X",
                        "default.api.timeout.ms=5000", "-X", "retries=0"},
                       {}, 60);
  EXPECT_EQ(ssl.exit_code, 1) << ssl.describe();
  EXPECT_NE(ssl.err.find(hint), std::string::npos) << ssl.err;

  auto sasl = run_kwire(
      {"metadata", "-b", addr("KWIRE_SECURE_SASL_PLAINTEXT_PORT"), "-X", "sasl.mechanism=PLAIN", "-X",
       "sasl.username=" + env_.at("KWIRE_SECURE_USER"), "-X", "sasl.password=" + env_.at("KWIRE_SECURE_PASSWORD"), "-X",
       "default.api.timeout.ms=5000", "-X", "retries=0"},
      {}, 60);
  EXPECT_EQ(sasl.exit_code, 1) << sasl.describe();
  EXPECT_NE(sasl.err.find("kwire: warning: SASL settings (sasl.mechanism, sasl.password, sasl.username) are "
                          "ignored: security.protocol is PLAINTEXT"),
            std::string::npos)
      << sasl.err;
  EXPECT_NE(sasl.err.find(hint), std::string::npos) << sasl.err;
  EXPECT_EQ(sasl.err.find(env_.at("KWIRE_SECURE_PASSWORD")), std::string::npos) << sasl.err;

  // The right protocol: no hint, no warning.
  auto good =
      run_kwire({"metadata", "-b", addr("KWIRE_SECURE_SASL_PLAINTEXT_PORT"), "-X", "security.protocol=SASL_PLAINTEXT",
                 "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=" + env_.at("KWIRE_SECURE_USER"), "-X",
                 "sasl.password=" + env_.at("KWIRE_SECURE_PASSWORD")});
  ASSERT_EQ(good.exit_code, 0) << good.describe();
  EXPECT_EQ(good.err.find("warning"), std::string::npos) << good.err;
}

TEST_F(ClientSecurityErrorsTest, MissingCaFileIsNamedWithTheSystemError) {
  auto r = run_kwire({"metadata", "-b", addr("KWIRE_SECURE_SSL_PORT"), "-X", "security.protocol=SSL", "-X",
                      "ssl.ca.location=/nonexistent-kwire-ca.pem"},
                     {}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("cannot load CA file '/nonexistent-kwire-ca.pem' (ssl.ca.location / "
                       "ssl.truststore.location): No such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.seconds, 30) << r.err;
}

}  // namespace
}  // namespace kwire_test
