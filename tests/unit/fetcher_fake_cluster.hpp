// A fake cluster for the Fetcher's unit tests: no sockets, answers built
// from in-memory partition logs of real magic-2 record batches. Shared by
// fetcher_test.cpp and fetcher_follower_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "kwire/client/fetcher.hpp"
#include "kwire/protocol/errors.hpp"

namespace kwire_test {

using namespace kwire::client;
using namespace kwire::protocol;
using namespace std::chrono_literals;

inline const TopicPartition A{"t", 0};
inline const TopicPartition B{"t", 1};

struct Batch {
  std::int64_t base = 0;
  std::int64_t last = 0;
  Bytes bytes;
};

class FakeCluster : public FetchCluster {
 public:
  // ---- what the test sets
  std::map<TopicPartition, Leader> leaders{{A, {1, 5, 0}}, {B, {2, 5, 0}}};
  std::map<TopicPartition, std::vector<Batch>> logs;
  std::int16_t version = 12;
  bool hold = false;                   // answers are not ready while set
  std::set<std::int32_t> unreachable;  // nodes whose connection fails
  // Changes the response built for a request before it is returned.
  std::function<void(std::int32_t node, FetchResponse&)> edit;
  std::map<TopicPartition, EpochEndOffset> epoch_end_offsets;
  std::map<TopicPartition, std::int64_t> log_start;

  // ---- what the test reads
  struct SentFetch {
    std::int32_t node;
    FetchRequest request;
  };
  std::vector<SentFetch> fetches;
  std::vector<std::map<TopicPartition, EpochQuery>> epoch_queries;
  int refreshes = 0;

  // Append `count` records (values "v<offset>") as one batch with a leader epoch.
  void append(const TopicPartition& tp, int count, std::int32_t epoch = 5) {
    auto& log = logs[tp];
    const std::int64_t base = log.empty() ? 0 : log.back().last + 1;
    std::vector<ProducerRecord> recs;
    for (int i = 0; i < count; ++i) {
      ProducerRecord r;
      const std::string v = "v" + std::to_string(base + i);
      r.value = Bytes(v.begin(), v.end());
      r.timestamp = 1000 + base + i;
      recs.push_back(std::move(r));
    }
    BatchOptions opt;
    opt.base_offset = base;
    opt.partition_leader_epoch = epoch;
    Batch b;
    b.base = base;
    b.last = base + count - 1;
    encode_record_batch(recs, opt, b.bytes);
    log.push_back(std::move(b));
  }
  // Flip a byte inside the records of the batch at `base` (the CRC no longer matches).
  void corrupt(const TopicPartition& tp, std::int64_t base) {
    for (auto& b : logs[tp])
      if (b.base == base) b.bytes.back() ^= 0x5a;
  }
  // Forget everything from `offset` on (a truncated log).
  void truncate(const TopicPartition& tp, std::int64_t offset) {
    auto& log = logs[tp];
    std::erase_if(log, [&](const Batch& b) { return b.base >= offset; });
  }

