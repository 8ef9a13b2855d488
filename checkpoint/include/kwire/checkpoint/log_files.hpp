// The checkpoint's file formats, read from and written to bytes in memory (no
// I/O): what Checkpoint reads from and writes to its folder, and what a fuzzer
// or a tool can check without a file system. See checkpoint.hpp for the
// layout; the formats are Spark Structured Streaming's (OffsetSeqLog,
// CommitLog, the source's initial offsets, StreamMetadata).
//
// Every parse_* function throws CheckpointError "Corrupt checkpoint file
// <name>: <why>" for content it does not accept; `name` is only used in that
// text (Checkpoint passes the file's path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kwire/checkpoint/checkpoint.hpp"

namespace kwire::checkpoint {

/// A batch's file name in offsets/ and commits/: a canonical non-negative
/// decimal ("0", "17"; not "007", "+1", "1.tmp", nor past 18 digits).
std::optional<std::int64_t> parse_batch_name(std::string_view name);

/// `metadata`: {"id":"<uuid>"}; returns the id (any non-empty string).
std::string parse_metadata(std::string_view name, std::string_view content);
std::string metadata_content(std::string_view query_id);

/// offsets/N: "v1", a metadata line (a JSON object whose batchTimestampMs, when
/// present, is an integer), then the single source's offsets JSON (offsets >= -2).
struct OffsetLogEntry {
  std::int64_t batch_timestamp_ms = 0;
  PartitionOffsets offsets;
  friend bool operator==(const OffsetLogEntry&, const OffsetLogEntry&) = default;
};
OffsetLogEntry parse_offsets_log(std::string_view name, std::string_view content);
/// The content Spark 4.2 writes (with spark_offset_log_conf() as "conf").
std::string offsets_log_content(const PartitionOffsets& end, std::int64_t batch_timestamp_ms);

/// commits/N: "v1" and optionally a JSON object line. Throws when malformed.
void parse_commit_log(std::string_view name, std::string_view content);
std::string commit_log_content();

/// sources/0/0: an optional NUL byte, an optional "v1" line, the offsets JSON.
PartitionOffsets parse_initial_offsets(std::string_view name, std::string_view content);
std::string initial_offsets_content(const PartitionOffsets& offsets);

}  // namespace kwire::checkpoint
