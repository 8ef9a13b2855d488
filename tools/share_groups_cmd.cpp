// kwire share-groups list|describe|reset-offsets (see admin_cmd.hpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "admin_cmd.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/source/json_escape.hpp"

namespace kwire::tools {

using namespace kwire::client;

int cmd_share_groups_list(const CommonOptions& common, const ShareGroupsArgs& args) {
  KafkaClient client(common.client_properties());
  std::string out = args.json ? "[" : "";
  bool first = true;
  for (auto& g : GroupAdmin(client).list_groups()) {
    if (g.type != "share") continue;
    if (args.json)
      out += fmt::format("{}{{\"group\":{},\"state\":{}}}", first ? "" : ",", json_str(g.group_id), json_str(g.state));
    else out += g.group_id + "\n";
    first = false;
  }
  if (args.json) out += "]\n";
  write_stdout(out);
  return 0;
}

int cmd_share_groups_describe(const CommonOptions& common, const ShareGroupsArgs& args) {
  KafkaClient client(common.client_properties());
  auto d = Admin(client).describe_share_group(args.group);
  std::map<TopicPartition, std::vector<std::string>> owners;
  for (auto& m : d.members)
    for (auto& tp : m.assignment) owners[tp].push_back(m.member_id);
  std::set<TopicPartition> tps;
  for (auto& [tp, off] : d.start_offsets) tps.insert(tp);
  for (auto& [tp, m] : owners) tps.insert(tp);
  std::string out;
  if (args.json) {
    out = fmt::format("{{\"group\":{},\"state\":{},\"epoch\":{},\"members\":[", json_str(d.group_id), json_str(d.state),
                      d.group_epoch);
    for (std::size_t i = 0; i < d.members.size(); ++i) {
      auto& m = d.members[i];
      out += fmt::format("{}{{\"memberId\":{},\"clientId\":{},\"host\":{},\"partitions\":[", i ? "," : "",
                         json_str(m.member_id), json_str(m.client_id), json_str(m.host));
      for (std::size_t j = 0; j < m.assignment.size(); ++j)
        out += fmt::format("{}{{\"topic\":{},\"partition\":{}}}", j ? "," : "", json_str(m.assignment[j].topic),
                           m.assignment[j].partition);
      out += "]}";
    }
    out += "],\"partitions\":[";
    bool first = true;
    for (auto& tp : tps) {
      auto so = d.start_offsets.find(tp);
      auto lag = d.lag.find(tp);
      out += fmt::format("{}{{\"topic\":{},\"partition\":{},\"startOffset\":{},\"lag\":{}}}", first ? "" : ",",
                         json_str(tp.topic), tp.partition, so == d.start_offsets.end() ? -1 : so->second,
                         lag == d.lag.end() ? -1 : lag->second);
      first = false;
    }
    out += "]}\n";
  } else {
    out = fmt::format("Group {} is {} (epoch {}, {} member{})\n\n", d.group_id, d.state, d.group_epoch,
                      d.members.size(), d.members.size() == 1 ? "" : "s");
    out += fmt::format("{:<30} {:>9} {:>12} {:>8}  {}\n", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "MEMBERS");
    for (auto& tp : tps) {
      auto so = d.start_offsets.find(tp);
      auto lag = d.lag.find(tp);
      auto own = owners.find(tp);
      out += fmt::format("{:<30} {:>9} {:>12} {:>8}  {}\n", tp.topic, tp.partition,
                         so == d.start_offsets.end() || so->second < 0 ? std::string("-") : std::to_string(so->second),
                         lag == d.lag.end() || lag->second < 0 ? std::string("-") : std::to_string(lag->second),
                         own == owners.end() ? std::string("-") : fmt::format("{}", fmt::join(own->second, ",")));
    }
  }
  write_stdout(out);
  return 0;
}

int cmd_share_groups_reset_offsets(const CommonOptions& common, const ShareGroupsArgs& args) {
  const int modes = int(args.to_earliest) + int(args.to_latest) + int(args.to_offset.has_value());
  if (modes != 1) throw std::invalid_argument("give exactly one of --to-earliest, --to-latest, --to-offset");
  if (args.topics.empty()) throw std::invalid_argument("reset-offsets needs --topic TOPIC");
  KafkaClient client(common.client_properties());
  auto md = client.metadata(args.topics);
  std::map<TopicPartition, std::int64_t> lo_q, hi_q;
  for (auto& t : md.topics) {
    if (t.error_code) throw std::runtime_error(fmt::format("topic {} is not available", t.name));
    for (auto& p : t.partitions) {
      lo_q[{t.name, p.partition}] = -2;
      hi_q[{t.name, p.partition}] = -1;
    }
  }
  auto lo = client.list_offsets(lo_q);
  auto hi = client.list_offsets(hi_q);
  std::map<TopicPartition, std::int64_t> target;
  for (auto& [tp, q] : lo_q) {
    std::int64_t v = args.to_earliest ? lo[tp].offset : args.to_latest ? hi[tp].offset : *args.to_offset;
    target[tp] = std::clamp(v, lo[tp].offset, hi[tp].offset);
  }
  if (!args.dry_run) Admin(client).alter_share_group_offsets(args.group, target);
  std::string out;
  for (auto& [tp, off] : target)
    out += args.json ? fmt::format("{}{{\"topic\":{},\"partition\":{},\"startOffset\":{}}}", out.empty() ? "[" : ",",
                                   json_str(tp.topic), tp.partition, off)
                     : fmt::format("{} {} {}\n", tp.topic, tp.partition, off);
  if (args.json) out += out.empty() ? "[]\n" : "]\n";
  write_stdout(out);
  return 0;
}

}  // namespace kwire::tools
