// Share-group rows of `kwire conformance` (KIP-932), run where the broker has
// share groups on (feature share.version finalized at 1 or more: by default
// from Kafka 4.2). Each version is checked by what the broker does with it:
// a member joins and gets partition 0 assigned; ShareFetch acquires the
// records with delivery count 1 and takes piggy-backed acceptances;
// ShareAcknowledge releases records, which the next ShareFetch delivers again
// with delivery count 2; the offset APIs set, read back and delete the
// group's start offset.
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "conformance_exchange.hpp"
#include "conformance_groups.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using client::Connection;

namespace {

struct Member {
  explicit Member(std::string g) : group(std::move(g)) {}
  std::string group;
  std::string id;
  std::int32_t epoch = 0;
  bool assigned = false;  // partition 0 of the topic
};

struct ShareChecker {
  const GroupChecks& g;

  template <class Resp, class Req>
  Resp call(Connection& c, const Req& req, std::int16_t v, std::string& size_error) {
    return checked_exchange<Resp>(c, req, v, g.client->default_deadline(), size_error);
  }

  Connection& coordinator(const std::string& group) { return conformance_coordinator(*g.client, 0, group); }

  // A new share group reads from the log end unless share.auto.offset.reset
  // says otherwise (a group config, KIP-932): start these at the beginning.
  std::string read_from_earliest(const std::string& group) {
    IncrementalAlterConfigsRequest req;
    req.resources.push_back(
        {static_cast<std::int8_t>(ConfigResourceType::group),
         group,
         {{"share.auto.offset.reset", static_cast<std::int8_t>(AlterConfigOp::set), std::string("earliest"), {}}},
         {}});
    Connection& c = g.client->any_connection();
    const std::int16_t v = c.version_for<IncrementalAlterConfigsRequest>();
    auto r = c.receive<IncrementalAlterConfigsResponse>(c.send(req, v), v, g.client->default_deadline()).body;
    if (r.responses.size() != 1) return "IncrementalAlterConfigs: wrong shape";
    if (r.responses[0].error_code)
      return fmt::format("share.auto.offset.reset: {}", error_name(r.responses[0].error_code));
    return {};
  }

