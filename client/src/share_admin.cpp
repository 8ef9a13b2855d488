// Admin's share-group calls (KIP-932): ShareGroupDescribe,
// DescribeShareGroupOffsets and AlterShareGroupOffsets at the group's
// coordinator (see admin.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "coordinators.hpp"
#include "group_coordinator.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

// Runs `attempt` on the group's coordinator until default.api.timeout.ms, the
// coordinator rule of coordinators.hpp applied to the code it replies.
template <class F>
void on_coordinator(KafkaClient& client, Coordinators& coordinators, const std::string& group, const char* api,
                    F&& attempt) {
  RetryLoop loop(client.config(), Clock::now() + std::chrono::milliseconds(client.config().default_api_timeout_ms),
                 fmt::format("{} for group {}", api, group));
  call_coordinator(client, coordinators, CoordinatorType::group, group, loop, [&](Connection& c) {
    const std::int16_t code = attempt(c, loop.request_deadline());
    if (code == 0) return CoordinatorReply::done();
    if (!coordinator_retriable(code)) throw_group_error(group, api, code);
    return CoordinatorReply::retry(code);
  });
}

}  // namespace

ShareGroupDescription Admin::describe_share_group(const std::string& group) {
  ShareGroupDescription out;
  out.group_id = group;
  on_coordinator(client_, *coordinators_, group, "ShareGroupDescribe", [&](Connection& c, Deadline deadline) {
    const std::int16_t v = c.version_for<ShareGroupDescribeRequest>();
    ShareGroupDescribeRequest req;
    req.group_ids = {group};
    auto r = c.receive<ShareGroupDescribeResponse>(c.send(req, v), v, deadline).body;
    if (r.groups.size() != 1) throw MalformedResponseError("ShareGroupDescribe answered for another number of groups");
    auto& d = r.groups[0];
    if (d.error_code) return d.error_code;
    out.state = d.group_state;
    out.group_epoch = d.group_epoch;
    out.assignor = d.assignor_name;
    out.members.clear();
    for (auto& m : d.members) {
      ShareGroupMember sm{m.member_id, m.client_id, m.client_host, m.member_epoch, {}};
      for (auto& tp : m.assignment.topic_partitions)
        for (auto p : tp.partitions) sm.assignment.push_back({tp.topic_name, p});
      std::sort(sm.assignment.begin(), sm.assignment.end());
      out.members.push_back(std::move(sm));
    }
    return std::int16_t{0};
  });
  on_coordinator(client_, *coordinators_, group, "DescribeShareGroupOffsets", [&](Connection& c, Deadline deadline) {
    const std::int16_t v = c.version_for<DescribeShareGroupOffsetsRequest>();
    DescribeShareGroupOffsetsRequest req;
    req.groups.push_back({group, std::nullopt, {}});  // every topic
    auto r = c.receive<DescribeShareGroupOffsetsResponse>(c.send(req, v), v, deadline).body;
    if (r.groups.size() != 1)
      throw MalformedResponseError("DescribeShareGroupOffsets answered for another number of groups");
    if (r.groups[0].error_code) return r.groups[0].error_code;
    out.start_offsets.clear();
    out.lag.clear();
    for (auto& t : r.groups[0].topics)
      for (auto& p : t.partitions) {
        if (p.error_code)
          throw KafkaError(p.error_code, fmt::format("DescribeShareGroupOffsets of {}-{} for group {}: {}",
                                                     t.topic_name, p.partition_index, group, error_name(p.error_code)));
        out.start_offsets[{t.topic_name, p.partition_index}] = p.start_offset;
        out.lag[{t.topic_name, p.partition_index}] = v >= 1 ? p.lag : -1;
      }
    return std::int16_t{0};
  });
  return out;
}

void Admin::alter_share_group_offsets(const std::string& group, const std::map<TopicPartition, std::int64_t>& offsets) {
  if (offsets.empty()) return;
  AlterShareGroupOffsetsRequest req;
  req.group_id = group;
  for (auto& [tp, off] : offsets) {
    if (req.topics.empty() || req.topics.back().topic_name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
    req.topics.back().partitions.push_back({tp.partition, off, {}});
  }
  on_coordinator(client_, *coordinators_, group, "AlterShareGroupOffsets", [&](Connection& c, Deadline deadline) {
    const std::int16_t v = c.version_for<AlterShareGroupOffsetsRequest>();
    auto r = c.receive<AlterShareGroupOffsetsResponse>(c.send(req, v), v, deadline).body;
    if (r.error_code) return r.error_code;
    for (auto& t : r.responses)
      for (auto& p : t.partitions)
        if (p.error_code)
          throw KafkaError(p.error_code, fmt::format("AlterShareGroupOffsets of {}-{} for group {}: {}{}", t.topic_name,
                                                     p.partition_index, group, error_name(p.error_code),
                                                     p.error_message ? ": " + *p.error_message : std::string()));
    return std::int16_t{0};
  });
}

}  // namespace kwire::client
