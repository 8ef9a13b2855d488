#include "file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"

namespace kwire::checkpoint {
namespace fs = std::filesystem;

namespace detail {

namespace {

std::string random_hex(std::size_t bytes) {
  std::random_device rd;
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out += fmt::format("{:02x}", static_cast<unsigned>(rd() & 0xffu));
  }
  return out;
}

// Writes all of `data` to `fd`; returns 0 or the errno of the failed write.
int write_all(int fd, std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

[[noreturn]] void io_error(std::string_view what, const fs::path& path, int err) {
  throw CheckpointError(fmt::format("{} {}: {}", what, path.string(), std::system_category().message(err)));
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) io_error("Cannot open folder", dir, errno);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int err = errno;
    ::close(fd);
    io_error("Cannot fsync folder", dir, err);
  }
  ::close(fd);
}

fs::path parent_or_dot(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

fs::path temp_path_for(const fs::path& path) {
  // Appended piecewise: GCC 12 at -O3 reports a false -Wrestrict for
  // `"." + std::string&&`.
  std::string name = ".";
  name += path.filename().string();
  name += '.';
  name += random_hex(8);
  name += ".tmp";
  return parent_or_dot(path) / name;
}

bool is_temp_name(std::string_view name) {
  constexpr std::size_t kHex = 16;
  constexpr std::string_view kSuffix = ".tmp";
  if (name.size() < 1 + 1 + 1 + kHex + kSuffix.size() || name.front() != '.') return false;
  if (name.substr(name.size() - kSuffix.size()) != kSuffix) return false;
  const std::string_view hex = name.substr(name.size() - kSuffix.size() - kHex, kHex);
  if (name[name.size() - kSuffix.size() - kHex - 1] != '.') return false;
  return std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

fs::path write_temp(const fs::path& path, std::string_view content) {
  const fs::path tmp = temp_path_for(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_error("Cannot create temp file for", path, errno);
  auto fail = [&](std::string_view what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    io_error(what, path, err);
  };
  if (int err = write_all(fd, content)) fail("Cannot write", err);
  if (::fsync(fd) != 0) fail("Cannot fsync", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    io_error("Cannot close", path, err);
  }
  return tmp;
}

}  // namespace detail

void remove_stale_temp_files(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return;
    throw CheckpointError(fmt::format("Cannot list {}: {}", dir.string(), ec.message()));
  }
  std::vector<fs::path> victims;
  for (const auto& entry : it) {
    if (detail::is_temp_name(entry.path().filename().string())) victims.push_back(entry.path());
  }
  for (const auto& p : victims) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) detail::io_error("Cannot delete stale temp file", p, errno);
  }
}

void atomic_write_file(const fs::path& path, std::string_view content) {
  const fs::path tmp = detail::write_temp(path, content);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    detail::io_error("Cannot rename temp file to", path, err);
  }
  detail::fsync_dir(detail::parent_or_dot(path));
}

// ------------------------------------------------------- AtomicFileWriter

// The writer's own thread that makes the temp file durable while it grows:
// asked for a byte mark, it calls fdatasync (which covers all written so
// far) unless a call already covered that mark. Its first error is kept for
// commit(): once reported to one fdatasync, the kernel does not report it to
// the next fsync of the same open file.
struct AtomicFileWriter::Syncer {
  explicit Syncer(int fd) : fd(fd), thread([this] { run(); }) {}
  ~Syncer() { finish(); }
  // Ends the thread (a call under way completes first); returns its first error.
  int finish() noexcept {
    if (thread.joinable()) {
      {
        std::lock_guard lock(mu);
        stop = true;
      }
      cv.notify_one();
      thread.join();
    }
    return error;
  }
  void ask(std::uint64_t mark) {
    {
      std::lock_guard lock(mu);
      asked = mark;
    }
    cv.notify_one();
  }
  void run() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || asked > done; });
      if (stop) return;
      const std::uint64_t mark = asked;
      lock.unlock();
      const int err = ::fdatasync(fd) == 0 ? 0 : errno;
      lock.lock();
      done = mark;
      ++calls;
      if (err != 0 && error == 0) error = err;
    }
  }
  const int fd;
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t asked = 0, done = 0, calls = 0;
  int error = 0;
  bool stop = false;
  std::thread thread;  // last: started once the rest is set
};

