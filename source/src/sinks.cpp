// The sinks: JsonLinesSink (a file per batch, written as rows arrive and made
// durable at commit), ConsoleSink, and the query's internal MeteringSink.
#include <cstdio>
#include <iterator>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"
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

JsonLinesSink::JsonLinesSink(fs::path dir, RecordJsonWriter writer, std::size_t buffer_bytes)
    : JsonLinesSink(std::move(dir), Formatter{}, buffer_bytes) {
  writer_ = std::move(writer);
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

std::string JsonLinesSink::to_json(const Row& row) {
  std::string out;
  RecordJsonWriter().append(out, row);
  return out;
}

namespace {

// Appends the lines of `rows` to `out`, by `formatter` or else `writer`;
// returns how many were kept. `flush` is called whenever `out` passes
// `chunk_bytes`, so a large write() holds a bounded chunk.
template <typename Flush>
std::int64_t format_lines(std::string& out, std::span<const Row> rows, const JsonLinesSink::Formatter& formatter,
                          const RecordJsonWriter& writer, std::size_t chunk_bytes, Flush&& flush) {
  std::int64_t kept = 0;
  for (auto& r : rows) {
    if (formatter) {
      const std::size_t mark = out.size();
      if (!formatter(out, r)) {
        out.resize(mark);
        continue;
      }
    } else {
      writer.append(out, r);
    }
    out += '\n';
    ++kept;
    if (out.size() >= chunk_bytes) flush();
  }
  return kept;
}

constexpr std::size_t kChunkBytes = std::size_t{256} << 10;

}  // namespace

void JsonLinesSink::write(std::span<const Row> rows) {
  if (!file_) throw std::logic_error(fmt::format("JsonLinesSink[{}]: write without begin_batch", dir_.string()));
  chunk_.clear();
  auto flush = [&] {
    file_->append(chunk_);
    chunk_.clear();
  };
  kept_ += format_lines(chunk_, rows, formatter_, writer_, kChunkBytes, flush);
  if (!chunk_.empty()) flush();
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
  auto flush = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  kept_ += format_lines(out, rows, formatter_, writer_, kChunkBytes, flush);
  flush();
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
