// TimeZone: UTC, fixed offsets, and region IDs from the system's tz
// database (TZif files, RFC 8536: version 2+ 64-bit data).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "kwire/source/json_writer.hpp"

namespace kwire::source {

struct TimeZone::Rules {
  std::vector<std::int64_t> transitions;  // epoch seconds, ascending
  std::vector<std::int32_t> offsets;      // offset in force from each transition on
  std::int32_t initial = 0;               // before the first transition
};

namespace {

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::uint64_t be64(const unsigned char* p) { return (std::uint64_t{be32(p)} << 32) | be32(p + 4); }

struct TzifCounts {
  std::uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

bool read_counts(const std::string& data, std::size_t at, TzifCounts& c) {
  if (data.size() < at + 44 || data.compare(at, 4, "TZif") != 0) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data() + at + 20);
  c = {be32(p), be32(p + 4), be32(p + 8), be32(p + 12), be32(p + 16), be32(p + 20)};
  return true;
}

// The v1 data block's size (32-bit times), skipped to reach the v2 block.
std::size_t v1_size(const TzifCounts& c) {
  return std::size_t{c.timecnt} * 5 + std::size_t{c.typecnt} * 6 + c.charcnt + std::size_t{c.leapcnt} * 8 + c.isstdcnt +
         c.isutcnt;
}

std::shared_ptr<TimeZone::Rules> parse_tzif(const std::string& data) {
  TzifCounts c{};
  if (!read_counts(data, 0, c)) return nullptr;
  const char version = data[4];
  if (version < '2') return nullptr;  // no 64-bit data
  const std::size_t second = 44 + v1_size(c);
  if (!read_counts(data, second, c)) return nullptr;
  const std::size_t at = second + 44;
  const std::size_t need = std::size_t{c.timecnt} * 9 + std::size_t{c.typecnt} * 6;
  if (data.size() < at + need || c.typecnt == 0) return nullptr;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data() + at);
  const auto* idx = p + std::size_t{c.timecnt} * 8;
  const auto* types = idx + c.timecnt;
  auto type_offset = [&](std::size_t i) { return static_cast<std::int32_t>(be32(types + i * 6)); };
  auto rules = std::make_shared<TimeZone::Rules>();
  // RFC 8536 3.2: local time before the first transition is type 0.
  rules->initial = type_offset(0);
  for (std::uint32_t i = 0; i < c.timecnt; ++i) {
    const std::uint8_t t = idx[i];
    if (t >= c.typecnt) return nullptr;
    rules->transitions.push_back(static_cast<std::int64_t>(be64(p + std::size_t{i} * 8)));
    rules->offsets.push_back(type_offset(t));
  }
  if (!std::is_sorted(rules->transitions.begin(), rules->transitions.end())) return nullptr;
  return rules;
}

// "+02:00", "-0530", "+2", "+02:00:30" -> seconds; false when not an offset.
bool parse_offset(std::string_view s, std::int32_t& out) {
  if (s.empty() || (s[0] != '+' && s[0] != '-')) return false;
  const int sign = s[0] == '-' ? -1 : 1;
  s.remove_prefix(1);
  int parts[3] = {0, 0, 0};
  int n = 0;
  std::size_t i = 0;
  while (i < s.size() && n < 3) {
    std::size_t digits = 0;
    int v = 0;
    // Without colons, hours and minutes are two digits each ("0530").
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && digits < 2) {
      v = v * 10 + (s[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0) return false;
    parts[n++] = v;
    if (i < s.size() && s[i] == ':') ++i;
  }
  if (i != s.size() || parts[0] > 18 || parts[1] > 59 || parts[2] > 59) return false;
  out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  return std::abs(out) <= 18 * 3600;
}

}  // namespace

TimeZone::TimeZone() : id_("UTC") {}
TimeZone::~TimeZone() = default;
TimeZone::TimeZone(const TimeZone&) = default;
TimeZone& TimeZone::operator=(const TimeZone&) = default;

const std::string& TimeZone::id() const noexcept { return id_; }

TimeZone TimeZone::parse(std::string_view id) {
  TimeZone tz;
  tz.id_ = std::string(id);
  if (id == "UTC" || id == "Z" || id == "GMT" || id == "UT" || id == "Etc/UTC" || id == "Etc/GMT") return tz;
  std::string_view rest = id;
  for (std::string_view prefix : {"UTC", "GMT", "UT"})
    if (rest.substr(0, prefix.size()) == prefix && rest.size() > prefix.size() &&
        (rest[prefix.size()] == '+' || rest[prefix.size()] == '-')) {
      rest.remove_prefix(prefix.size());
      break;
    }
  if (parse_offset(rest, tz.fixed_)) return tz;
  // A region ID: letters, digits, '/', '_', '-', '+' only (no path tricks).
  const bool region_like =
      !id.empty() && id.find("..") == std::string_view::npos && id.front() != '/' &&
      std::all_of(id.begin(), id.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '_' || ch == '-' || ch == '+';
      });
  if (region_like) {
    const char* dir = std::getenv("TZDIR");
    const std::filesystem::path file = std::filesystem::path(dir && *dir ? dir : "/usr/share/zoneinfo") / id;
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (auto rules = parse_tzif(data)) {
        tz.rules_ = std::move(rules);
        return tz;
      }
    }
  }
  throw JsonWriterError(
      fmt::format("unknown time zone '{}': expected UTC, an offset such as +02:00, or a region ID of the tz database "
                  "such as Europe/Paris",
                  id));
}

std::int32_t TimeZone::offset_at(std::int64_t epoch_seconds) const {
  if (!rules_) return fixed_;
  const auto& t = rules_->transitions;
  auto it = std::upper_bound(t.begin(), t.end(), epoch_seconds);
  if (it == t.begin()) return rules_->initial;
  return rules_->offsets[static_cast<std::size_t>(it - t.begin() - 1)];
}

}  // namespace kwire::source