  // ---- FetchCluster
  Leader leader(const TopicPartition& tp) override {
    auto it = leaders.find(tp);
    return it == leaders.end() ? Leader{-1, -1, static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition)}
                               : it->second;
  }
  void refresh_metadata(const std::vector<std::string>&) override { ++refreshes; }
  std::optional<Uuid> topic_id(const std::string&) override { return std::nullopt; }
  const std::string* topic_name(const Uuid&) override { return nullptr; }
  std::int16_t fetch_version(std::int32_t node) override {
    if (unreachable.count(node)) throw ConnectionError("node " + std::to_string(node) + " cannot be reached");
    return version;
  }
  std::int32_t send_fetch(std::int32_t node, const FetchRequest& request, std::int16_t) override {
    fetches.push_back({node, request});
    return static_cast<std::int32_t>(fetches.size() - 1);
  }
  std::optional<std::size_t> wait_any(const std::vector<Pending>& pending, Deadline until) override {
    if (hold || pending.empty()) {
      if (until > Clock::now() && until - Clock::now() < 5s) std::this_thread::sleep_until(until);
      return std::nullopt;
    }
    // The oldest request is answered first.
    std::size_t oldest = 0;
    for (std::size_t i = 1; i < pending.size(); ++i)
      if (pending[i].token < pending[oldest].token) oldest = i;
    return oldest;
  }
  Response<FetchResponse> receive_fetch(const Pending& pending, std::int16_t v) override {
    const auto& req = fetches.at(static_cast<std::size_t>(pending.token)).request;
    Response<FetchResponse> out;
    out.version = v;
    out.frame = std::make_shared<Bytes>();
    for (auto& t : req.topics) {
      FetchResponse::FetchableTopicResponse rt;
      rt.topic = t.topic;
      for (auto& p : t.partitions) {
        TopicPartition tp{t.topic, p.partition};
        FetchResponse::PartitionData pd;
        pd.partition_index = p.partition;
        pd.log_start_offset = log_start.count(tp) ? log_start[tp] : 0;
        auto& log = logs[tp];
        pd.high_watermark = log.empty() ? 0 : log.back().last + 1;
        pd.last_stable_offset = pd.high_watermark;
        if (p.fetch_offset > pd.high_watermark || p.fetch_offset < pd.log_start_offset) {
          pd.error_code = static_cast<std::int16_t>(ErrorCode::offset_out_of_range);
        } else {
          auto& blob = blobs_.emplace_back();
          for (auto& b : log)
            if (b.last >= p.fetch_offset) blob.insert(blob.end(), b.bytes.begin(), b.bytes.end());
          if (!blob.empty()) pd.records.data = ByteSpan(blob);
        }
        rt.partitions.push_back(std::move(pd));
      }
      out.body.responses.push_back(std::move(rt));
    }
    if (edit) edit(pending.node, out.body);
    return out;
  }
  std::map<TopicPartition, ListedOffset> list_offsets(const std::map<TopicPartition, std::int64_t>& targets) override {
    std::map<TopicPartition, ListedOffset> out;
    for (auto& [tp, ts] : targets) {
      auto& log = logs[tp];
      const std::int64_t start = log_start.count(tp) ? log_start[tp] : 0;
      out[tp].offset = ts == kEarliestTimestamp ? start : (log.empty() ? 0 : log.back().last + 1);
    }
    return out;
  }
  std::map<TopicPartition, EpochEndOffset> offsets_for_leader_epoch(
      std::int32_t, const std::map<TopicPartition, EpochQuery>& queries) override {
    epoch_queries.push_back(queries);
    std::map<TopicPartition, EpochEndOffset> out;
    for (auto& [tp, q] : queries) out[tp] = epoch_end_offsets.at(tp);
    return out;
  }

 private:
  std::deque<Bytes> blobs_;  // record bytes the answers point into
};

inline ClientConfig config() {
  ClientConfig c;
  c.bootstrap_servers.push_back({"127.0.0.1", 9092});
  c.retry_backoff_ms = 1;
  c.retry_backoff_max_ms = 64;
  c.retries = 3;
  return c;
}

inline std::vector<std::pair<std::int32_t, std::int64_t>> offsets(const ConsumerRecords& recs) {
  std::vector<std::pair<std::int32_t, std::int64_t>> out;
  for (auto& r : recs) out.emplace_back(r.partition, r.offset);
  return out;
}

inline std::vector<std::pair<std::int32_t, std::int64_t>> range(std::int32_t partition, std::int64_t from,
                                                                std::int64_t to) {
  std::vector<std::pair<std::int32_t, std::int64_t>> out;
  for (auto o = from; o < to; ++o) out.emplace_back(partition, o);
  return out;
}

inline std::vector<std::pair<std::int32_t, std::int64_t>> cat(
    std::vector<std::pair<std::int32_t, std::int64_t>> a, const std::vector<std::pair<std::int32_t, std::int64_t>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Up to five polls, until at least `n` records came; their offsets.
inline std::vector<std::pair<std::int32_t, std::int64_t>> poll_for(Fetcher& f, std::size_t n,
                                                                   std::chrono::milliseconds each) {
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  for (int i = 0; i < 5 && got.size() < n; ++i) {
    auto o = offsets(f.poll(each, 100));
    got.insert(got.end(), o.begin(), o.end());
  }
  return got;
}

// The partitions a Fetch asked for, with their offsets.
inline std::map<TopicPartition, std::int64_t> asked(const FetchRequest& r) {
  std::map<TopicPartition, std::int64_t> out;
  for (auto& t : r.topics)
    for (auto& p : t.partitions) out[{t.topic, p.partition}] = p.fetch_offset;
  return out;
}

}  // namespace kwire_test
