// GroupAdmin: ListGroups, DescribeGroups, OffsetFetch and OffsetCommit on a
// group's behalf, for tools and embedders (see group_admin.hpp).
#include "kwire/client/group_admin.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "coordinators.hpp"
#include "group_coordinator.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

// Runs `attempt` on the group's coordinator until default.api.timeout.ms
// (coordinators.hpp: the lookup, the "coordinator moved" rule and the
// back-off); `attempt` replies with a code for each answer.
template <class F>
void with_coordinator(KafkaClient& client, Coordinators& coordinators, const std::string& group, const char* api,
                      F&& attempt) {
  RetryLoop loop(client.config(), Clock::now() + std::chrono::milliseconds(client.config().default_api_timeout_ms),
                 fmt::format("{} for group {}", api, group));
  call_coordinator(client, coordinators, CoordinatorType::group, group, loop, [&](Connection& c) {
    const std::int16_t code = attempt(c, loop.request_deadline());
    if (code == 0) return CoordinatorReply::done();
    if (!coordinator_retriable(code) && !is(code, ErrorCode::unstable_offset_commit))
      throw_group_error(group, api, code);
    return CoordinatorReply::retry(code);
  });
}

}  // namespace

GroupAdmin::GroupAdmin(KafkaClient& client) : client_(client), coordinators_(std::make_unique<Coordinators>()) {}

GroupAdmin::~GroupAdmin() = default;

std::vector<GroupListing> GroupAdmin::list_groups() {
  auto md = client_.metadata(std::vector<std::string>{});
  std::map<std::string, GroupListing> groups;
  for (auto& b : md.brokers) {
    Connection& c = client_.broker(b.node_id);
    const std::int16_t v = c.version_for<ListGroupsRequest>();
    auto r = c.receive<ListGroupsResponse>(c.send(ListGroupsRequest{}, v), v, client_.default_deadline()).body;
    if (r.error_code)
      throw KafkaError(r.error_code, fmt::format("ListGroups on broker {}: {}", b.node_id, error_name(r.error_code)));
    for (auto& g : r.groups) groups[g.group_id] = {g.group_id, g.group_state, g.group_type, g.protocol_type};
  }
  std::vector<GroupListing> out;
  for (auto& [id, g] : groups) out.push_back(g);
  return out;
}

GroupDescription GroupAdmin::describe_group(const std::string& group) {
  GroupDescription g;
  g.group_id = group;
  with_coordinator(client_, *coordinators_, group, "DescribeGroups",
                   [&](Connection& c, Deadline deadline) -> std::int16_t {
                     DescribeGroupsRequest req;
                     req.groups = {group};
                     const std::int16_t v = c.version_for<DescribeGroupsRequest>();
                     auto d = c.receive<DescribeGroupsResponse>(c.send(req, v), v, deadline).body;
                     if (d.groups.size() != 1) throw MalformedResponseError("DescribeGroups answered no group");
                     auto& dg = d.groups[0];
                     const std::int16_t code = dg.error_code;
                     if (coordinator_retriable(code)) return code;
                     g.members.clear();
                     if (is(code, ErrorCode::group_id_not_found)) {
                       g.state = "Dead";
                       return 0;
                     }
                     if (code) throw_group_error(group, "DescribeGroups", code);
                     g.state = dg.group_state;
                     g.protocol_type = dg.protocol_type;
                     g.assignor = dg.protocol_data;
                     for (auto& m : dg.members) {
                       GroupMemberDescription mm;
                       mm.member_id = m.member_id;
                       mm.group_instance_id = m.group_instance_id;
                       mm.client_id = m.client_id;
                       mm.host = m.client_host;
                       if (dg.protocol_type == "consumer" && !m.member_assignment.empty()) {
                         ConsumerProtocolAssignment a;
                         try {
                           decode_consumer_assignment(ByteSpan(m.member_assignment), a);
                         } catch (const ProtocolError&) {
                           a = {};  // an assignment kwire cannot read is shown as none
                         }
                         for (auto& t : a.assigned_partitions)
                           for (auto p : t.partitions) mm.assignment.push_back({t.topic, p});
                         std::sort(mm.assignment.begin(), mm.assignment.end());
                       }
                       g.members.push_back(std::move(mm));
                     }
                     return 0;
                   });
  // A KIP-848 group is unknown to DescribeGroups (GROUP_ID_NOT_FOUND on
  // Kafka 4.x): ask ConsumerGroupDescribe, where the broker has it.
  if (g.state == "Dead") describe_consumer_group(g);
  for (auto& [tp, om] : committed_offsets(group)) g.committed[tp] = om.offset;
  return g;
}

