// The sinks: JsonLinesSink (a file per batch, written as rows arrive and made
// durable at commit), ConsoleSink, and the query's internal MeteringSink.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/sink.hpp"
#include "metering_sink.hpp"
#include "worker_threads.hpp"

namespace kwire::source {

namespace fs = std::filesystem;

namespace {

// Rows per thread below which a round is not split further: handing a thread
// fewer lines costs more than it saves.
constexpr std::size_t kMinRowsPerThread = 512;

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

// The formatting threads. Given a single custom Formatter (`behind` false),
// the caller formats each round and appends it to the file. Otherwise the
// sink writes behind: `chunks` formats the rows of each write() on n threads
// of its own, by formatters[slot] or `writer`, and hands the lines, in row
// order, to `appender`, which writes them to the file on a thread of its own.
struct JsonLinesSink::Lines {
  Lines(unsigned n, bool behind) : formatting(n) {
    if (behind) appender = std::make_unique<detail::FileAppender>();
  }
  const Formatter& formatter(unsigned i) const {
    static const Formatter none;
    return formatters.empty() ? none : formatters[i];
  }
  /// Drops the lines not yet written and waits for the formatting and the
  /// append in progress; forgets their errors.
  void discard() noexcept {
    if (chunks) chunks->reset();
    current.clear();
    if (appender) appender->reset();
  }
  unsigned formatting;
  std::vector<Formatter> formatters;  // one per formatting thread, or none for `writer`
  RecordJsonWriter writer;
  std::string current;  // the lines of the caller's round, when it formats
  std::unique_ptr<detail::FileAppender> appender;
  std::unique_ptr<detail::ChunkFormatter> chunks;  // last: stopped first
};

JsonLinesSink::JsonLinesSink(fs::path dir, Formatter formatter, std::size_t buffer_bytes)
    : dir_(std::move(dir)), buffer_bytes_(buffer_bytes) {
  const bool behind = !formatter;
  lines_ = behind ? std::make_unique<Lines>(default_format_threads(), true) : std::make_unique<Lines>(1, false);
  if (!behind) lines_->formatters.push_back(std::move(formatter));
  fs::create_directories(dir_);
  // A process killed while writing a batch file leaves its temp file.
  checkpoint::remove_stale_temp_files(dir_);
  if (behind) start_formatting();
}

JsonLinesSink::JsonLinesSink(fs::path dir, RecordJsonWriter writer, std::size_t buffer_bytes)
    : dir_(std::move(dir)), buffer_bytes_(buffer_bytes) {
  lines_ = std::make_unique<Lines>(default_format_threads(), true);
  lines_->writer = std::move(writer);
  fs::create_directories(dir_);
  checkpoint::remove_stale_temp_files(dir_);
  start_formatting();
}

JsonLinesSink::JsonLinesSink(fs::path dir, const FormatterFactory& factory, unsigned threads, std::size_t buffer_bytes)
    : dir_(std::move(dir)), buffer_bytes_(buffer_bytes) {
  lines_ = std::make_unique<Lines>(std::max(threads, 1U), true);
  for (unsigned i = 0; i < lines_->formatting; ++i) {
    lines_->formatters.push_back(factory());
    if (!lines_->formatters.back())
      throw std::invalid_argument(
          fmt::format("JsonLinesSink[{}]: the formatter factory made no formatter", dir_.string()));
  }
  fs::create_directories(dir_);
  checkpoint::remove_stale_temp_files(dir_);
  start_formatting();
}

// The formatting threads take the formatters (and the writer) as they are
// now; the appender writes to the open batch's file.
void JsonLinesSink::start_formatting() {
  Lines& lines = *lines_;
  lines.chunks = std::make_unique<detail::ChunkFormatter>(
      lines.formatting,
      [&lines](unsigned slot, std::span<const Row> rows, std::string& out) {
        return format_lines(out, rows, lines.formatter(slot), lines.writer, std::numeric_limits<std::size_t>::max(),
                            [] {});
      },
      // Waits while the appender is 4 chunks behind.
      [this](std::string& out) { lines_->appender->push(*file_, out); });
}

unsigned JsonLinesSink::format_threads() const noexcept { return lines_->formatting; }

unsigned JsonLinesSink::default_format_threads() { return std::clamp(std::thread::hardware_concurrency(), 1U, 4U); }

// The open batch's temp file, if any, is deleted (AtomicFileWriter's
// destructor), once no append to it is in progress.
JsonLinesSink::~JsonLinesSink() { lines_->discard(); }

fs::path JsonLinesSink::part_path(std::int64_t batch_id) const {
  return dir_ / fmt::format("part-{:020d}.jsonl", batch_id);
}

void JsonLinesSink::begin_batch(std::int64_t batch_id) {
  // A batch begun and never committed (it failed) leaves nothing behind.
  lines_->discard();
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

void JsonLinesSink::write(std::span<const Row> rows) {
  if (!file_) throw std::logic_error(fmt::format("JsonLinesSink[{}]: write without begin_batch", dir_.string()));
  Lines& lines = *lines_;
  if (!lines.chunks) {
    for (std::size_t i = 0; i < rows.size(); i += kRowsPerThread) {
      const auto round = rows.subspan(i, std::min(kRowsPerThread, rows.size() - i));
      lines.current.clear();
      kept_ += format_lines(lines.current, round, lines.formatter(0), lines.writer,
                            std::numeric_limits<std::size_t>::max(), [] {});
      file_->append(lines.current);
    }
    return;
  }
  // Each thread takes the next chunk whenever it is free, so a thread that
  // loses its core for a while does not hold the others back; a chunk per
  // thread at least, unless the chunks would be smaller than kMinRowsPerThread.
  const std::size_t n = lines.formatting;
  const std::size_t per_chunk = std::clamp<std::size_t>((rows.size() + n - 1) / n, kMinRowsPerThread, kRowsPerThread);
  try {
    lines.chunks->write(rows, per_chunk);
  } catch (...) {
    // This or an earlier write failed: the batch is lost; its lines are dropped.
    lines.discard();
    throw;
  }
}

bool JsonLinesSink::writes_behind() const { return lines_->chunks != nullptr; }

void JsonLinesSink::release_rows() noexcept {
  if (lines_->chunks) lines_->chunks->settle();
}

std::int64_t JsonLinesSink::commit_batch(std::int64_t batch_id) {
  if (file_ && batch_id_ != batch_id)
    throw std::logic_error(fmt::format("JsonLinesSink[{}]: commit of batch {} while batch {} is open", dir_.string(),
                                       batch_id, batch_id_));
  // A commit without begin_batch writes an empty batch file.
  if (!file_) file_ = std::make_unique<checkpoint::AtomicFileWriter>(part_path(batch_id), buffer_bytes_);
  try {
    if (lines_->chunks) {
      lines_->chunks->wait();
      kept_ = lines_->chunks->kept();
    }
    if (lines_->appender) lines_->appender->drain();
  } catch (...) {
    lines_->discard();
    throw;
  }
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
