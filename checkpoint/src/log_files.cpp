#include "kwire/checkpoint/log_files.hpp"

#include <charconv>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "kwire/checkpoint/json_escape.hpp"

namespace kwire::checkpoint {

namespace {

constexpr std::string_view kLogVersion = "v1";
constexpr std::string_view kCommitBody = R"({"nextBatchWatermarkMs":0})";

[[noreturn]] void corrupt(std::string_view name, std::string_view why) {
  throw CheckpointError(fmt::format("Corrupt checkpoint file {}: {}", name, why));
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t nl = s.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.push_back(s.substr(pos));
      break;
    }
    lines.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

void check_version(std::string_view name, std::string_view line) {
  if (trim(line) != kLogVersion) {
    corrupt(name, fmt::format("unsupported log version line '{}' (expected '{}')", line, kLogVersion));
  }
}

// A metadata line: a JSON object.
simdjson::dom::object parse_object_line(simdjson::dom::parser& parser, std::string_view name, std::string_view line,
                                        const char* what) {
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  const std::string_view text = trim(line);
  if (parser.parse(text.data(), text.size()).get(doc) || doc.get_object().get(obj)) {
    corrupt(name, fmt::format("malformed {} '{}'", what, text));
  }
  return obj;
}

PartitionOffsets parse_offsets_in(std::string_view name, std::string_view json) {
  PartitionOffsets out;
  try {
    out = offsets_from_json(trim(json));
  } catch (const CheckpointError& e) {
    corrupt(name, e.what());
  }
  // Spark only knows -2 (earliest) and -1 (latest) as negative offsets.
  for (const auto& [topic, parts] : out) {
    for (const auto& [partition, offset] : parts) {
      if (offset < -2) corrupt(name, fmt::format("invalid offset {} for {}-{}", offset, topic, partition));
    }
  }
  return out;
}

}  // namespace

std::optional<std::int64_t> parse_batch_name(std::string_view name) {
  if (name.empty() || name.size() > 18) return std::nullopt;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (name.size() > 1 && name.front() == '0') return std::nullopt;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return value;
}

std::string parse_metadata(std::string_view name, std::string_view content) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view id;
  const std::string_view text = trim(content);
  if (parser.parse(text.data(), text.size()).get(doc) || doc["id"].get_string().get(id) || id.empty()) {
    corrupt(name, "expected {\"id\":\"<uuid>\"}");
  }
  return std::string(id);
}

std::string metadata_content(std::string_view query_id) {
  std::string out = "{\"id\":";
  append_json_string(out, query_id);
  out.push_back('}');
  return out;
}

OffsetLogEntry parse_offsets_log(std::string_view name, std::string_view content) {
  const auto lines = split_lines(content);
  if (lines.empty()) corrupt(name, "empty file");
  check_version(name, lines[0]);
  if (lines.size() < 3) corrupt(name, "expected a metadata line and one source offsets line");
  if (lines.size() > 3) {
    corrupt(name, fmt::format("expected offsets for exactly one source, found {}", lines.size() - 2));
  }
  OffsetLogEntry out;
  {
    simdjson::dom::parser parser;
    const simdjson::dom::object obj = parse_object_line(parser, name, lines[1], "batch metadata");
    simdjson::dom::element ts;
    if (!obj.at_key("batchTimestampMs").get(ts)) {
      std::int64_t v = 0;
      if (ts.get_int64().get(v)) corrupt(name, "batchTimestampMs is not an integer");
      out.batch_timestamp_ms = v;
    }
  }
  if (trim(lines[2]) == "-") corrupt(name, "no offsets recorded for the source");
  out.offsets = parse_offsets_in(name, lines[2]);
  return out;
}

std::string offsets_log_content(const PartitionOffsets& end, std::int64_t batch_timestamp_ms) {
  std::string conf = "{";
  for (const auto& [key, value] : spark_offset_log_conf()) {
    if (conf.size() > 1) conf.push_back(',');
    append_json_string(conf, key);
    conf.push_back(':');
    append_json_string(conf, value);
  }
  conf.push_back('}');
  return fmt::format("{}\n{{\"batchWatermarkMs\":0,\"batchTimestampMs\":{},\"conf\":{}}}\n{}", kLogVersion,
                     batch_timestamp_ms, conf, offsets_to_json(end));
}

void parse_commit_log(std::string_view name, std::string_view content) {
  const auto lines = split_lines(content);
  if (lines.empty()) corrupt(name, "empty file");
  check_version(name, lines[0]);
  if (lines.size() > 1) {
    simdjson::dom::parser parser;
    (void)parse_object_line(parser, name, lines[1], "commit metadata");
  }
}

std::string commit_log_content() {
  std::string content(kLogVersion);
  content.push_back('\n');
  content += kCommitBody;
  return content;
}

PartitionOffsets parse_initial_offsets(std::string_view name, std::string_view content) {
  if (!content.empty() && content.front() == '\0') content.remove_prefix(1);
  if (content.empty()) corrupt(name, "empty file");
  if (content.front() == 'v') {
    const std::size_t nl = content.find('\n');
    if (nl == std::string_view::npos) corrupt(name, "missing newline after the version");
    check_version(name, content.substr(0, nl));
    return parse_offsets_in(name, content.substr(nl + 1));
  }
  return parse_offsets_in(name, content);
}

std::string initial_offsets_content(const PartitionOffsets& offsets) {
  std::string content;
  content.push_back('\0');
  content += kLogVersion;
  content.push_back('\n');
  content += offsets_to_json(offsets);
  return content;
}

}  // namespace kwire::checkpoint
