// File helpers shared by the checkpoint and the atomic file writers: errors
// naming the file and the OS reason, folder fsync, and the temp files that
// atomic writes go through (".<target name>.<16 hex digits>.tmp", next to the
// target, so remove_stale_temp_files() recognises them).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace kwire::checkpoint::detail {

/// Throws CheckpointError "<what> <path>: <strerror(err)>".
[[noreturn]] void io_error(std::string_view what, const std::filesystem::path& path, int err);

/// fsync(2) of a folder, so a rename or unlink in it is durable.
void fsync_dir(const std::filesystem::path& dir);

/// The folder of `path`, "." when it has none.
std::filesystem::path parent_or_dot(const std::filesystem::path& path);

/// A fresh temp file name for `path`: ".<name>.<16 random hex digits>.tmp" in the same folder.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

/// True for names temp_path_for() produces.
bool is_temp_name(std::string_view name);

/// Writes `content` into a fresh temp file next to `path`, fsynced and closed;
/// returns its path. On failure the temp file is removed and CheckpointError
/// names `path`.
std::filesystem::path write_temp(const std::filesystem::path& path, std::string_view content);

}  // namespace kwire::checkpoint::detail
