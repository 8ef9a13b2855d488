// kwire dump-log: print the batches and records held in Kafka log segment
// files, raw RECORDS bytes, or a whole Fetch response body.
#include "dump_log.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/protocol/log_inspect.hpp"
#include "kwire/protocol/messages/fetch.hpp"
#include "kwire/source/json_escape.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using kwire::source::append_json_string;

namespace {

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("cannot open '{}'", path));
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string text(const std::optional<Bytes>& b) {
  if (!b) return "null";
  std::string out;
  append_json_string(out, std::string_view(reinterpret_cast<const char*>(b->data()), b->size()));
  return out;
}

// The codec named by the attributes ("unknown(N)" for codecs Kafka does not define).
std::string codec_name(const BatchHeader& h) { return compression_name(static_cast<Compression>(h.attributes & 0x07)); }

// Offsets the entry spans (for a legacy wrapper, from its first inner message to its last).
std::int32_t last_offset_delta(const InspectedBatch& b) {
  return static_cast<std::int32_t>(static_cast<std::uint64_t>(b.last_offset) -
                                   static_cast<std::uint64_t>(b.first_offset));
}

void print_result(const std::string& label, const InspectResult& r, bool json, std::string& out) {
  if (json) {
    out += "{\"source\":";
    append_json_string(out, label);
    out += ",\"batches\":[";
    for (std::size_t i = 0; i < r.batches.size(); ++i) {
      auto& b = r.batches[i];
      auto& h = b.header;
      out += fmt::format(
          "{}{{\"position\":{},\"size\":{},\"magic\":{},\"baseOffset\":{},\"lastOffsetDelta\":{},"
          "\"partitionLeaderEpoch\":{},\"crc\":{},\"crcValid\":{},\"attributes\":{},\"compression\":\"{}\","
          "\"timestampType\":{},\"isTransactional\":{},\"isControl\":{},\"baseTimestamp\":{},\"maxTimestamp\":{},"
          "\"producerId\":{},\"producerEpoch\":{},\"baseSequence\":{},\"count\":{},\"records\":[",
          i ? "," : "", b.position, b.size, h.magic, h.base_offset, last_offset_delta(b), h.partition_leader_epoch,
          h.crc, b.crc_valid, h.attributes, codec_name(h), h.timestamp_type(), h.is_transactional(), h.is_control(),
          h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence, b.record_count);
      for (std::size_t j = 0; j < b.records.size(); ++j) {
        auto& rec = b.records[j];
        out +=
            fmt::format("{}{{\"offset\":{},\"timestamp\":{},\"timestampType\":{},\"key\":{},\"value\":{},\"headers\":[",
                        j ? "," : "", rec.offset, rec.timestamp, rec.timestamp_type, text(rec.key), text(rec.value));
        for (std::size_t h = 0; h < rec.headers.size(); ++h) {
          out += h ? ",{\"key\":" : "{\"key\":";
          append_json_string(out, rec.headers[h].key);
          out += ",\"value\":" + text(rec.headers[h].value) + "}";
        }
        out += "]}";
      }
      out += "]}";
    }
    out += "],\"truncatedTail\":";
    out += r.truncated_tail ? "true" : "false";
    out += ",\"error\":";
    if (r.error) {
      append_json_string(out, *r.error);
      out += fmt::format(",\"errorPosition\":{}", r.error_position);
    } else {
      out += "null";
    }
    out += "}\n";
    return;
  }
  out += fmt::format("Dumping {}\n", label);
  for (auto& b : r.batches) {
    auto& h = b.header;
    out += fmt::format(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} partitionLeaderEpoch: {} isTransactional: {} "
        "isControl: {} position: {} CreateTime: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {} "
        "producerId: {} producerEpoch: {}\n",
        b.first_offset, b.last_offset, b.record_count, h.base_sequence, h.partition_leader_epoch, h.is_transactional(),
        h.is_control(), b.position, h.max_timestamp, b.size, h.magic, codec_name(h), h.crc, b.crc_valid, h.producer_id,
        h.producer_epoch);
    for (auto& rec : b.records) {
      out += fmt::format("| offset: {} {}: {} keySize: {} valueSize: {} key: {} payload: {}", rec.offset,
                         rec.timestamp_type == 1   ? "LogAppendTime"
                         : rec.timestamp_type == 0 ? "CreateTime"
                                                   : "NoTimestamp",
                         rec.timestamp, rec.key ? static_cast<long>(rec.key->size()) : -1L,
                         rec.value ? static_cast<long>(rec.value->size()) : -1L, text(rec.key), text(rec.value));
      if (!rec.headers.empty()) {
        out += " headers:";
        for (auto& h : rec.headers) out += " " + h.key + "=" + text(h.value);
      }
      out += "\n";
    }
  }
  if (r.truncated_tail) out += "(incomplete entry at the end: bytes after the last complete batch)\n";
  if (r.error) out += fmt::format("error at byte {}: {}\n", r.error_position, *r.error);
}

}  // namespace

int cmd_dump_log(const DumpLogArgs& args) {
  bool failed = false;
  std::string out;
  for (auto& path : args.files) {
    Bytes data = read_file(path);
    if (args.fetch_response_version) {
      FetchResponse resp;
      Reader r(data);
      decode(r, resp, *args.fetch_response_version);
      if (!r.ok())
        throw std::invalid_argument(fmt::format("'{}' is not a Fetch v{} response body: {} at byte {}", path,
                                                *args.fetch_response_version, r.error() ? r.error() : "?",
                                                r.error_offset()));
      for (auto& t : resp.responses)
        for (auto& p : t.partitions) {
          std::string label = fmt::format("{} topic {} partition {} (error {}, high watermark {})", path,
                                          t.topic.empty() ? t.topic_id.to_base64() : t.topic, p.partition_index,
                                          p.error_code, p.high_watermark);
          auto res = inspect_log(p.records.data.value_or(ByteSpan{}));
          failed = failed || res.error.has_value();
          print_result(label, res, args.json, out);
        }
    } else {
      auto res = inspect_log(data);
      failed = failed || res.error.has_value();
      print_result(path, res, args.json, out);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return failed ? 1 : 0;
}

}  // namespace kwire::tools
