// kwire consume -G (kcat's balanced consumer) and kwire groups list |
// describe | reset-offsets | delete-offsets (what kafka-consumer-groups shows and does).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"

namespace kwire::tools {

using namespace kwire::client;
using namespace kwire::protocol;
using kwire::source::append_json_string;

namespace {

volatile std::sig_atomic_t g_group_stop = 0;
void on_group_signal(int) { g_group_stop = 1; }

std::string list_of(const std::vector<TopicPartition>& tps) {
  std::string out;
  for (auto& tp : tps) out += fmt::format("{}{} [{}]", out.empty() ? "" : ", ", tp.topic, tp.partition);
  return out.empty() ? "(none)" : out;
}

// Prints the group's rebalances on stderr (as kcat does) and notes where each
// newly assigned partition ends now, for -e.
class PrintingListener : public RebalanceListener {
 public:
  PrintingListener(Consumer& c, const std::string& group, bool quiet, bool want_ends,
                   std::function<void(const std::vector<TopicPartition>&)> before_revoke)
      : consumer_(c), group_(group), quiet_(quiet), want_ends_(want_ends), before_revoke_(std::move(before_revoke)) {}
  void on_partitions_assigned(const std::vector<TopicPartition>& tps) override {
    if (!quiet_)
      fmt::print(stderr, "% Group {} rebalanced (member {}, generation {}): assigned: {}\n", group_,
                 consumer_.group_metadata().member_id, consumer_.group_metadata().generation, list_of(tps));
    if (want_ends_ && !tps.empty())
      for (auto& [tp, end] : consumer_.end_offsets(tps)) ends[tp] = end;
    ++rebalances;
  }
  void on_partitions_revoked(const std::vector<TopicPartition>& tps) override {
    if (before_revoke_) before_revoke_(tps);
    if (!quiet_ && !tps.empty()) fmt::print(stderr, "% Group {} rebalancing: revoked: {}\n", group_, list_of(tps));
    for (auto& tp : tps) ends.erase(tp);
  }
  void on_partitions_lost(const std::vector<TopicPartition>& tps) override {
    if (!quiet_ && !tps.empty()) fmt::print(stderr, "% Group {}: lost: {}\n", group_, list_of(tps));
    for (auto& tp : tps) ends.erase(tp);
  }
  std::map<TopicPartition, std::int64_t> ends;
  int rebalances = 0;

