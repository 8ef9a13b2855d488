// One row of the Kafka source, as sinks and writers receive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kwire/protocol/record_batch.hpp"

namespace kwire::source {

/// One row of the source, Spark's schema: key, value, topic, partition, offset,
/// timestamp (ms), timestampType (-1 none, 0 CreateTime, 1 LogAppendTime), and
/// headers (only with includeHeaders=true; nullptr when the record has none).
/// Views are valid only during the Sink::write call that receives them.
struct Row {
  std::optional<protocol::ByteSpan> key;
  std::optional<protocol::ByteSpan> value;
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = -1;
  const std::vector<protocol::RecordHeader>* headers = nullptr;

  std::string_view key_string() const {
    return key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size()) : std::string_view();
  }
  std::string_view value_string() const {
    return value ? std::string_view(reinterpret_cast<const char*>(value->data()), value->size()) : std::string_view();
  }
};

}  // namespace kwire::source
