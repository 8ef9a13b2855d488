#include "kwire/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "file_io.hpp"
#include "kwire/checkpoint/json_escape.hpp"
#include "kwire/checkpoint/log_files.hpp"
#include "kwire/protocol/bytes.hpp"

namespace kwire::checkpoint {
namespace fs = std::filesystem;
using detail::fsync_dir;
using detail::io_error;
using detail::parent_or_dot;
using detail::write_temp;

namespace {

constexpr std::string_view kOffsetsExample = R"(Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got )";

[[noreturn]] void malformed_offsets(std::string_view input) {
  std::string msg(kOffsetsExample);
  msg.append(input);
  throw CheckpointError(msg);
}

// A partition key: optional '-', then 1+ decimal digits, fitting in int32.
std::optional<std::int32_t> parse_partition_key(std::string_view key) {
  if (key.empty()) return std::nullopt;
  std::size_t digits_at = key.front() == '-' ? 1 : 0;
  if (digits_at == key.size()) return std::nullopt;
  for (std::size_t i = digits_at; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9') return std::nullopt;
  }
  std::int32_t value = 0;
  auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), value);
  if (ec != std::errc() || ptr != key.data() + key.size()) return std::nullopt;
  return value;
}

[[noreturn]] void corrupt(const fs::path& path, std::string_view why) {
  throw CheckpointError(fmt::format("Corrupt checkpoint file {}: {}", path.string(), why));
}

// Reads a whole file; nullopt when it does not exist.
std::optional<std::string> read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    io_error("Cannot open", path, errno);
  }
  std::string out;
  std::array<char, 8192> buf{};
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      io_error("Cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Creates `path` with `content` atomically unless it already exists.
// Returns false (and leaves the file alone) when it exists.
bool create_file_once(const fs::path& path, std::string_view content) {
  const fs::path tmp = write_temp(path, content);
  if (::link(tmp.c_str(), path.c_str()) == 0) {
    ::unlink(tmp.c_str());
    fsync_dir(parent_or_dot(path));
    return true;
  }
  const int err = errno;
  if (err == EEXIST) {
    ::unlink(tmp.c_str());
    return false;
  }
  // Some file systems have no hard links: fall back to check-then-rename
  // (a checkpoint folder has a single writer).
  if (err == EPERM || err == ENOTSUP || err == ENOSYS || err == EMLINK || err == EXDEV) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      ::unlink(tmp.c_str());
      return false;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int rerr = errno;
      ::unlink(tmp.c_str());
      io_error("Cannot rename temp file to", path, rerr);
    }
    fsync_dir(parent_or_dot(path));
    return true;
  }
  ::unlink(tmp.c_str());
  io_error("Cannot create", path, err);
}

std::optional<std::int64_t> latest_batch_in(const fs::path& dir) {
  std::optional<std::int64_t> best;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return std::nullopt;
    throw CheckpointError(fmt::format("Cannot list {}: {}", dir.string(), ec.message()));
  }
  for (const auto& entry : it) {
    const auto id = parse_batch_name(entry.path().filename().string());
    if (!id) continue;
    std::error_code sec;
    if (!entry.is_regular_file(sec)) continue;
    if (!best || *id > *best) best = id;
  }
  return best;
}

void purge_below(const fs::path& dir, std::int64_t threshold) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return;
  std::vector<fs::path> victims;
  for (const auto& entry : it) {
    const auto id = parse_batch_name(entry.path().filename().string());
    if (id && *id < threshold) victims.push_back(entry.path());
  }
  for (const auto& p : victims) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) io_error("Cannot delete", p, errno);
  }
}

void check_batch_id(std::int64_t batch) {
  if (batch < 0) throw CheckpointError(fmt::format("Invalid batch id {}", batch));
}

}  // namespace