AtomicFileWriter::AtomicFileWriter(fs::path path, std::size_t buffer_bytes, std::uint64_t sync_bytes)
    : path_(std::move(path)),
      tmp_(detail::temp_path_for(path_)),
      buffer_bytes_(std::max<std::size_t>(buffer_bytes, 1)),
      sync_bytes_(std::max<std::uint64_t>(sync_bytes, 1)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) detail::io_error("Cannot create temp file for", path_, errno);
}

AtomicFileWriter::~AtomicFileWriter() { abort(); }

std::uint64_t AtomicFileWriter::background_syncs() const noexcept {
  if (!syncer_) return 0;
  std::lock_guard lock(syncer_->mu);
  return syncer_->calls;
}

void AtomicFileWriter::abort() noexcept {
  if (fd_ < 0) return;
  syncer_.reset();  // before the file is closed
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  buffer_.clear();
  buffer_.shrink_to_fit();
}

void AtomicFileWriter::write_through(std::string_view data) {
  if (int err = detail::write_all(fd_, data)) {
    abort();
    detail::io_error("Cannot write", path_, err);
  }
  written_ += data.size();
#if defined(__linux__)
  // The kernel is asked to start writing each few MiB out as they arrive, so
  // the fsync of commit() has little left to wait for. Only a hint: its
  // errors are those fsync reports.
  constexpr std::uint64_t kWritebackBytes = std::uint64_t{8} << 20;
  if (written_ - writeback_from_ >= kWritebackBytes) {
    ::sync_file_range(fd_, static_cast<off64_t>(writeback_from_), static_cast<off64_t>(written_ - writeback_from_),
                      SYNC_FILE_RANGE_WRITE);
    writeback_from_ = written_;
  }
#endif
  if (written_ - sync_asked_ >= sync_bytes_) {
    sync_asked_ = written_;
    if (!syncer_) {
      try {
        syncer_ = std::make_unique<Syncer>(fd_);
      } catch (const std::system_error&) {
        // No thread to be had: commit()'s fsync alone makes the file durable.
        sync_bytes_ = std::numeric_limits<std::uint64_t>::max();
        return;
      }
    }
    syncer_->ask(written_);
  }
}

void AtomicFileWriter::flush() {
  if (buffer_.empty()) return;
  write_through(buffer_);
  buffer_.clear();
}

void AtomicFileWriter::append(std::string_view data) {
  if (fd_ < 0)
    throw CheckpointError(fmt::format("Cannot write {}: the write was aborted or committed", path_.string()));
  size_ += data.size();
  // Pieces of half the buffer or more are written as they are (after what
  // the buffer holds): copying them first would only cost a pass over them.
  const bool large = data.size() >= buffer_bytes_ / 2;
  if (!large && buffer_.size() + data.size() <= buffer_bytes_) {
    buffer_.append(data);
    return;
  }
  flush();
  if (!large) {
    buffer_.append(data);
    return;
  }
  write_through(data);
}

void AtomicFileWriter::commit() {
  if (fd_ < 0)
    throw CheckpointError(fmt::format("Cannot commit {}: the write was aborted or committed", path_.string()));
  flush();
  if (syncer_) {
    const int err = syncer_->finish();
    syncer_.reset();
    if (err != 0) {
      abort();
      detail::io_error("Cannot fsync", path_, err);
    }
  }
  if (::fsync(fd_) != 0) {
    const int err = errno;
    abort();
    detail::io_error("Cannot fsync", path_, err);
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    detail::io_error("Cannot close", path_, err);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    detail::io_error("Cannot rename temp file to", path_, err);
  }
  buffer_.shrink_to_fit();
  detail::fsync_dir(detail::parent_or_dot(path_));
}

}  // namespace kwire::checkpoint
