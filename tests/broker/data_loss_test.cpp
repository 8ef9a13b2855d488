// Real-broker tests of the source's data-loss rules (Spark's failOnDataLoss
// matrix): records deleted past the checkpoint, a topic deleted and created
// again, partitions added, a topic deleted under a pattern subscription, gaps
// that are not loss; and `kwire lag` against a checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <simdjson.h>

#include "common.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/stream.hpp"

namespace fs = std::filesystem;
using namespace kwire;
using source::DataLossError;
using source::DataLossKind;

namespace {

using kwire_test::bootstrap;

std::string unique_name(const std::string& base) {
  static int n = 0;
  return fmt::format("{}-{}-{}-{}", base, getpid(),
                     std::chrono::steady_clock::now().time_since_epoch().count() % 100000, n++);
}

fs::path temp_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / fmt::format("kwire-data-loss-test-{}-{}", getpid(), name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

client::KafkaClient admin() { return client::KafkaClient({{"bootstrap.servers", bootstrap()}}); }

void create_topic(const std::string& topic, int partitions, std::map<std::string, std::string> configs = {}) {
  auto c = admin();
  c.create_topics({{topic, partitions, 1, std::move(configs)}});
}

// Values "<prefix><i>" for i in [from, to) into one partition; they land at
// offsets from..to-1 when the partition held `from` records before.
void produce(const std::string& topic, int partition, int from, int to, const std::string& prefix) {
  client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (int i = from; i < to; ++i) {
    std::string v = prefix + std::to_string(i);
    client::ProducerMessage m;
    m.topic = topic;
    m.partition = partition;
    m.value = protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
  p.flush();
}

std::int64_t delete_records(const std::string& topic, int partition, std::int64_t before) {
  auto c = admin();
  auto out = c.delete_records({{client::TopicPartition{topic, partition}, before}});
  return out.at(client::TopicPartition{topic, partition});
}

// Delete a topic and wait until the broker no longer lists it.
void delete_topic(const std::string& topic) {
  if (!kwire_test::delete_topic_and_wait(topic)) FAIL() << "topic " << topic << " still listed after deletion";
}

// Create a topic again under a name that was just deleted (the broker may
// still be finishing the deletion).
void recreate_topic(const std::string& topic, int partitions) {
  for (int i = 0;; ++i) {
    try {
      create_topic(topic, partitions);
      return;
    } catch (const client::KafkaError& e) {
      if (i >= 100) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

// value -> times seen, over every committed part file of a JsonLinesSink.
struct Output {
  std::map<std::string, int> values;
  std::set<long> batch_files;
  std::size_t lines = 0;
};

Output read_output(const fs::path& dir) {
  Output out;
  if (!fs::exists(dir)) return out;
  simdjson::ondemand::parser parser;
  for (auto& e : fs::directory_iterator(dir)) {
    auto name = e.path().filename().string();
    if (name.rfind("part-", 0) != 0 || e.path().extension() != ".jsonl") continue;
    out.batch_files.insert(std::stol(name.substr(5, 20)));
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      simdjson::padded_string ps(line);
      auto doc = parser.iterate(ps);
      out.values[std::string(std::string_view(doc["value"].get_string().value()))]++;
      out.lines++;
    }
  }
  return out;
}

// Every "<prefix><i>" for i in [from, to) exactly once.
void expect_once(const Output& out, const std::string& prefix, int from, int to) {
  for (int i = from; i < to; ++i) {
    auto it = out.values.find(prefix + std::to_string(i));
    ASSERT_NE(it, out.values.end()) << "missing " << prefix << i;
    ASSERT_EQ(it->second, 1) << "duplicate " << prefix << i;
  }
}

// No "<prefix><i>" for i in [from, to).
void expect_none(const Output& out, const std::string& prefix, int from, int to) {
  for (int i = from; i < to; ++i) ASSERT_EQ(out.values.count(prefix + std::to_string(i)), 0u) << prefix << i;
}

std::map<std::string, std::string> subscribe(const std::string& topic, bool fail_on_data_loss) {
  return {{"kafka.bootstrap.servers", bootstrap()},
          {"subscribe", topic},
          {"startingOffsets", "earliest"},
          {"failOnDataLoss", fail_on_data_loss ? "true" : "false"},
          {"fetchOffset.retryIntervalMs", "10"}};
}

source::Trigger continuous() { return source::Trigger::parse("processing-time=1 second"); }

// Runs an available-now query to the end; returns its batches.
std::vector<source::BatchProgress> run_all(const std::map<std::string, std::string>& options, const fs::path& ck,
                                           source::Sink& sink) {
  std::vector<source::BatchProgress> seen;
  source::StreamingQuery q(options, ck, sink);
  q.run([&](const source::BatchProgress& p) { seen.push_back(p); });
  return seen;
}

bool has_warning(const source::BatchProgress& p, const std::string& text) {
  for (auto& w : p.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

std::int64_t sum_rows(const std::vector<source::BatchProgress>& v) {
  std::int64_t n = 0;
  for (auto& p : v) n += p.num_input_rows;
  return n;
}

}  // namespace

// Records deleted past the committed offsets: failOnDataLoss=true stops the
// next batch with COULD_NOT_READ_OFFSET_RANGE [from, until); the batch is
// logged but not committed and its rows never reach the sink.
TEST(DataLoss, DeleteRecordsPastCheckpointFails) {
  auto topic = unique_name("dl-delete-fail");
  create_topic(topic, 2);
  produce(topic, 0, 0, 100, "a-");
  produce(topic, 1, 0, 100, "b-");
  auto dir = temp_dir("delete-fail");
  source::JsonLinesSink sink(dir / "out");
  auto first = run_all(subscribe(topic, true), dir / "ck", sink);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].num_input_rows, 200);

  produce(topic, 0, 100, 200, "a-");
  produce(topic, 1, 100, 200, "b-");
  EXPECT_EQ(delete_records(topic, 0, 150), 150);

  for (int run = 0; run < 2; ++run) {  // the second run replays the logged batch and fails the same way
    SCOPED_TRACE(run);
    try {
      run_all(subscribe(topic, true), dir / "ck", sink);
      FAIL() << "expected KAFKA_DATA_LOSS";
    } catch (const DataLossError& e) {
      EXPECT_EQ(e.kind(), DataLossKind::could_not_read_offset_range);
      EXPECT_EQ(e.topic(), topic);
      EXPECT_EQ(e.partition(), 0);
      EXPECT_EQ(e.start_offset(), 100);
      EXPECT_EQ(e.end_offset(), 200);
      std::string what = e.what();
      EXPECT_NE(what.find("KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"), std::string::npos) << what;
      EXPECT_NE(what.find("[100, 200)"), std::string::npos) << what;
      EXPECT_NE(what.find(topic + "-0"), std::string::npos) << what;
    }
    EXPECT_TRUE(fs::exists(dir / "ck" / "offsets" / "1"));
    EXPECT_FALSE(fs::exists(dir / "ck" / "commits" / "1"));
    auto out = read_output(dir / "out");
    EXPECT_EQ(out.batch_files, std::set<long>{0});
    EXPECT_EQ(out.lines, 200u);
  }

  // Allowing the loss, the logged batch runs again: the survivors once each.
  auto after = run_all(subscribe(topic, false), dir / "ck", sink);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after[0].batch_id, 1);
  EXPECT_TRUE(after[0].replayed);
  EXPECT_EQ(after[0].offset_out_of_range, 50);
  EXPECT_EQ(after[0].data_loss, 1);
  auto out = read_output(dir / "out");
  expect_once(out, "a-", 0, 100);
  expect_none(out, "a-", 100, 150);
  expect_once(out, "a-", 150, 200);
  expect_once(out, "b-", 0, 200);
  EXPECT_EQ(out.lines, 350u);
  fs::remove_all(dir);
}

// The same with failOnDataLoss=false: one warning per lost span, the span
// skipped exactly and counted in offsetOutOfRange and as one dataLoss event,
// every survivor once.
TEST(DataLoss, DeleteRecordsPastCheckpointSkipsWhenAllowed) {
  auto topic = unique_name("dl-delete-skip");
  create_topic(topic, 2);
  produce(topic, 0, 0, 100, "a-");
  produce(topic, 1, 0, 100, "b-");
  auto dir = temp_dir("delete-skip");
  source::JsonLinesSink sink(dir / "out");
  ASSERT_EQ(run_all(subscribe(topic, false), dir / "ck", sink).size(), 1u);

  // The head of the next range is gone: continue from the earliest offset.
  produce(topic, 0, 100, 200, "a-");
  produce(topic, 1, 100, 200, "b-");
  EXPECT_EQ(delete_records(topic, 0, 150), 150);
  auto second = run_all(subscribe(topic, false), dir / "ck", sink);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].batch_id, 1);
  EXPECT_EQ(second[0].num_input_rows, 150);
  EXPECT_EQ(second[0].offset_out_of_range, 50);
  EXPECT_EQ(second[0].data_loss, 1);
  ASSERT_EQ(second[0].warnings.size(), 1u);
  EXPECT_TRUE(has_warning(second[0], "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE")) << second[0].warnings[0];
  EXPECT_TRUE(has_warning(second[0], "[100, 150)")) << second[0].warnings[0];
  EXPECT_NE(second[0].to_json("q").find("\"offsetOutOfRange\":\"50\""), std::string::npos) << second[0].to_json("q");

  // The whole next range is gone (earliest >= until): skipped in full.
  produce(topic, 0, 200, 250, "a-");
  EXPECT_EQ(delete_records(topic, 0, 250), 250);
  auto third = run_all(subscribe(topic, false), dir / "ck", sink);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].num_input_rows, 0);
  EXPECT_EQ(third[0].offset_out_of_range, 50);
  EXPECT_EQ(third[0].data_loss, 1);
  ASSERT_EQ(third[0].warnings.size(), 1u);
  EXPECT_TRUE(has_warning(third[0], "[200, 250)")) << third[0].warnings[0];
  EXPECT_TRUE(fs::exists(dir / "ck" / "commits" / "2"));

  auto out = read_output(dir / "out");
  expect_once(out, "a-", 0, 100);
  expect_none(out, "a-", 100, 150);
  expect_once(out, "a-", 150, 200);
  expect_none(out, "a-", 200, 250);
  expect_once(out, "b-", 0, 200);
  EXPECT_EQ(out.lines, 350u);
  // Nothing new: no batch, no warning.
  EXPECT_TRUE(run_all(subscribe(topic, false), dir / "ck", sink).empty());
  fs::remove_all(dir);
}