void GroupAdmin::describe_consumer_group(GroupDescription& g) {
  with_coordinator(client_, *coordinators_, g.group_id, "ConsumerGroupDescribe",
                   [&](Connection& c, Deadline deadline) -> std::int16_t {
                     std::int16_t v = 0;
                     try {
                       v = c.version_for<ConsumerGroupDescribeRequest>();
                     } catch (const UnsupportedVersionError&) {
                       return 0;  // a broker without KIP-848: the group is indeed unknown
                     }
                     ConsumerGroupDescribeRequest req;
                     req.group_ids = {g.group_id};
                     auto d = c.receive<ConsumerGroupDescribeResponse>(c.send(req, v), v, deadline).body;
                     if (d.groups.size() != 1) throw MalformedResponseError("ConsumerGroupDescribe answered no group");
                     auto& dg = d.groups[0];
                     const std::int16_t code = dg.error_code;
                     if (coordinator_retriable(code)) return code;
                     // Not found, or a broker with the API but without the protocol enabled
                     // (Kafka 3.9 answers UNSUPPORTED_VERSION): the group is indeed unknown.
                     if (is(code, ErrorCode::group_id_not_found) || is(code, ErrorCode::unsupported_version)) return 0;
                     if (code) throw_group_error(g.group_id, "ConsumerGroupDescribe", code);
                     g.state = dg.group_state;
                     g.protocol_type = "consumer";
                     g.assignor = dg.assignor_name;
                     g.group_epoch = dg.group_epoch;
                     g.assignment_epoch = dg.assignment_epoch;
                     g.members.clear();
                     auto partitions = [](const ConsumerGroupDescribeResponse::Assignment& a) {
                       std::vector<TopicPartition> out;
                       for (auto& t : a.topic_partitions)
                         for (auto p : t.partitions) out.push_back({t.topic_name, p});
                       std::sort(out.begin(), out.end());
                       return out;
                     };
                     for (auto& m : dg.members) {
                       GroupMemberDescription mm;
                       mm.member_id = m.member_id;
                       mm.group_instance_id = m.instance_id;
                       mm.client_id = m.client_id;
                       mm.host = m.client_host;
                       mm.assignment = partitions(m.assignment);
                       mm.member_epoch = m.member_epoch;
                       mm.target_assignment = partitions(m.target_assignment);
                       mm.subscribed_topics = m.subscribed_topic_names;
                       mm.rack = m.rack_id;
                       g.members.push_back(std::move(mm));
                     }
                     return 0;
                   });
}

