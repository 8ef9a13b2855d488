#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "kwire/client/group.hpp"

namespace kwire::client {

namespace {

std::int32_t parse_ms(const std::string& key, const std::string& v, std::int64_t lo) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < lo || n > 0x7fffffff)
    throw ConfigError(fmt::format("invalid value '{}' for {}: expected an integer in [{}, 2147483647]", v, key, lo));
  return static_cast<std::int32_t>(n);
}

bool parse_bool(const std::string& key, const std::string& v) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (l == "true") return true;
  if (l == "false") return false;
  throw ConfigError(fmt::format("invalid value '{}' for {}: expected true or false", v, key));
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

Assignor parse_assignor(const std::string& raw) {
  std::string name = raw;
  // Java class names: org.apache.kafka.clients.consumer.RangeAssignor etc.
  if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  if (name == "range" || name == "RangeAssignor") return Assignor::range;
  if (name == "roundrobin" || name == "RoundRobinAssignor") return Assignor::roundrobin;
  if (name == "cooperative-sticky" || name == "CooperativeStickyAssignor") return Assignor::cooperative_sticky;
  throw ConfigError(fmt::format(
      "unsupported value '{}' in partition.assignment.strategy: expected range, roundrobin or cooperative-sticky",
      raw));
}

}  // namespace

GroupConfig GroupConfig::from_properties(const std::map<std::string, std::string>& props) {
  GroupConfig g;
  for (const auto& [key, value] : props) {
    if (key == "group.id") {
      g.group_id = value;
    } else if (key == "group.instance.id") {
      if (!value.empty()) g.group_instance_id = value;
    } else if (key == "group.protocol") {
      std::string l = value;
      std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (l == "classic") g.group_protocol = GroupProtocol::classic;
      else if (l == "consumer") g.group_protocol = GroupProtocol::consumer;
      else throw ConfigError(fmt::format("invalid value '{}' for group.protocol: expected classic or consumer", value));
    } else if (key == "group.remote.assignor") {
      if (!value.empty()) g.group_remote_assignor = value;
    } else if (key == "partition.assignment.strategy") {
      g.assignors.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        auto comma = value.find(',', start);
        std::string item = trim(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!item.empty()) {
          Assignor a = parse_assignor(item);
          if (std::find(g.assignors.begin(), g.assignors.end(), a) == g.assignors.end()) g.assignors.push_back(a);
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (g.assignors.empty()) throw ConfigError("partition.assignment.strategy names no assignor");
    } else if (key == "session.timeout.ms") {
      g.session_timeout_ms = parse_ms(key, value, 1);
    } else if (key == "heartbeat.interval.ms") {
      g.heartbeat_interval_ms = parse_ms(key, value, 1);
    } else if (key == "max.poll.interval.ms") {
      g.max_poll_interval_ms = parse_ms(key, value, 1);
    } else if (key == "enable.auto.commit") {
      g.enable_auto_commit = parse_bool(key, value);
    } else if (key == "auto.commit.interval.ms") {
      g.auto_commit_interval_ms = parse_ms(key, value, 0);
    }
  }
  if (g.group_protocol == GroupProtocol::consumer) {
    for (const char* key : {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"})
      if (props.count(key))
        throw ConfigError(
            fmt::format("{} is not supported with group.protocol=consumer (the broker's "
                        "group.consumer.* settings and group.remote.assignor apply)",
                        key));
  }
  if (g.heartbeat_interval_ms >= g.session_timeout_ms)
    throw ConfigError(fmt::format("heartbeat.interval.ms ({}) must be lower than session.timeout.ms ({})",
                                  g.heartbeat_interval_ms, g.session_timeout_ms));
  return g;
}

}  // namespace kwire::client
