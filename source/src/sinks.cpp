// The sinks: JsonLinesSink (a file per batch, written as rows arrive and made
// durable at commit), ConsoleSink, and the query's internal MeteringSink.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
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

}  // namespace

// The formatting threads. Given a single custom Formatter (`behind` false),
// the caller formats each round and appends it to the file. Otherwise the
// sink writes behind: `task` runs each write() on a thread of the sink's own,
// where slots 0..n-1 of `threads` format its chunks and `appender` writes
// their lines to the file, in order, on a thread of its own.
struct JsonLinesSink::Lines {
  Lines(unsigned n, bool behind)
      : formatting(n), threads(behind ? n : 1), current(1), ready(behind ? 2 * n : 0), done(ready.size()) {
    if (behind) {
      appender = std::make_unique<detail::FileAppender>();
      task = std::make_unique<detail::BackgroundTask>();
    }
  }
  const Formatter& formatter(unsigned i) const {
    static const Formatter none;
    return formatters.empty() ? none : formatters[i];
  }
  /// Waits for the write in progress, drops the lines not yet written and
  /// waits for the append in progress; forgets their errors.
  void discard() noexcept {
    if (task) task->reset();
    for (std::string& lines : current) lines.clear();
    for (std::string& lines : ready) lines.clear();
    if (appender) appender->reset();
  }
  unsigned formatting;
  std::vector<Formatter> formatters;  // one per formatting thread, or none for `writer`
  RecordJsonWriter writer;
  detail::WorkerThreads threads;
  std::vector<std::string> current;  // the lines of the caller's round, when it formats
  std::vector<std::string> ready;    // writing behind: the lines of the chunks being formatted
  std::vector<char> done;            // ... and whether each is formatted
  std::unique_ptr<detail::FileAppender> appender;
  std::unique_ptr<detail::BackgroundTask> task;  // last: stopped first
};

JsonLinesSink::JsonLinesSink(fs::path dir, Formatter formatter, std::size_t buffer_bytes)
    : dir_(std::move(dir)), buffer_bytes_(buffer_bytes) {
  lines_ = formatter ? std::make_unique<Lines>(1, false) : std::make_unique<Lines>(default_format_threads(), true);
  if (formatter) lines_->formatters.push_back(std::move(formatter));
  fs::create_directories(dir_);
  // A process killed while writing a batch file leaves its temp file.
  checkpoint::remove_stale_temp_files(dir_);
}

JsonLinesSink::JsonLinesSink(fs::path dir, RecordJsonWriter writer, std::size_t buffer_bytes)
    : JsonLinesSink(std::move(dir), Formatter{}, buffer_bytes) {
  lines_->writer = std::move(writer);
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
  Lines& lines = *lines_;
  if (!lines.task) {
    for (std::size_t i = 0; i < rows.size(); i += kRowsPerThread) {
      const auto round = rows.subspan(i, std::min(kRowsPerThread, rows.size() - i));
      std::string& out = lines.current[0];
      out.clear();
      kept_ +=
          format_lines(out, round, lines.formatter(0), lines.writer, std::numeric_limits<std::size_t>::max(), [] {});
      file_->append(out);
    }
    return;
  }
  try {
    lines.task->post([this, rows] { format_behind(rows); });
  } catch (...) {
    // The earlier write failed: the batch is lost; its lines are dropped.
    lines.discard();
    throw;
  }
}

// Runs on the sink's task thread. The rows are cut into chunks; each
// formatting thread takes the next chunk whenever it is free, so a thread
// that loses its core for a while does not hold the others back. A chunk's
// lines go to the appender, in row order, as soon as it and every chunk
// before it are formatted. At most `window` chunks are formatted ahead of
// the first one not yet handed over.
void JsonLinesSink::format_behind(std::span<const Row> rows) {
  Lines& lines = *lines_;
  const std::size_t n = lines.formatting;
  const std::size_t per_chunk = std::clamp<std::size_t>((rows.size() + n - 1) / n, kMinRowsPerThread, kRowsPerThread);
  const std::size_t chunks = (rows.size() + per_chunk - 1) / per_chunk;
  const std::size_t window = lines.ready.size();  // chunk i is formatted into ready[i % window]
  std::mutex mu;
  std::condition_variable changed;
  std::size_t next = 0;    // the next chunk to format
  std::size_t handed = 0;  // chunks handed to the appender
  bool failed = false;
  std::fill(lines.done.begin(), lines.done.end(), 0);
  lines.threads.run([&](unsigned slot) {
    std::unique_lock lock(mu);
    auto fail = [&] {
      failed = true;
      changed.notify_all();
    };
    for (;;) {
      changed.wait(lock, [&] { return failed || next >= chunks || next < handed + window; });
      if (failed || next >= chunks) return;
      const std::size_t i = next++;
      std::string& out = lines.ready[i % window];  // chunk i - window was handed over
      lock.unlock();
      out.clear();
      std::int64_t kept = 0;
      try {
        const std::size_t from = i * per_chunk;
        kept = format_lines(out, rows.subspan(from, std::min(per_chunk, rows.size() - from)), lines.formatter(slot),
                            lines.writer, std::numeric_limits<std::size_t>::max(), [] {});
      } catch (...) {
        lock.lock();
        fail();
        throw;
      }
      lock.lock();
      kept_ += kept;
      lines.done[i % window] = 1;
      for (; handed < chunks && lines.done[handed % window]; ++handed) {
        lines.done[handed % window] = 0;
        std::string& ready = lines.ready[handed % window];
        if (ready.empty()) continue;
        try {
          lines.appender->push(*file_, ready);  // waits while the appender is 4 chunks behind
        } catch (...) {
          fail();
          throw;
        }
      }
      changed.notify_all();
    }
  });
}

bool JsonLinesSink::writes_behind() const { return lines_->task != nullptr; }

void JsonLinesSink::release_rows() noexcept {
  if (lines_->task) lines_->task->settle();
}

std::int64_t JsonLinesSink::commit_batch(std::int64_t batch_id) {
  if (file_ && batch_id_ != batch_id)
    throw std::logic_error(fmt::format("JsonLinesSink[{}]: commit of batch {} while batch {} is open", dir_.string(),
                                       batch_id, batch_id_));
  // A commit without begin_batch writes an empty batch file.
  if (!file_) file_ = std::make_unique<checkpoint::AtomicFileWriter>(part_path(batch_id), buffer_bytes_);
  try {
    if (lines_->task) lines_->task->wait();
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