// A topic deleted and created again with fewer records: the latest offset
// went backwards. true: PARTITION_OFFSET_CHANGED; false: an empty range, and
// the following batches continue from the new offsets.
TEST(DataLoss, TopicRecreatedOffsetChanged) {
  auto topic = unique_name("dl-recreated");
  create_topic(topic, 1);
  produce(topic, 0, 0, 100, "old-");
  auto dir = temp_dir("recreated");
  source::JsonLinesSink sink(dir / "out");
  auto strict = std::make_unique<source::StreamingQuery>(subscribe(topic, true), dir / "ck", sink, continuous());
  auto b0 = strict->run_once_batch();
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->num_input_rows, 100);

  delete_topic(topic);
  recreate_topic(topic, 1);
  produce(topic, 0, 0, 30, "new-");
  try {
    strict->run_once_batch();
    FAIL() << "expected PARTITION_OFFSET_CHANGED";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partition_offset_changed);
    EXPECT_EQ(e.topic(), topic);
    EXPECT_EQ(e.partition(), 0);
    EXPECT_EQ(e.start_offset(), 100);
    EXPECT_EQ(e.end_offset(), 30);
    EXPECT_NE(std::string(e.what()).find("KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"), std::string::npos) << e.what();
  }
  // As Spark, offsets/1 was logged before planning found the loss.
  EXPECT_EQ(checkpoint::Checkpoint::open_read_only(dir / "ck").read_offsets(1),
            (source::PartitionOffsets{{topic, {{0, 30}}}}));
  EXPECT_FALSE(fs::exists(dir / "ck" / "commits" / "1"));

  strict.reset();  // a stopped query gives up the checkpoint
  source::StreamingQuery lenient(subscribe(topic, false), dir / "ck", sink, continuous());
  auto b1 = lenient.run_once_batch();
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->batch_id, 1);
  EXPECT_TRUE(b1->replayed);  // the logged range, replayed
  EXPECT_TRUE(b1->ranges.empty());
  EXPECT_EQ(b1->num_input_rows, 0);
  EXPECT_EQ(b1->end_offsets, (source::PartitionOffsets{{topic, {{0, 30}}}}));
  ASSERT_EQ(b1->warnings.size(), 1u);
  EXPECT_TRUE(has_warning(*b1, "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED")) << b1->warnings[0];
  EXPECT_FALSE(lenient.run_once_batch());  // resumed at 30: nothing new

  produce(topic, 0, 30, 50, "new-");
  auto b2 = lenient.run_once_batch();
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->batch_id, 2);
  EXPECT_EQ(b2->num_input_rows, 20);
  EXPECT_TRUE(b2->warnings.empty());
  auto out = read_output(dir / "out");
  expect_once(out, "old-", 0, 100);
  expect_none(out, "new-", 0, 30);  // written before the source caught up with the new topic: lost, as in Spark
  expect_once(out, "new-", 30, 50);
  EXPECT_EQ(out.lines, 120u);
  fs::remove_all(dir);
}