const std::map<std::string, std::string>& spark_offset_log_conf() {
  static const std::map<std::string, std::string> conf{
      {"spark.sql.function.protobufExtensions.enabled", "false"},
      {"spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan", "false"},
      {"spark.sql.shuffle.partitions", "200"},
      {"spark.sql.streaming.aggregation.stateFormatVersion", "2"},
      {"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "2"},
      {"spark.sql.streaming.join.stateFormatVersion", "2"},
      {"spark.sql.streaming.multipleWatermarkPolicy", "min"},
      {"spark.sql.streaming.queryEvolution.enableSourceEvolution", "false"},
      {"spark.sql.streaming.stateStore.compression.codec", "lz4"},
      {"spark.sql.streaming.stateStore.encodingFormat", "unsaferow"},
      {"spark.sql.streaming.stateStore.providerClass",
       "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"},
      {"spark.sql.streaming.stateStore.rocksdb.formatVersion", "5"},
      {"spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion", "2"},
      {"spark.sql.streaming.stateStore.rowChecksum.enabled", "false"},
      {"spark.sql.streaming.statefulOperator.useStrictDistribution", "true"},
  };
  return conf;
}

std::string offsets_to_json(const PartitionOffsets& offsets) {
  std::string out = "{";
  bool first_topic = true;
  for (const auto& [topic, parts] : offsets) {
    if (!first_topic) out.push_back(',');
    first_topic = false;
    append_json_string(out, topic);
    out += ":{";
    bool first_part = true;
    for (const auto& [partition, offset] : parts) {
      if (!first_part) out.push_back(',');
      first_part = false;
      out += fmt::format("\"{}\":{}", partition, offset);
    }
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}

PartitionOffsets offsets_from_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc)) malformed_offsets(json);
  simdjson::dom::object topics;
  if (doc.get_object().get(topics)) malformed_offsets(json);
  PartitionOffsets result;
  for (auto field : topics) {
    simdjson::dom::object parts;
    if (field.value.get_object().get(parts)) malformed_offsets(json);
    std::map<std::int32_t, std::int64_t> parsed;
    for (auto part : parts) {
      const auto partition = parse_partition_key(part.key);
      if (!partition) malformed_offsets(json);
      if (part.value.type() != simdjson::dom::element_type::INT64) malformed_offsets(json);
      std::int64_t offset = 0;
      if (part.value.get_int64().get(offset)) malformed_offsets(json);
      parsed[*partition] = offset;
    }
    // A repeated topic key replaces the earlier one, as a JSON map reader would.
    result[std::string(field.key)] = std::move(parsed);
  }
  return result;
}

namespace {

// Takes the writer lock of `root` (which exists): returns the open lock file.
int lock_checkpoint(const fs::path& root) {
  const fs::path path = root / std::string(Checkpoint::kLockFileName);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) io_error("Cannot open lock file", path, errno);
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      io_error("Cannot lock", path, err);
    }
    std::string owner;
    std::array<char, 32> buf{};
    const ssize_t n = ::pread(fd, buf.data(), buf.size() - 1, 0);
    if (n > 0) {
      owner.assign(buf.data(), static_cast<std::size_t>(n));
      while (!owner.empty() && static_cast<unsigned char>(owner.back()) <= ' ') owner.pop_back();
    }
    ::close(fd);
    throw CheckpointError(fmt::format("checkpoint {} is in use by another running query (pid {})", root.string(),
                                      owner.empty() ? std::string("unknown") : owner));
  }
  // The pid is only for the message above: failing to record it (a full
  // disk) does not matter, the lock is what counts.
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return fd;
}

}  // namespace

Checkpoint::Checkpoint(fs::path root, int min_batches_to_retain, Access access)
    : root_(std::move(root)), min_batches_to_retain_(min_batches_to_retain), access_(access) {
  if (min_batches_to_retain_ < 1) {
    throw CheckpointError(fmt::format("min_batches_to_retain must be positive, got {}", min_batches_to_retain_));
  }
  if (root_.empty()) throw CheckpointError("Checkpoint path is empty");
  if (access_ == Access::read_only) {
    const fs::path meta = root_ / "metadata";
    if (const auto content = read_file(meta)) {
      id_ = parse_metadata(meta.string(), *content);
    }
    return;
  }
  {
    std::error_code ec;
    fs::create_directories(root_, ec);
    if (ec) throw CheckpointError(fmt::format("Cannot create folder {}: {}", root_.string(), ec.message()));
  }
  // Locked before anything else is touched: a second writer must not delete
  // the first one's temp files.
  lock_fd_ = lock_checkpoint(root_);
  try {
    open_layout();
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
}

Checkpoint::~Checkpoint() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void Checkpoint::check_writable() const {
  if (access_ == Access::read_only) {
    throw CheckpointError(fmt::format("Checkpoint {} is open read-only", root_.string()));
  }
}

void Checkpoint::open_layout() {
  for (const fs::path& dir : {root_ / "offsets", root_ / "commits", root_ / "sources" / "0"}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      throw CheckpointError(fmt::format("Cannot create folder {}: {}", dir.string(), ec.message()));
    }
  }
  // A writer killed mid-write leaves its temp file behind; nothing reads them
  // and the folder has a single writer, so they are removed here.
  for (const fs::path& dir : {root_, root_ / "offsets", root_ / "commits", root_ / "sources" / "0"}) {
    remove_stale_temp_files(dir);
  }
  const fs::path meta = root_ / "metadata";
  auto content = read_file(meta);
  if (!content) {
    create_file_once(meta, metadata_content(protocol::Uuid::random().to_string()));
    content = read_file(meta);
    if (!content) corrupt(meta, "disappeared after creation");
  }
  id_ = parse_metadata(meta.string(), *content);
}