std::map<TopicPartition, OffsetAndMetadata> GroupAdmin::committed_offsets(const std::string& group,
                                                                          const std::vector<TopicPartition>& partitions,
                                                                          bool require_stable) {
  std::optional<std::vector<OffsetFetchRequest::OffsetFetchRequestTopic>> topics;  // null: every partition (v2+)
  if (!partitions.empty()) {
    auto sorted = partitions;
    std::sort(sorted.begin(), sorted.end());
    topics.emplace();
    for (auto& tp : sorted) {
      if (topics->empty() || topics->back().name != tp.topic) topics->push_back({tp.topic, {}, {}});
      topics->back().partition_indexes.push_back(tp.partition);
    }
  }
  std::map<TopicPartition, OffsetAndMetadata> out;
  with_coordinator(
      client_, *coordinators_, group, "OffsetFetch", [&](Connection& c, Deadline deadline) -> std::int16_t {
        OffsetFetchRequest req;
        req.group_id = group;
        req.topics = topics;
        req.groups.push_back({group, std::nullopt, -1, topics, {}});
        req.require_stable = require_stable;
        // Topics go by name: v10 (Kafka 4.2+) would name them by id only.
        const std::int16_t v = c.pick_version(static_cast<std::int16_t>(ApiKey::offset_fetch), require_stable ? 7 : 2,
                                              OffsetFetchRequest::default_max_version);
        auto o = c.receive<OffsetFetchResponse>(c.send(req, v), v, deadline).body;
        const std::int16_t code = v >= 8 ? (o.groups.empty() ? 0 : o.groups[0].error_code) : o.error_code;
        if (coordinator_retriable(code)) return code;
        if (code && !is(code, ErrorCode::group_id_not_found)) throw_group_error(group, "OffsetFetch", code);
        out.clear();
        const auto& rtopics = v >= 8 ? (o.groups.empty() ? o.topics : o.groups[0].topics) : o.topics;
        for (auto& t : rtopics)
          for (auto& p : t.partitions) {
            if (is(p.error_code, ErrorCode::unstable_offset_commit)) return p.error_code;  // retried
            if (p.error_code)
              throw KafkaError(p.error_code, fmt::format("OffsetFetch of {}-{} for group {}: {}", t.name,
                                                         p.partition_index, group, error_name(p.error_code)));
            if (p.committed_offset >= 0)
              out[{t.name, p.partition_index}] =
                  OffsetAndMetadata{p.committed_offset, p.committed_leader_epoch, p.metadata.value_or("")};
          }
        return 0;
      });
  return out;
}

void GroupAdmin::alter_offsets(const std::string& group, const std::map<TopicPartition, std::int64_t>& offsets) {
  if (offsets.empty()) return;
  OffsetCommitRequest req;
  req.group_id = group;
  req.generation_id_or_member_epoch = -1;  // not a member: accepted only while the group is empty
  for (auto& [tp, off] : offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
    req.topics.back().partitions.push_back({tp.partition, off, -1, -1, std::string(), {}});
  }
  with_coordinator(
      client_, *coordinators_, group, "OffsetCommit", [&](Connection& c, Deadline deadline) -> std::int16_t {
        const std::int16_t v = c.version_for<OffsetCommitRequest>();
        auto r = c.receive<OffsetCommitResponse>(c.send(req, v), v, deadline).body;
        for (auto& t : r.topics)
          for (auto& p : t.partitions) {
            if (coordinator_retriable(p.error_code)) return p.error_code;
            if (p.error_code)
              throw KafkaError(p.error_code, fmt::format("OffsetCommit of {}-{} for group {}: {}", t.name,
                                                         p.partition_index, group, error_name(p.error_code)));
          }
        return 0;
      });
}

std::map<TopicPartition, std::int16_t> GroupAdmin::delete_offsets(const std::string& group,
                                                                  const std::vector<TopicPartition>& partitions) {
  std::map<TopicPartition, std::int16_t> out;
  if (partitions.empty()) return out;
  OffsetDeleteRequest req;
  req.group_id = group;
  auto sorted = partitions;
  std::sort(sorted.begin(), sorted.end());
  for (auto& tp : sorted) {
    if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
    req.topics.back().partitions.push_back({tp.partition, {}});
  }
  with_coordinator(client_, *coordinators_, group, "OffsetDelete",
                   [&](Connection& c, Deadline deadline) -> std::int16_t {
                     const std::int16_t v = c.version_for<OffsetDeleteRequest>();
                     auto r = c.receive<OffsetDeleteResponse>(c.send(req, v), v, deadline).body;
                     if (r.error_code) return r.error_code;
                     out.clear();
                     for (auto& t : r.topics)
                       for (auto& p : t.partitions) out[{t.name, p.partition_index}] = p.error_code;
                     return 0;
                   });
  return out;
}

}  // namespace kwire::client
