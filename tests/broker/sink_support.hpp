// Shared by the sink tests (Kafka, PostgreSQL): input records with headers,
// and a sink wrapper that crashes right after its inner sink committed.
#pragma once

#include <span>
#include <stdexcept>
#include <string>

#include "common.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/sink.hpp"

namespace kwire_test {

/// Values "v-<i>" keyed "<i>" for i in [from, to), each with a header
/// "n=<i>", spread over the partitions.
inline void produce_with_headers(const std::string& topic, int from, int to) {
  kwire::client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (int i = from; i < to; ++i) {
    kwire::client::ProducerMessage m;
    m.topic = topic;
    const std::string k = std::to_string(i), v = "v-" + k;
    m.key = kwire::protocol::Bytes(k.begin(), k.end());
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    m.headers.push_back({"n", kwire::protocol::Bytes(k.begin(), k.end())});
    p.send(m);
  }
  p.flush();
}

/// A sink in front of another that fails right after the inner sink's
/// commit: the crash between the sink's commit and commits/N.
class FailAfterCommit : public kwire::source::Sink {
 public:
  FailAfterCommit(kwire::source::Sink& inner, std::string what) : inner_(inner), what_(std::move(what)) {}
  void prepare_batch(const kwire::source::BatchContext& c) override { inner_.prepare_batch(c); }
  void begin_batch(std::int64_t id) override { inner_.begin_batch(id); }
  void write(std::span<const kwire::source::Row> rows) override { inner_.write(rows); }
  std::int64_t commit_batch(std::int64_t id) override {
    inner_.commit_batch(id);
    throw std::runtime_error(what_);
  }

 private:
  kwire::source::Sink& inner_;
  std::string what_;
};

}  // namespace kwire_test