// Partitions added while the query runs are read from offset 0, nothing
// lost. An added partition whose earliest offset is not 0 (records deleted
// before the query saw it): ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO,
// or, when allowed, read from its earliest offset.
TEST(DataLoss, PartitionsAddedStartFromEarliest) {
  auto topic = unique_name("dl-added");
  create_topic(topic, 1);
  produce(topic, 0, 0, 50, "p0-");
  auto dir = temp_dir("added");
  source::JsonLinesSink sink(dir / "out");
  auto strict = std::make_unique<source::StreamingQuery>(subscribe(topic, true), dir / "ck", sink, continuous());
  auto b0 = strict->run_once_batch();
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->num_input_rows, 50);

  admin().create_partitions(topic, 3);
  produce(topic, 1, 0, 10, "p1-");
  produce(topic, 2, 0, 10, "p2-");
  produce(topic, 0, 50, 60, "p0-");
  auto b1 = strict->run_once_batch();
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->num_input_rows, 30);
  EXPECT_TRUE(b1->warnings.empty());
  EXPECT_EQ(b1->end_offsets, (source::PartitionOffsets{{topic, {{0, 60}, {1, 10}, {2, 10}}}}));
  std::set<std::pair<int, std::int64_t>> froms;
  for (auto& r : b1->ranges) froms.insert({r.tp.partition, r.from_offset});
  EXPECT_EQ(froms, (std::set<std::pair<int, std::int64_t>>{{0, 50}, {1, 0}, {2, 0}}));

  // A fourth partition whose head is deleted before the next trigger.
  admin().create_partitions(topic, 4);
  produce(topic, 3, 0, 10, "p3-");
  EXPECT_EQ(delete_records(topic, 3, 4), 4);
  try {
    strict->run_once_batch();
    FAIL() << "expected ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::added_partition_does_not_start_from_offset_zero);
    EXPECT_EQ(e.topic(), topic);
    EXPECT_EQ(e.partition(), 3);
    EXPECT_EQ(e.start_offset(), 4);
    EXPECT_NE(std::string(e.what()).find("starts from 4 instead of 0"), std::string::npos) << e.what();
  }
  // As Spark, offsets/2 was logged before planning found the loss.
  EXPECT_EQ(checkpoint::Checkpoint::open_read_only(dir / "ck").read_offsets(2),
            (source::PartitionOffsets{{topic, {{0, 60}, {1, 10}, {2, 10}, {3, 10}}}}));

  strict.reset();  // a stopped query gives up the checkpoint
  source::StreamingQuery lenient(subscribe(topic, false), dir / "ck", sink, continuous());
  auto b2 = lenient.run_once_batch();
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->batch_id, 2);
  EXPECT_TRUE(b2->replayed);
  EXPECT_EQ(b2->num_input_rows, 6);
  ASSERT_EQ(b2->warnings.size(), 1u);
  EXPECT_TRUE(has_warning(*b2, "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO")) << b2->warnings[0];
  EXPECT_EQ(b2->offset_out_of_range, 0);
  EXPECT_FALSE(lenient.run_once_batch());

  auto out = read_output(dir / "out");
  expect_once(out, "p0-", 0, 60);
  expect_once(out, "p1-", 0, 10);
  expect_once(out, "p2-", 0, 10);
  expect_none(out, "p3-", 0, 4);
  expect_once(out, "p3-", 4, 10);
  EXPECT_EQ(out.lines, 86u);
  fs::remove_all(dir);
}

