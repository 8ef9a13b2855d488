// The sinks: JsonLinesSink (a file per batch, written as rows arrive and made
// durable at commit), ConsoleSink, and the query's internal MeteringSink.
#include <cstdio>
#include <iterator>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/sink.hpp"
#include "metering_sink.hpp"

namespace kwire::source {

namespace fs = std::filesystem;

JsonLinesSink::JsonLinesSink(fs::path dir, Formatter formatter, std::size_t buffer_bytes)
    : dir_(std::move(dir)), formatter_(std::move(formatter)), buffer_bytes_(buffer_bytes) {
  fs::create_directories(dir_);
  // A process killed while writing a batch file leaves its temp file.
  checkpoint::remove_stale_temp_files(dir_);
}

// The open batch's temp file, if any, is deleted (AtomicFileWriter's destructor).
JsonLinesSink::~JsonLinesSink() = default;

fs::path JsonLinesSink::part_path(std::int64_t batch_id) const {
  return dir_ / fmt::format("part-{:020d}.jsonl", batch_id);
}

void JsonLinesSink::begin_batch(std::int64_t batch_id) {
  // A batch begun and never committed (it failed) leaves nothing behind.
  file_.reset();
  kept_ = 0;
  batch_id_ = batch_id;
  file_ = std::make_unique<checkpoint::AtomicFileWriter>(part_path(batch_id), buffer_bytes_);
}

void JsonLinesSink::append_json(std::string& out, const Row& row) {
  // Null fields (key, value, a header's value) are left out, as Spark's JSON
  // writer does by default (ignoreNullFields=true).
  out += '{';
  if (row.key) {
    out += "\"key\":";
    append_json_string(out, row.key_string());
    out += ',';
  }
  if (row.value) {
    out += "\"value\":";
    append_json_string(out, row.value_string());
    out += ',';
  }
  out += "\"topic\":";
  append_json_string(out, row.topic);
  fmt::format_to(std::back_inserter(out), ",\"partition\":{},\"offset\":{},\"timestamp\":{},\"timestampType\":{}",
                 row.partition, row.offset, row.timestamp, row.timestamp_type);
  if (row.headers) {
    out += ",\"headers\":[";
    for (std::size_t i = 0; i < row.headers->size(); ++i) {
      auto& h = (*row.headers)[i];
      out += i ? ",{\"key\":" : "{\"key\":";
      append_json_string(out, h.key);
      if (h.value) {
        out += ",\"value\":";
        append_json_string(out, std::string_view(reinterpret_cast<const char*>(h.value->data()), h.value->size()));
      }
      out += "}";
    }
    out += "]";
  }
  out += "}";
}

std::string JsonLinesSink::to_json(const Row& row) {
  std::string out;
  append_json(out, row);
  return out;
}

void JsonLinesSink::write(std::span<const Row> rows) {
  if (!file_) throw std::logic_error(fmt::format("JsonLinesSink[{}]: write without begin_batch", dir_.string()));
  for (auto& r : rows) {
    line_.clear();
    if (formatter_) {
      auto line = formatter_(r);
      if (!line) continue;
      line_ = std::move(*line);
    } else {
      append_json(line_, r);
    }
    line_ += '\n';
    file_->append(line_);
    ++kept_;
  }
}

std::int64_t JsonLinesSink::commit_batch(std::int64_t batch_id) {
  if (file_ && batch_id_ != batch_id)
    throw std::logic_error(fmt::format("JsonLinesSink[{}]: commit of batch {} while batch {} is open", dir_.string(),
                                       batch_id, batch_id_));
  // A commit without begin_batch writes an empty batch file.
  if (!file_) file_ = std::make_unique<checkpoint::AtomicFileWriter>(part_path(batch_id), buffer_bytes_);
  auto file = std::move(file_);
  file->commit();
  return kept_;
}

void ConsoleSink::write(std::span<const Row> rows) {
  std::string out;
  for (auto& r : rows) {
    if (formatter_) {
      auto line = formatter_(r);
      if (!line) continue;
      out += *line;
    } else {
      JsonLinesSink::append_json(out, r);
    }
    out += '\n';
    ++kept_;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

namespace detail {

void MeteringSink::write(std::span<const Row> rows) {
  std::pair<std::int64_t, std::int64_t>* slot = nullptr;
  std::string_view last_topic;
  std::int32_t last_partition = -1;
  for (auto& r : rows) {
    if (!slot || r.partition != last_partition || r.topic != last_topic) {
      slot = &seen_[TopicPartition{std::string(r.topic), r.partition}];
      last_topic = r.topic;
      last_partition = r.partition;
    }
    std::int64_t bytes = 0;
    if (r.key) bytes += static_cast<std::int64_t>(r.key->size());
    if (r.value) bytes += static_cast<std::int64_t>(r.value->size());
    if (r.headers)
      for (auto& h : *r.headers) bytes += static_cast<std::int64_t>(h.key.size() + (h.value ? h.value->size() : 0));
    slot->first += 1;
    slot->second += bytes;
  }
  inner_.write(rows);
}

}  // namespace detail

}  // namespace kwire::source