fs::path Checkpoint::offsets_path(std::int64_t batch) const { return root_ / "offsets" / std::to_string(batch); }
fs::path Checkpoint::commit_path(std::int64_t batch) const { return root_ / "commits" / std::to_string(batch); }
fs::path Checkpoint::initial_offsets_path() const { return root_ / "sources" / "0" / "0"; }

std::optional<PartitionOffsets> Checkpoint::initial_offsets() const {
  const fs::path path = initial_offsets_path();
  const auto content = read_file(path);
  if (!content) return std::nullopt;
  return parse_initial_offsets(path.string(), *content);
}

void Checkpoint::write_initial_offsets(const PartitionOffsets& offsets) {
  check_writable();
  const fs::path path = initial_offsets_path();
  if (create_file_once(path, initial_offsets_content(offsets))) return;
  const auto existing = initial_offsets();
  if (!existing || *existing != offsets) {
    throw CheckpointError(fmt::format("Initial offsets {} already exist with different offsets: stored {}, new {}",
                                      path.string(), existing ? offsets_to_json(*existing) : std::string("<none>"),
                                      offsets_to_json(offsets)));
  }
}

std::optional<std::int64_t> Checkpoint::latest_offsets_batch() const { return latest_batch_in(root_ / "offsets"); }

std::optional<std::int64_t> Checkpoint::latest_commit_batch() const { return latest_batch_in(root_ / "commits"); }

PartitionOffsets Checkpoint::read_offsets(std::int64_t batch) const {
  check_batch_id(batch);
  const fs::path path = offsets_path(batch);
  const auto content = read_file(path);
  if (!content) throw CheckpointError(fmt::format("Missing checkpoint file {}", path.string()));
  return parse_offsets_log(path.string(), *content).offsets;
}

std::int64_t Checkpoint::read_offsets_timestamp(std::int64_t batch) const {
  check_batch_id(batch);
  const fs::path path = offsets_path(batch);
  const auto content = read_file(path);
  if (!content) throw CheckpointError(fmt::format("Missing checkpoint file {}", path.string()));
  return parse_offsets_log(path.string(), *content).batch_timestamp_ms;
}

void Checkpoint::write_offsets(std::int64_t batch, const PartitionOffsets& end, std::int64_t batch_timestamp_ms) {
  check_writable();
  check_batch_id(batch);
  const fs::path path = offsets_path(batch);
  if (!create_file_once(path, offsets_log_content(end, batch_timestamp_ms))) {
    const auto existing = read_offsets(batch);
    if (existing != end) {
      throw CheckpointError(fmt::format("Checkpoint file {} already exists with different offsets: stored {}, new {}",
                                        path.string(), offsets_to_json(existing), offsets_to_json(end)));
    }
    return;
  }
  purge(batch);
}

bool Checkpoint::has_commit(std::int64_t batch) const {
  check_batch_id(batch);
  const fs::path path = commit_path(batch);
  const auto content = read_file(path);
  if (!content) return false;
  parse_commit_log(path.string(), *content);
  return true;
}

void Checkpoint::write_commit(std::int64_t batch) {
  check_writable();
  check_batch_id(batch);
  create_file_once(commit_path(batch), commit_log_content());
  purge(batch);
}

void Checkpoint::purge(std::int64_t current_batch) {
  // Spark keeps batches [current - minBatchesToRetain, current].
  const std::int64_t threshold = current_batch - min_batches_to_retain_;
  if (threshold <= 0) return;
  purge_below(root_ / "offsets", threshold);
  purge_below(root_ / "commits", threshold);
}

ResumePoint Checkpoint::resume() const {
  ResumePoint rp;
  const auto latest = latest_offsets_batch();
  if (!latest) {
    rp.next_batch_id = 0;
    rp.start = initial_offsets().value_or(PartitionOffsets{});
    return rp;
  }
  const std::int64_t n = *latest;
  if (has_commit(n)) {
    rp.next_batch_id = n + 1;
    rp.start = read_offsets(n);
    return rp;
  }
  rp.next_batch_id = n;
  rp.replay_batch = n;
  rp.replay_end = read_offsets(n);
  if (n == 0) {
    auto initial = initial_offsets();
    if (!initial) {
      throw CheckpointError(fmt::format("Missing checkpoint file {}: needed as the start of uncommitted batch 0",
                                        initial_offsets_path().string()));
    }
    rp.start = std::move(*initial);
  } else {
    rp.start = read_offsets(n - 1);
  }
  return rp;
}

}  // namespace kwire::checkpoint
