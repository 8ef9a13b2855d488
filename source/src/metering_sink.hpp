// A sink in front of the user's that counts records and bytes per partition
// for the bytes-behind-latest estimate.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>

#include "kwire/source/planning.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::source::detail {

// Counts records and bytes (key + value + header keys and values) per
// partition, and forwards everything to the inner sink.
class MeteringSink : public Sink {
 public:
  explicit MeteringSink(Sink& inner) : inner_(inner) {}
  void prepare_batch(const BatchContext& context) override { inner_.prepare_batch(context); }
  void begin_batch(std::int64_t batch_id) override {
    seen_.clear();
    inner_.begin_batch(batch_id);
  }
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t batch_id) override { return inner_.commit_batch(batch_id); }
  bool writes_behind() const override { return inner_.writes_behind(); }
  void release_rows() noexcept override { inner_.release_rows(); }
  std::string description() const override { return inner_.description(); }
  /// (records, bytes) per partition since begin_batch.
  std::map<TopicPartition, std::pair<std::int64_t, std::int64_t>> take() { return std::move(seen_); }

 private:
  Sink& inner_;
  std::map<TopicPartition, std::pair<std::int64_t, std::int64_t>> seen_;
};

}  // namespace kwire::source::detail