 private:
  Consumer& consumer_;
  std::string group_;
  bool quiet_, want_ends_;
  std::function<void(const std::vector<TopicPartition>&)> before_revoke_;
};

}  // namespace

int cmd_consume_group(const CommonOptions& common, const ConsumeArgs& args) {
  if (args.topics.empty())
    throw std::invalid_argument("-G GROUP needs at least one topic: kwire consume -G GROUP TOPIC...");
  if (!args.partitions.empty()) throw std::invalid_argument("-p cannot be used with -G: the group assigns partitions");
  auto props = common.client_properties();
  props["group.id"] = *args.group;
  // -o sets where partitions without a committed offset start, as in kcat.
  if (args.offset == "beginning") props.emplace("auto.offset.reset", "earliest");
  else if (args.offset == "end") props.emplace("auto.offset.reset", "latest");
  else throw std::invalid_argument(fmt::format("invalid offset '{}' with -G: expected beginning or end", args.offset));
  // With -c the last poll may hold records that are not printed: commit
  // only what was printed, from here, instead of what poll handed out.
  const bool manual = args.count.has_value();
  if (manual) props["enable.auto.commit"] = "false";
  Consumer consumer(props);
  std::map<TopicPartition, std::int64_t> printed_next;  // per partition: the offset after the last printed record
  auto commit_printed = [&](const std::vector<TopicPartition>& tps) {
    std::map<TopicPartition, OffsetAndMetadata> offsets;
    for (auto& tp : tps)
      if (auto it = printed_next.find(tp); it != printed_next.end())
        offsets[tp] = OffsetAndMetadata{it->second, -1, ""};
    if (!offsets.empty()) consumer.commit_sync(offsets);
  };
  PrintingListener listener(consumer, *args.group, args.quiet, args.exit_at_end,
                            manual ? std::function<void(const std::vector<TopicPartition>&)>(commit_printed) : nullptr);
  consumer.subscribe(args.topics, &listener);

  std::signal(SIGINT, on_group_signal);
  std::signal(SIGTERM, on_group_signal);
  std::string out;
  const std::optional<RecordFormat> format =
      args.format ? std::optional<RecordFormat>(RecordFormat(*args.format)) : std::nullopt;
  std::int64_t printed = 0;
  auto last_commit = std::chrono::steady_clock::now();
  while (!g_group_stop) {
    if (args.count && printed >= *args.count) break;
    if (args.exit_at_end && listener.rebalances > 0) {
      bool all = true;
      for (auto& tp : consumer.assignment())
        if (!listener.ends.count(tp) || consumer.position(tp) < listener.ends[tp]) all = false;
      if (all) break;
    }
    auto recs = consumer.poll(std::chrono::milliseconds(200));
    for (auto& r : recs) {
      if (args.count && printed >= *args.count) break;
      if (args.json) out += record_json(r);
      else if (format) format->append(out, r);
      else {
        out.append(r.value_view());
        out.push_back('\n');
      }
      printed_next[{*r.topic, r.partition}] = r.offset + 1;
      ++printed;
    }
    if (!out.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
    std::fflush(stdout);
    if (manual && std::chrono::steady_clock::now() - last_commit > std::chrono::seconds(1)) {
      commit_printed(consumer.assignment());
      last_commit = std::chrono::steady_clock::now();
    }
  }
  if (manual) commit_printed(consumer.assignment());
  consumer.close();
  if (!args.quiet) fmt::print(stderr, "% Group {}: left after {} records\n", *args.group, printed);
  return 0;
}

// ---------------------------------------------------------------- groups

int cmd_groups_list(const CommonOptions& common, const GroupsArgs& args) {
  KafkaClient client(common.client_properties());
  auto groups = GroupAdmin(client).list_groups();
  std::string out = args.json ? "[" : fmt::format("{:<40} {:<20} {:<10} {}\n", "GROUP", "STATE", "TYPE", "PROTOCOL");
  bool first = true;
  for (auto& g : groups) {
    if (args.json) {
      out += fmt::format("{}{{\"group\":{},\"state\":{},\"type\":{},\"protocolType\":{}}}", first ? "" : ",",
                         json_str(g.group_id), json_str(g.state), json_str(g.type), json_str(g.protocol_type));
    } else {
      out += fmt::format("{:<40} {:<20} {:<10} {}\n", g.group_id, g.state.empty() ? "-" : g.state,
                         g.type.empty() ? "-" : g.type, g.protocol_type);
    }
    first = false;
  }
  if (args.json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int cmd_groups_describe(const CommonOptions& common, const GroupsArgs& args) {
  KafkaClient client(common.client_properties());
  auto g = GroupAdmin(client).describe_group(args.group);
  if (g.state == "Dead" && g.committed.empty())
    throw std::runtime_error(fmt::format("consumer group '{}' does not exist", args.group));
  std::map<TopicPartition, const GroupMemberDescription*> owner;
  for (auto& m : g.members)
    for (auto& tp : m.assignment) owner[tp] = &m;
  std::set<TopicPartition> tps;
  for (auto& [tp, off] : g.committed) tps.insert(tp);
  for (auto& [tp, m] : owner) tps.insert(tp);
  std::map<TopicPartition, std::int64_t> targets;
  for (auto& tp : tps) targets[tp] = kLatestTimestamp;
  auto ends = client.list_offsets(targets);
  std::string out;
  if (args.json) {
    auto epoch = [](const std::optional<std::int32_t>& e) { return e ? std::to_string(*e) : std::string("null"); };
    out = fmt::format(
        "{{\"group\":{},\"state\":{},\"protocolType\":{},\"protocol\":{},\"groupEpoch\":{},"
        "\"assignmentEpoch\":{},\"members\":[",
        json_str(args.group), json_str(g.state), json_str(g.protocol_type), json_str(g.assignor), epoch(g.group_epoch),
        epoch(g.assignment_epoch));
    for (std::size_t i = 0; i < g.members.size(); ++i) {
      auto& m = g.members[i];
      out += fmt::format("{}{{\"memberId\":{},\"clientId\":{},\"host\":{},\"instanceId\":{},\"assignment\":[",
                         i ? "," : "", json_str(m.member_id), json_str(m.client_id), json_str(m.host),
                         m.group_instance_id ? json_str(*m.group_instance_id) : std::string("null"));
      auto list = [&](const std::vector<TopicPartition>& tps) {
        for (std::size_t k = 0; k < tps.size(); ++k)
          out += fmt::format("{}{{\"topic\":{},\"partition\":{}}}", k ? "," : "", json_str(tps[k].topic),
                             tps[k].partition);
      };
      list(m.assignment);
      out += "]";
      if (m.member_epoch) {  // KIP-848 members
        out += fmt::format(",\"memberEpoch\":{},\"targetAssignment\":[", *m.member_epoch);
        list(m.target_assignment);
        out += "]";
      }
      out += "}";
    }
    out += "],\"partitions\":[";
  } else {
    out = fmt::format("Group {} is {} ({} members, assignor {}", args.group, g.state, g.members.size(),
                      g.assignor.empty() ? "-" : g.assignor);
    if (g.group_epoch && g.assignment_epoch)
      out += fmt::format(", group epoch {}, assignment epoch {}", *g.group_epoch, *g.assignment_epoch);
    out += ")\n\n";
    out += fmt::format("{:<24} {:<24} {:>9} {:>14} {:>14} {:>8}  {:<44} {:<16} {}\n", "GROUP", "TOPIC", "PARTITION",
                       "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID");
  }
  bool first = true;
  for (auto& tp : tps) {
    auto c = g.committed.find(tp);
    auto e = ends.find(tp);
    const std::int64_t end = e == ends.end() ? -1 : e->second.offset;
    const GroupMemberDescription* m = owner.count(tp) ? owner[tp] : nullptr;
    if (args.json) {
      out += fmt::format(
          "{}{{\"topic\":{},\"partition\":{},\"committedOffset\":{},\"logEndOffset\":{},\"lag\":{},"
          "\"memberId\":{}}}",
          first ? "" : ",", json_str(tp.topic), tp.partition,
          c == g.committed.end() ? std::string("null") : std::to_string(c->second), end,
          c == g.committed.end() ? std::string("null") : std::to_string(end - c->second),
          m ? json_str(m->member_id) : std::string("null"));
    } else {
      out += fmt::format("{:<24} {:<24} {:>9} {:>14} {:>14} {:>8}  {:<44} {:<16} {}\n", args.group, tp.topic,
                         tp.partition, c == g.committed.end() ? std::string("-") : std::to_string(c->second), end,
                         c == g.committed.end() ? std::string("-") : std::to_string(end - c->second),
                         m ? m->member_id : "-", m ? m->host : "-", m ? m->client_id : "-");
    }
    first = false;
  }
  if (args.json) out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

namespace {

// TOPIC (every partition) or TOPIC:P[,P...], as kafka-consumer-groups takes --topic.
std::set<TopicPartition> topic_partitions(KafkaClient& client, const std::vector<std::string>& specs) {
  std::set<TopicPartition> tps;
  for (auto& spec : specs) {
    auto colon = spec.find(':');
    const std::string topic = spec.substr(0, colon);
    const std::int32_t n = client.partition_count(topic);
    if (colon == std::string::npos) {
      for (std::int32_t p = 0; p < n; ++p) tps.insert({topic, p});
      continue;
    }
    std::size_t start = colon + 1;
    while (start <= spec.size()) {
      auto comma = spec.find(',', start);
      const std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      std::int32_t p = -1;
      try {
        p = static_cast<std::int32_t>(std::stol(item));
      } catch (const std::exception&) {
      }
      if (p < 0 || p >= n)
        throw std::invalid_argument(
            fmt::format("invalid partition '{}' in '{}' ({} has {} partitions)", item, spec, topic, n));
      tps.insert({topic, p});
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return tps;
}

}  // namespace

int cmd_groups_delete_offsets(const CommonOptions& common, const GroupsArgs& args) {
  KafkaClient client(common.client_properties());
  GroupAdmin admin(client);
  const auto tps = topic_partitions(client, args.topics);
  const auto result = admin.delete_offsets(args.group, std::vector<TopicPartition>(tps.begin(), tps.end()));
  // As kafka-consumer-groups --delete-offsets: one line per partition, and a
  // failure exit when any partition could not be deleted.
  std::string out = args.json ? "[" : fmt::format("{:<24} {:>9} {}\n", "TOPIC", "PARTITION", "STATUS");
  bool first = true, failed = false;
  for (auto& [tp, code] : result) {
    failed = failed || code != 0;
    const std::string status = code == 0 ? "Successful" : fmt::format("Error: {}", error_name(code));
    if (args.json)
      out += fmt::format("{}{{\"topic\":{},\"partition\":{},\"error\":{}}}", first ? "" : ",", json_str(tp.topic),
                         tp.partition, code == 0 ? std::string("null") : json_str(std::string(error_name(code))));
    else out += fmt::format("{:<24} {:>9} {}\n", tp.topic, tp.partition, status);
    first = false;
  }
  if (args.json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return failed ? 1 : 0;
}

int cmd_groups_reset_offsets(const CommonOptions& common, const GroupsArgs& args) {
  const int modes = int(args.to_earliest) + int(args.to_latest) + int(args.to_offset.has_value()) +
                    int(args.to_timestamp.has_value());
  if (modes != 1)
    throw std::invalid_argument("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime");
  if (args.topics.empty() == !args.all_topics)
    throw std::invalid_argument("give --topic TOPIC[:P,P...] (repeatable) or --all-topics");
  KafkaClient client(common.client_properties());
  GroupAdmin admin(client);
  auto g = admin.describe_group(args.group);
  if (g.state != "Empty" && g.state != "Dead")
    throw std::runtime_error(
        fmt::format("group '{}' is {} with {} members: offsets can only be reset while it has no members", args.group,
                    g.state, g.members.size()));
  std::set<TopicPartition> tps;
  if (args.all_topics) {
    for (auto& [tp, off] : g.committed) tps.insert(tp);
  }
  for (auto& tp : topic_partitions(client, args.topics)) tps.insert(tp);
  std::map<TopicPartition, std::int64_t> lo_q, hi_q, ts_q;
  for (auto& tp : tps) {
    lo_q[tp] = kEarliestTimestamp;
    hi_q[tp] = kLatestTimestamp;
    if (args.to_timestamp) ts_q[tp] = *args.to_timestamp;
  }
  auto lo = client.list_offsets(lo_q);
  auto hi = client.list_offsets(hi_q);
  std::map<TopicPartition, std::int64_t> target;
  std::map<TopicPartition, ListedOffset> by_time;
  if (args.to_timestamp) by_time = client.list_offsets(ts_q);
  for (auto& tp : tps) {
    std::int64_t v = 0;
    if (args.to_earliest) v = lo[tp].offset;
    else if (args.to_latest) v = hi[tp].offset;
    else if (args.to_offset) v = std::clamp(*args.to_offset, lo[tp].offset, hi[tp].offset);  // as Kafka's tool
    else v = by_time[tp].offset >= 0 ? by_time[tp].offset : hi[tp].offset;
    target[tp] = v;
  }
  if (!args.dry_run) admin.alter_offsets(args.group, target);
  std::string out = args.json ? "["
                              : fmt::format("{:<24} {:<24} {:>9} {:>14} {:>14}\n", "GROUP", "TOPIC", "PARTITION",
                                            "PREVIOUS-OFFSET", "NEW-OFFSET");
  bool first = true;
  for (auto& [tp, off] : target) {
    auto prev = g.committed.find(tp);
    const std::string before = prev == g.committed.end() ? (args.json ? "null" : "-") : std::to_string(prev->second);
    if (args.json)
      out += fmt::format("{}{{\"topic\":{},\"partition\":{},\"previousOffset\":{},\"newOffset\":{}}}", first ? "" : ",",
                         json_str(tp.topic), tp.partition, before, off);
    else out += fmt::format("{:<24} {:<24} {:>9} {:>14} {:>14}\n", args.group, tp.topic, tp.partition, before, off);
    first = false;
  }
  if (args.json) out += "]\n";
  else if (args.dry_run) out += "(dry run: nothing committed)\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace kwire::tools