// A topic deleted under a pattern subscription (the query keeps running on
// the other topic): true: PARTITIONS_DELETED; false: the partition is dropped
// with one warning. With every matching topic gone no batch is made at all.
TEST(DataLoss, TopicDeletedPartitionsDeleted) {
  auto prefix = unique_name("dl-deleted");
  auto keep = prefix + "-keep", gone = prefix + "-gone";
  create_topic(keep, 1);
  create_topic(gone, 2);
  produce(keep, 0, 0, 10, "k-");
  produce(gone, 0, 0, 10, "g-");
  auto dir = temp_dir("deleted");
  auto options = [&](bool fail) {
    auto o = subscribe(keep, fail);
    o.erase("subscribe");
    o["subscribePattern"] = "^" + prefix + "-(keep|gone)$";
    return o;
  };
  source::JsonLinesSink sink(dir / "out");
  auto strict = std::make_unique<source::StreamingQuery>(options(true), dir / "ck", sink, continuous());
  auto b0 = strict->run_once_batch();
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->num_input_rows, 20);

  delete_topic(gone);
  produce(keep, 0, 10, 15, "k-");
  try {
    strict->run_once_batch();
    FAIL() << "expected PARTITIONS_DELETED";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partitions_deleted);
    EXPECT_EQ(e.partitions(),
              (std::vector<source::TopicPartition>{source::TopicPartition{gone, 0}, source::TopicPartition{gone, 1}}));
    EXPECT_NE(std::string(e.what()).find("KAFKA_DATA_LOSS.PARTITIONS_DELETED"), std::string::npos) << e.what();
  }
  // As Spark, offsets/1 was logged before planning found the loss.
  EXPECT_EQ(checkpoint::Checkpoint::open_read_only(dir / "ck").read_offsets(1),
            (source::PartitionOffsets{{keep, {{0, 15}}}}));

  strict.reset();  // a stopped query gives up the checkpoint
  auto lenient = std::make_unique<source::StreamingQuery>(options(false), dir / "ck", sink, continuous());
  auto b1 = lenient->run_once_batch();
  ASSERT_TRUE(b1);
  EXPECT_TRUE(b1->replayed);
  EXPECT_EQ(b1->num_input_rows, 5);
  ASSERT_EQ(b1->warnings.size(), 1u);
  EXPECT_TRUE(has_warning(*b1, "KAFKA_DATA_LOSS.PARTITIONS_DELETED")) << b1->warnings[0];
  EXPECT_EQ(b1->end_offsets, (source::PartitionOffsets{{keep, {{0, 15}}}}));
  EXPECT_FALSE(lenient->run_once_batch());  // dropped for good: no second warning

  // Every matching topic gone: an empty listing is no batch, even with true.
  delete_topic(keep);
  lenient.reset();
  strict = std::make_unique<source::StreamingQuery>(options(true), dir / "ck", sink, continuous());
  EXPECT_FALSE(strict->run_once_batch());
  strict.reset();
  lenient = std::make_unique<source::StreamingQuery>(options(false), dir / "ck", sink, continuous());
  EXPECT_FALSE(lenient->run_once_batch());
  EXPECT_FALSE(fs::exists(dir / "ck" / "offsets" / "2"));

  auto out = read_output(dir / "out");
  expect_once(out, "k-", 0, 15);
  expect_once(out, "g-", 0, 10);
  EXPECT_EQ(out.lines, 25u);
  fs::remove_all(dir);
}