  std::string heartbeat(Member& m, std::int16_t v, bool leave = false) {
    ShareGroupHeartbeatRequest req;
    req.group_id = m.group;
    req.member_id = m.id;
    req.member_epoch = leave ? -1 : m.epoch;
    if (m.epoch == 0 && !leave) req.subscribed_topic_names = std::vector<std::string>{g.topic};
    std::string err;
    auto r = call<ShareGroupHeartbeatResponse>(coordinator(m.group), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ShareGroupHeartbeat returned {}", error_name(r.error_code));
    if (leave) {
      if (r.member_epoch != -1) return fmt::format("leaving gave epoch {} instead of -1", r.member_epoch);
      return {};
    }
    if (r.member_epoch <= 0) return fmt::format("member epoch {} after a heartbeat", r.member_epoch);
    if (r.heartbeat_interval_ms <= 0) return "no heartbeat interval";
    m.epoch = r.member_epoch;
    if (r.assignment)
      for (auto& tp : r.assignment->topic_partitions)
        if (tp.topic_id == g.topic_id)
          for (auto p : tp.partitions) m.assigned = m.assigned || p == 0;
    return {};
  }

  // Joins and heartbeats until partition 0 is assigned (at most ~15 s).
  std::string join(Member& m, std::int16_t heartbeat_v) {
    auto res = read_from_earliest(m.group);
    if (!res.empty()) return res;
    m.id = Uuid::random().to_base64();
    for (int i = 0; i < 60 && !m.assigned; ++i) {
      res = heartbeat(m, heartbeat_v);
      if (!res.empty()) return res;
      if (!m.assigned) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return m.assigned ? std::string() : "partition 0 was never assigned";
  }

  struct Fetched {
    std::int64_t first = -1, last = -1;
    std::int16_t delivery_count = 0;
    std::int16_t acknowledge_error = 0;
  };

  // One ShareFetch of partition 0 at session epoch `epoch`, piggy-backing
  // `acks`; waits up to 500 ms for records.
  std::string fetch(const Member& m, std::int16_t v, std::int32_t epoch, const std::vector<AcknowledgementBatch>& acks,
                    Fetched& out) {
    ShareFetchRequest req;
    req.group_id = m.group;
    req.member_id = m.id;
    req.share_session_epoch = epoch;
    req.max_wait_ms = 500;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.max_records = 500;
    req.batch_size = 500;
    ShareFetchRequest::FetchTopic t;
    t.topic_id = g.topic_id;
    t.partitions.push_back({0, acks, {}});
    req.topics.push_back(t);
    std::string err;
    auto r = call<ShareFetchResponse>(g.client->leader_for({g.topic, 0}), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ShareFetch returned {}", error_name(r.error_code));
    out = {};
    for (auto& tr : r.responses)
      for (auto& p : tr.partitions) {
        if (tr.topic_id != g.topic_id || p.partition_index != 0) return "an answer for another partition";
        if (p.error_code) return fmt::format("partition returned {}", error_name(p.error_code));
        out.acknowledge_error = p.acknowledge_error_code;
        for (auto& a : p.acquired_records) {
          if (out.first < 0) out.first = a.first_offset;
          out.last = a.last_offset;
          out.delivery_count = std::max(out.delivery_count, a.delivery_count);
        }
      }
    if (out.first >= 0 && r.acquisition_lock_timeout_ms <= 0) return "records acquired without a lock duration";
    return {};
  }

  std::string fetch_until_records(const Member& m, std::int16_t v, std::int32_t& epoch, Fetched& out) {
    for (int i = 0; i < 20; ++i) {
      auto res = fetch(m, v, epoch, {}, out);
      if (!res.empty()) return res;
      epoch = epoch == 0x7fffffff ? 1 : epoch + 1;
      if (out.first >= 0) return {};
    }
    return "no records were acquired";
  }

  static AcknowledgementBatch all(const Fetched& f, std::int8_t type) { return {f.first, f.last, {type}, {}}; }

  std::string close_session(const Member& m, std::int16_t v, const Fetched& f, std::int8_t type) {
    ShareAcknowledgeRequest req;
    req.group_id = m.group;
    req.member_id = m.id;
    req.share_session_epoch = -1;  // the last request of the session
    ShareAcknowledgeRequest::AcknowledgeTopic t;
    t.topic_id = g.topic_id;
    t.partitions.push_back({0, {all(f, type)}, {}});
    req.topics.push_back(t);
    std::string err;
    auto r = call<ShareAcknowledgeResponse>(g.client->leader_for({g.topic, 0}), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ShareAcknowledge returned {}", error_name(r.error_code));
    if (r.responses.size() != 1 || r.responses[0].partitions.size() != 1) return "wrong shape";
    if (r.responses[0].partitions[0].error_code)
      return fmt::format("acknowledging returned {}", error_name(r.responses[0].partitions[0].error_code));
    return {};
  }
};

template <class M>
std::int16_t highest(const GroupChecks& g) {
  return g.client->any_connection().pick_version(static_cast<std::int16_t>(M::api_key), M::min_version, M::max_version);
}

}  // namespace

void run_share_conformance(const GroupChecks& g, const RunApi& run_api) {
  ShareChecker k{g};
  // Asked only inside the checks: a broker without share groups (3.9) does
  // not offer these APIs, and then no check runs.
  auto hb_max_of = [&] { return highest<ShareGroupHeartbeatRequest>(g); };
  auto fetch_max_of = [&] { return highest<ShareFetchRequest>(g); };
  auto ack_max_of = [&] { return highest<ShareAcknowledgeRequest>(g); };
  run_api(declared_row<ShareGroupHeartbeatRequest>(), [&](std::int16_t v) -> std::string {
    Member m{fmt::format("{}-share-hb-v{}", g.prefix, v)};
    auto res = k.join(m, v);
    if (!res.empty()) return res;
    return k.heartbeat(m, v, true);
  });
  run_api(declared_row<ShareGroupDescribeRequest>(), [&](std::int16_t v) -> std::string {
    Member m{fmt::format("{}-share-describe-v{}", g.prefix, v)};
    auto res = k.join(m, hb_max_of());
    if (!res.empty()) return "setup: " + res;
    ShareGroupDescribeRequest req;
    req.group_ids = {m.group};
    auto r = k.call<ShareGroupDescribeResponse>(k.coordinator(m.group), req, v, res);
    k.heartbeat(m, hb_max_of(), true);
    if (!res.empty()) return res;
    if (r.groups.size() != 1 || r.groups[0].group_id != m.group) return "wrong shape";
    auto& d = r.groups[0];
    if (d.error_code) return fmt::format("group returned {}", error_name(d.error_code));
    if (d.members.size() != 1 || d.members[0].member_id != m.id) return "the member is not described";
    if (d.members[0].assignment.topic_partitions.size() != 1 ||
        d.members[0].assignment.topic_partitions[0].topic_name != g.topic)
      return "the member's assignment is not described";
    return {};
  });
  run_api(declared_row<ShareFetchRequest>(), [&](std::int16_t v) -> std::string {
    Member m{fmt::format("{}-share-fetch-v{}", g.prefix, v)};
    auto res = k.join(m, hb_max_of());
    if (!res.empty()) return "setup: " + res;
    std::int32_t epoch = 0;
    ShareChecker::Fetched f;
    res = k.fetch_until_records(m, v, epoch, f);
    if (res.empty() && f.first != 0) res = fmt::format("acquired from offset {} instead of 0", f.first);
    if (res.empty() && f.delivery_count != 1) res = fmt::format("delivery count {} instead of 1", f.delivery_count);
    // Accept them all, piggy-backed on the next fetch: nothing is left to acquire.
    ShareChecker::Fetched next;
    if (res.empty()) res = k.fetch(m, v, epoch, {ShareChecker::all(f, kAcknowledgeAccept)}, next);
    if (res.empty() && next.acknowledge_error)
      res = fmt::format("acceptance returned {}", error_name(next.acknowledge_error));
    if (res.empty() && next.first >= 0 && next.first <= f.last) res = "accepted records were delivered again";
    k.heartbeat(m, hb_max_of(), true);
    return res;
  });
  run_api(declared_row<ShareAcknowledgeRequest>(), [&](std::int16_t v) -> std::string {
    Member m{fmt::format("{}-share-ack-v{}", g.prefix, v)};
    auto res = k.join(m, hb_max_of());
    if (!res.empty()) return "setup: " + res;
    std::int32_t epoch = 0;
    ShareChecker::Fetched f;
    res = k.fetch_until_records(m, fetch_max_of(), epoch, f);
    // Release them and end the session: a new session gets them again, delivery count 2.
    if (res.empty()) res = k.close_session(m, v, f, kAcknowledgeRelease);
    ShareChecker::Fetched again;
    epoch = 0;
    if (res.empty()) res = k.fetch_until_records(m, fetch_max_of(), epoch, again);
    if (res.empty() && (again.first != f.first || again.delivery_count != 2))
      res = fmt::format("released records came back from {} with delivery count {} (expected {} and 2)", again.first,
                        again.delivery_count, f.first);
    if (res.empty()) res = k.close_session(m, ack_max_of(), again, kAcknowledgeAccept);
    k.heartbeat(m, hb_max_of(), true);
    return res;
  });
  // The offset APIs on a group with no members: set the start offset of
  // partition 0, read it back, delete the topic's state.
  const std::string offsets_group = fmt::format("{}-share-offsets", g.prefix);
  auto describe_start = [&](std::int16_t v, std::int64_t& start) -> std::string {
    DescribeShareGroupOffsetsRequest req;
    req.groups.push_back(
        {offsets_group, std::vector<DescribeShareGroupOffsetsRequest::RequestTopic>{{g.topic, {0}, {}}}, {}});
    std::string err;
    auto r = k.call<DescribeShareGroupOffsetsResponse>(k.coordinator(offsets_group), req, v, err);
    if (!err.empty()) return err;
    if (r.groups.size() != 1 || r.groups[0].topics.size() != 1 || r.groups[0].topics[0].partitions.size() != 1)
      return "wrong shape";
    if (r.groups[0].error_code) return fmt::format("group returned {}", error_name(r.groups[0].error_code));
    auto& p = r.groups[0].topics[0].partitions[0];
    if (p.error_code) return fmt::format("partition returned {}", error_name(p.error_code));
    start = p.start_offset;
    return {};
  };
  run_api(declared_row<AlterShareGroupOffsetsRequest>(), [&](std::int16_t v) -> std::string {
    AlterShareGroupOffsetsRequest req;
    req.group_id = offsets_group;
    req.topics.push_back({g.topic, {{0, 2, {}}}, {}});
    std::string err;
    auto r = k.call<AlterShareGroupOffsetsResponse>(k.coordinator(offsets_group), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("AlterShareGroupOffsets returned {}", error_name(r.error_code));
    if (r.responses.size() != 1 || r.responses[0].partitions.size() != 1) return "wrong shape";
    if (r.responses[0].partitions[0].error_code)
      return fmt::format("partition returned {}", error_name(r.responses[0].partitions[0].error_code));
    return {};
  });
  run_api(declared_row<DescribeShareGroupOffsetsRequest>(), [&](std::int16_t v) -> std::string {
    std::int64_t start = -2;
    auto res = describe_start(v, start);
    if (!res.empty()) return res;
    if (start != 2) return fmt::format("start offset {} instead of the 2 set", start);
    return {};
  });
  run_api(declared_row<DeleteShareGroupOffsetsRequest>(), [&](std::int16_t v) -> std::string {
    DeleteShareGroupOffsetsRequest req;
    req.group_id = offsets_group;
    req.topics.push_back({g.topic, {}});
    std::string err;
    auto r = k.call<DeleteShareGroupOffsetsResponse>(k.coordinator(offsets_group), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("DeleteShareGroupOffsets returned {}", error_name(r.error_code));
    if (r.responses.size() != 1 || r.responses[0].error_code)
      return r.responses.empty() ? "wrong shape"
                                 : fmt::format("topic returned {}", error_name(r.responses[0].error_code));
    std::int64_t start = -2;
    auto res = describe_start(highest<DescribeShareGroupOffsetsRequest>(g), start);
    if (!res.empty()) return "read back: " + res;
    if (start != -1) return fmt::format("start offset {} after the delete instead of -1", start);
    return {};
  });
}

}  // namespace kwire::tools
