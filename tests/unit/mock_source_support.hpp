// Shared by the streaming-source tests on the mock cluster: the query's
// options, a trigger that runs a batch per call, and a sink that keeps the
// committed rows as "topic-P@OFFSET=VALUE".
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/stream.hpp"

namespace kwire_test {

inline std::string row_text(const kwire::source::Row& r) {
  return std::string(r.topic) + "-" + std::to_string(r.partition) + "@" + std::to_string(r.offset) + "=" +
         std::string(r.value_string());
}

// `rows`: every committed row in commit order (a replayed batch's rows come
// again); `batches`: the rows of each batch id, the last commit's.
class BatchSink : public kwire::source::Sink {
 public:
  void begin_batch(std::int64_t) override { current_.clear(); }
  void write(std::span<const kwire::source::Row> rows_in) override {
    for (auto& r : rows_in) current_.push_back(row_text(r));
  }
  std::int64_t commit_batch(std::int64_t id) override {
    rows.insert(rows.end(), current_.begin(), current_.end());
    batches[id] = current_;
    return static_cast<std::int64_t>(current_.size());
  }
  std::vector<std::string> all() const {
    std::vector<std::string> out;
    for (auto& [_, b] : batches) out.insert(out.end(), b.begin(), b.end());
    return out;
  }
  std::vector<std::string> rows;
  std::map<std::int64_t, std::vector<std::string>> batches;

 private:
  std::vector<std::string> current_;
};

// subscribe=t from the earliest offsets, with short waits and retries.
inline std::map<std::string, std::string> source_options(const kwire::mock::MockCluster& c,
                                                         std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> o{{"kafka.bootstrap.servers", c.bootstrap_servers()},
                                       {"subscribe", "t"},
                                       {"startingOffsets", "earliest"},
                                       {"kafka.fetch.max.wait.ms", "20"},
                                       {"kafka.retry.backoff.ms", "20"},
                                       {"kafka.request.timeout.ms", "3000"},
                                       {"fetchOffset.retryIntervalMs", "10"},
                                       {"kafkaConsumer.pollTimeoutMs", "5000"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

// A processing-time trigger of 0: each run_once_batch() call runs a batch.
inline kwire::source::Trigger every_call() {
  kwire::source::Trigger t;
  t.kind = kwire::source::Trigger::Kind::processing_time;
  t.interval_ms = 0;
  return t;
}

// The rows "tp@O=<prefix>O" for offsets [from, until).
inline std::vector<std::string> rows_of(const std::string& tp, std::int64_t from, std::int64_t until,
                                        const std::string& prefix = "v") {
  std::vector<std::string> out;
  for (auto o = from; o < until; ++o) out.push_back(tp + "@" + std::to_string(o) + "=" + prefix + std::to_string(o));
  return out;
}

}  // namespace kwire_test