// Offsets that are missing while the earliest offset is still at or below the
// one asked for were never visible (compaction, transaction markers, aborted
// records): not loss, not counted, no warning. The gap is made by log
// compaction on the real broker; when the broker's cleaner does not run in
// time the real-broker half is skipped.
TEST(DataLoss, GapsFromCompactionOrMarkersAreNotLoss) {
  // The reader's rule itself.
  EXPECT_FALSE(source::is_lost_gap(5, 0));  // earliest below: invisible records
  EXPECT_FALSE(source::is_lost_gap(5, 5));  // earliest at the offset asked for: still invisible
  EXPECT_TRUE(source::is_lost_gap(5, 6));   // earliest past it: aged out
  EXPECT_TRUE(source::is_lost_gap(0, 100));

  auto topic = unique_name("dl-compacted");
  create_topic(topic, 1,
               {{"cleanup.policy", "compact"},
                {"segment.ms", "100"},
                {"min.cleanable.dirty.ratio", "0.001"},
                {"min.compaction.lag.ms", "0"},
                {"delete.retention.ms", "0"}});
  // Keys k0..k9 twice: offsets 0-9 are superseded by 10-19.
  {
    client::Producer p({{"bootstrap.servers", bootstrap()}});
    for (int round = 0; round < 2; ++round)
      for (int i = 0; i < 10; ++i) {
        std::string k = fmt::format("k{}", i), v = fmt::format("r{}-{}", round, i);
        client::ProducerMessage m;
        m.topic = topic;
        m.partition = 0;
        m.key = protocol::Bytes(k.begin(), k.end());
        m.value = protocol::Bytes(v.begin(), v.end());
        p.send(std::move(m));
      }
    p.flush();
  }
  // Wait for the cleaner: roll the segment with one more record now and then,
  // and look at the first offset a read from 0 returns.
  auto first_offset = [&]() -> std::int64_t {
    client::Consumer c({{"bootstrap.servers", bootstrap()}, {"auto.offset.reset", "none"}});
    c.assign({{topic, 0}});
    c.seek({topic, 0}, 0);
    auto recs = c.poll(std::chrono::milliseconds(2000));
    return recs.empty() ? -1 : recs[0].offset;
  };
  int rolls = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  std::int64_t first = 0;
  while ((first = first_offset()) == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (rolls < 3) {  // a compacted topic only takes keyed records
      client::Producer p({{"bootstrap.servers", bootstrap()}});
      std::string k = "roll", v = "roll-" + std::to_string(rolls++);
      client::ProducerMessage m;
      m.topic = topic;
      m.partition = 0;
      m.key = protocol::Bytes(k.begin(), k.end());
      m.value = protocol::Bytes(v.begin(), v.end());
      p.send(std::move(m));
      p.flush();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  }
  if (first == 0) GTEST_SKIP() << "the broker's log cleaner did not compact the topic within 45 s";
  ASSERT_EQ(first, 10);
  ASSERT_EQ(admin()
                .list_offsets({{client::TopicPartition{topic, 0}, client::kEarliestTimestamp}})
                .at(client::TopicPartition{topic, 0})
                .offset,
            0);

  auto dir = temp_dir("compacted");
  source::JsonLinesSink sink(dir / "out");
  auto batches = run_all(subscribe(topic, true), dir / "ck", sink);
  ASSERT_FALSE(batches.empty());
  for (auto& b : batches) {
    EXPECT_EQ(b.data_loss, 0);
    EXPECT_EQ(b.offset_out_of_range, 0);
    EXPECT_TRUE(b.warnings.empty());
  }
  auto out = read_output(dir / "out");
  EXPECT_EQ(out.values.count("r0-0"), 0u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(out.values[fmt::format("r1-{}", i)], 1) << i;
  EXPECT_EQ(static_cast<std::int64_t>(out.lines), sum_rows(batches));
  fs::remove_all(dir);
}

// `kwire lag --checkpoint DIR`: 0 behind once the stream has drained the
// topic, positive (and exact) after more records are produced.
TEST(DataLoss, LagFromCheckpointIsZeroWhenDrainedThenGrows) {
  auto topic = unique_name("dl-lag");
  create_topic(topic, 2);
  produce(topic, 0, 0, 40, "x-");
  produce(topic, 1, 0, 20, "y-");
  auto dir = temp_dir("lag");
  source::JsonLinesSink sink(dir / "out");
  auto opts = subscribe(topic, true);
  opts["maxOffsetsPerTrigger"] = "25";
  auto batches = run_all(opts, dir / "ck", sink);
  ASSERT_GE(batches.size(), 2u);
  EXPECT_EQ(sum_rows(batches), 60);

  auto lag = [&]() {
    std::string cmd =
        fmt::format("'{}' lag -b {} --checkpoint '{}' --json", KWIRE_BIN, bootstrap(), (dir / "ck").string());
    FILE* f = popen(cmd.c_str(), "r");
    EXPECT_NE(f, nullptr);
    std::string text;
    char buf[4096];
    std::size_t n;
    while (f && (n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    int status = f ? pclose(f) : -1;
    EXPECT_EQ(status, 0) << text;
    simdjson::ondemand::parser parser;
    simdjson::padded_string ps(text);
    auto doc = parser.iterate(ps);
    std::pair<std::int64_t, std::int64_t> minmax{int64_t(doc["minOffsetsBehindLatest"].get_int64().value()),
                                                 int64_t(doc["maxOffsetsBehindLatest"].get_int64().value())};
    return minmax;
  };
  EXPECT_EQ(lag(), (std::pair<std::int64_t, std::int64_t>{0, 0}));

  produce(topic, 0, 40, 47, "x-");
  produce(topic, 1, 20, 23, "y-");
  EXPECT_EQ(lag(), (std::pair<std::int64_t, std::int64_t>{3, 7}));

  EXPECT_EQ(sum_rows(run_all(opts, dir / "ck", sink)), 10);
  EXPECT_EQ(lag(), (std::pair<std::int64_t, std::int64_t>{0, 0}));
  fs::remove_all(dir);
}
