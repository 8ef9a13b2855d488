// ShareConsumer: share sessions, ShareFetch with piggy-backed
// acknowledgements, ShareAcknowledge (see share_consumer.hpp). Membership is
// in share_heartbeat.cpp.
#include "kwire/client/share_consumer.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "share_consumer_impl.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

std::int32_t next_epoch(std::int32_t e) { return e == 0x7fffffff ? 1 : e + 1; }

// The session rule: the broker lost the session or the epochs disagree.
bool session_error(std::int16_t code) {
  return is(code, ErrorCode::share_session_not_found) || is(code, ErrorCode::invalid_share_session_epoch) ||
         is(code, ErrorCode::share_session_limit_reached);
}

// Partition errors after which the leader is looked up again.
bool leader_moved(std::int16_t code) {
  return is(code, ErrorCode::not_leader_or_follower) || is(code, ErrorCode::unknown_topic_or_partition) ||
         is(code, ErrorCode::fenced_leader_epoch) || is(code, ErrorCode::unknown_topic_id) ||
         is(code, ErrorCode::leader_not_available);
}

std::map<std::string, std::string> without_share_keys(std::map<std::string, std::string> p) {
  p.erase("share.acknowledgement.mode");
  return p;
}

std::string required_group(const std::map<std::string, std::string>& p) {
  auto it = p.find("group.id");
  if (it == p.end() || it->second.empty()) throw ConfigError("a share consumer needs group.id");
  return it->second;
}

bool explicit_mode_of(const std::map<std::string, std::string>& p) {
  auto it = p.find("share.acknowledgement.mode");
  if (it == p.end() || it->second == "implicit") return false;
  if (it->second == "explicit") return true;
  throw ConfigError(fmt::format("share.acknowledgement.mode must be implicit or explicit, not '{}'", it->second));
}

// One outcome per partition of `acked`, all with `code`.
void add_outcomes(const AckedOffsets& acked, std::int16_t code, std::vector<AcknowledgementCommit>& out) {
  for (auto& [tp, offsets] : acked) out.push_back({tp, offsets, code});
}

// The outcomes a ShareAcknowledge response gives the partitions it carried:
// the request's error, else the partition's.
void add_outcomes(const ShareAcknowledgeResponse& r, const AckedOffsets& acked,
                  const std::map<Uuid, std::string, UuidLess>& topic_names, std::vector<AcknowledgementCommit>& out) {
  std::map<TopicPartition, std::int16_t> codes;
  for (auto& t : r.responses) {
    auto name = topic_names.find(t.topic_id);
    if (name == topic_names.end()) continue;
    for (auto& p : t.partitions) codes[{name->second, p.partition_index}] = p.error_code;
  }
  for (auto& [tp, offsets] : acked) {
    auto c = codes.find(tp);
    out.push_back({tp, offsets, r.error_code != 0 || c == codes.end() ? r.error_code : c->second});
  }
}

}  // namespace

ShareConsumer::Impl::Impl(const std::map<std::string, std::string>& properties, std::string group_id,
                          bool explicit_acks)
    : client(without_share_keys(properties)),
      group(std::move(group_id)),
      member_id(Uuid::random().to_base64()),
      explicit_mode(explicit_acks) {
  membership = std::make_unique<ShareMembership>(without_share_keys(properties), group, member_id);
}

void ShareConsumer::Impl::resolve_topic_names(const ShareAssignment& assigned) {
  bool missing = false;
  for (auto& [id, parts] : assigned) missing = missing || !topic_names.count(id);
  if (!missing) return;
  for (auto& t : client.metadata(std::nullopt).topics) {
    topic_names[t.topic_id] = t.name;
    topic_ids[t.name] = t.topic_id;
  }
}

std::vector<AcknowledgementBatch> ShareConsumer::Impl::take_batches(const TopicPartition& tp,
                                                                    std::vector<std::int64_t>& offsets) {
  std::vector<AcknowledgementBatch> out;
  auto it = acks.find(tp);
  if (it == acks.end()) return out;
  auto& pending = it->second;
  for (auto a = pending.begin(); a != pending.end();) {
    if (a->second.type < 0) {
      ++a;
      continue;
    }
    if (a->second.type != kAcknowledgeGap) offsets.push_back(a->first);
    // Consecutive offsets with the same type form one batch with one type.
    if (!out.empty() && out.back().last_offset + 1 == a->first && out.back().acknowledge_types.size() == 1 &&
        out.back().acknowledge_types[0] == a->second.type) {
      out.back().last_offset = a->first;
    } else {
      out.push_back({a->first, a->first, {a->second.type}, {}});
    }
    a = pending.erase(a);
  }
  if (pending.empty()) acks.erase(it);
  return out;
}

AcknowledgementResults ShareConsumer::Impl::report(const std::vector<AcknowledgementCommit>& commits) {
  // A renewal answered: the record is handed out again by the next poll (and
  // owes an acknowledgement again), or, refused, dropped.
  for (auto& c : commits) {
    auto r = renewing.find(c.partition);
    if (r == renewing.end()) continue;
    for (auto off : c.offsets) {
      auto rec = r->second.find(off);
      if (rec == r->second.end()) continue;
      if (c.error_code == 0) {
        acks[c.partition][off] = PendingAck{};
        renewed.push_back(std::move(rec->second));
      }
      r->second.erase(rec);
    }
    if (r->second.empty()) renewing.erase(r);
  }
  AcknowledgementResults results;
  for (auto& c : commits) {
    auto [it, added] = results.emplace(c.partition, c.error_code);
    if (!added && it->second == 0) it->second = c.error_code;  // a partition's first error stays
  }
  if (offsets_callback)
    for (auto& c : commits) offsets_callback(c);
  if (callback && !results.empty()) callback(results);
  return results;
}

std::vector<ShareRecord> ShareConsumer::Impl::poll(std::chrono::milliseconds timeout) {
  if (closed) throw ShareAcknowledgementModeError("poll on a closed share consumer");
  membership->check();
  finish_async(false);
  for (auto& [tp, pending] : acks)
    for (auto& [off, a] : pending)
      if (a.type < 0) {
        if (explicit_mode)
          throw ShareAcknowledgementModeError(
              fmt::format("record {}-{}@{} of the last poll is not acknowledged (share.acknowledgement.mode=explicit)",
                          tp.topic, tp.partition, off));
        a.type = static_cast<std::int8_t>(AcknowledgeType::accept);
      }
  const Deadline deadline = Clock::now() + timeout;
  // Renewals go in a ShareAcknowledge of their own (IsRenewAck), answered
  // before the fetch; the records renewed are this poll's.
  if (renewal_pending()) send_acknowledgements(deadline, true, false);
  if (!renewed.empty()) return std::exchange(renewed, {});
  std::vector<ShareRecord> out;
  for (;;) {
    auto assigned = membership->assignment();
    resolve_topic_names(assigned);
    // Partitions by leader; acknowledgements of partitions no longer
    // assigned still go to their leader.
    std::map<std::int32_t, std::set<TopicPartition>> by_node;
    std::set<TopicPartition> assigned_tps;
    for (auto& [id, parts] : assigned) {
      auto n = topic_names.find(id);
      if (n == topic_names.end()) continue;
      for (auto p : parts) assigned_tps.insert({n->second, p});
    }
    std::set<TopicPartition> wanted = assigned_tps;
    for (auto& [tp, pending] : acks) wanted.insert(tp);
    for (auto& tp : wanted) {
      auto* t = client.cached_metadata().topic(tp.topic);
      std::int32_t leader = -1;
      if (t)
        for (auto& p : t->partitions)
          if (p.partition == tp.partition) leader = p.leader_id;
      if (leader < 0) {
        client.metadata(std::vector<std::string>{tp.topic});
        t = client.cached_metadata().topic(tp.topic);
        if (t)
          for (auto& p : t->partitions)
            if (p.partition == tp.partition) leader = p.leader_id;
      }
      if (leader >= 0) by_node[leader].insert(tp);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const std::int32_t wait_ms =
        static_cast<std::int32_t>(std::clamp<std::int64_t>(left.count(), 0, client.config().fetch_max_wait_ms));
    struct Sent {
      std::int32_t node, corr;
      std::int16_t version;
      AckedOffsets acked;
    };
    std::vector<Sent> sent;
    for (auto& [node, tps] : by_node) {
      auto& s = sessions[node];
      ShareFetchRequest req;
      req.group_id = group;
      req.member_id = member_id;
      req.share_session_epoch = s.epoch;
      req.max_wait_ms = wait_ms;
      req.min_bytes = client.config().fetch_min_bytes;
      req.max_bytes = client.config().fetch_max_bytes;
      req.max_records = client.config().max_poll_records;
      req.batch_size = client.config().max_poll_records;
      Sent sn{node, 0, 0, {}};
      for (auto& tp : tps) {
        std::vector<std::int64_t> offsets;
        auto batches = take_batches(tp, offsets);
        const bool fetch_it = assigned_tps.count(tp) > 0;
        // After the session opened, only new partitions and those with acknowledgements are named.
        if (!fetch_it && batches.empty()) continue;
        if (s.epoch != 0 && s.partitions.count(tp) && batches.empty()) continue;
        if (!batches.empty()) sn.acked[tp] = std::move(offsets);
        if (req.topics.empty() || req.topics.back().topic_id != topic_ids[tp.topic])
          req.topics.push_back({topic_ids[tp.topic], {}, {}});
        req.topics.back().partitions.push_back({tp.partition, std::move(batches), {}});
        if (fetch_it) s.partitions.insert(tp);
      }
      for (auto it = s.partitions.begin(); it != s.partitions.end();) {
        if (tps.count(*it) && assigned_tps.count(*it)) {
          ++it;
          continue;
        }
        req.forgotten_topics_data.push_back({topic_ids[it->topic], {it->partition}, {}});
        it = s.partitions.erase(it);
      }
      if (s.epoch != 0 && req.topics.empty() && req.forgotten_topics_data.empty() && s.partitions.empty()) continue;
      if (s.epoch == 0 && req.topics.empty()) continue;
      try {
        Connection& c = client.broker(node);
        sn.version = c.version_for<ShareFetchRequest>();
        sn.corr = c.send(req, sn.version);
        s.epoch = next_epoch(s.epoch);
        sent.push_back(std::move(sn));
      } catch (const ConnectionError&) {
        sessions.erase(node);
        std::vector<AcknowledgementCommit> lost;
        add_outcomes(sn.acked, -1, lost);
        report(lost);
      }
    }
    bool refresh = false;
    for (auto& sn : sent) {
      std::vector<AcknowledgementCommit> results;
      try {
        Connection& c = client.broker(sn.node);
        auto resp = c.receive<ShareFetchResponse>(
            sn.corr, sn.version,
            Clock::now() + std::chrono::milliseconds(wait_ms + client.config().request_timeout_ms));
        auto& r = resp.body;
        if (r.error_code) {
          if (!session_error(r.error_code))
            throw KafkaError(r.error_code, fmt::format("ShareFetch for group {}: {}{}", group, error_name(r.error_code),
                                                       r.error_message ? ": " + *r.error_message : std::string()));
          sessions.erase(sn.node);  // reopen; these acknowledgements are lost
          add_outcomes(sn.acked, r.error_code, results);
          report(results);
          continue;
        }
        if (r.acquisition_lock_timeout_ms > 0) lock_ms = r.acquisition_lock_timeout_ms;
        for (auto& t : r.responses) {
          auto name = topic_names.find(t.topic_id);
          if (name == topic_names.end()) continue;
          for (auto& p : t.partitions) {
            TopicPartition tp{name->second, p.partition_index};
            if (auto acked = sn.acked.find(tp); acked != sn.acked.end())
              results.push_back({tp, acked->second, p.acknowledge_error_code});
            if (p.error_code) {
              if (leader_moved(p.error_code)) refresh = true;
              sessions[sn.node].partitions.erase(tp);
              continue;
            }
            if (p.acquired_records.empty() || !p.records.data) continue;
            DecodedRecords d;
            decode_records(*p.records.data, p.acquired_records.front().first_offset, DecodeOptions{}, d);
            for (auto& a : p.acquired_records)
              for (auto& rec : d.records) {
                if (rec.offset < a.first_offset || rec.offset > a.last_offset) continue;
                ShareRecord sr;
                sr.topic = tp.topic;
                sr.partition = tp.partition;
                sr.offset = rec.offset;
                sr.timestamp = rec.timestamp;
                if (rec.key) sr.key = Bytes(rec.key->begin(), rec.key->end());
                if (rec.value) sr.value = Bytes(rec.value->begin(), rec.value->end());
                sr.headers = rec.headers;
                sr.delivery_count = a.delivery_count;
                acks[tp][rec.offset] = PendingAck{};
                out.push_back(std::move(sr));
              }
            // Acquired offsets with no record (compacted away, control
            // records) are gaps: acknowledged as such at once.
            for (auto& a : p.acquired_records)
              for (std::int64_t o = a.first_offset; o <= a.last_offset; ++o)
                if (!acks[tp].count(o)) acks[tp][o] = PendingAck{kAcknowledgeGap};
          }
        }
      } catch (const ConnectionError&) {
        sessions.erase(sn.node);
        results.clear();
        add_outcomes(sn.acked, -1, results);
      } catch (const TimeoutError&) {
        sessions.erase(sn.node);
        results.clear();
        add_outcomes(sn.acked, -1, results);
      }
      report(results);
    }
    if (refresh) client.metadata(std::nullopt);
    membership->check();
    if (!out.empty() || Clock::now() >= deadline) return out;
    if (sent.empty())
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
          std::chrono::milliseconds(50),
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
  }
}

bool ShareConsumer::Impl::renewal_pending() const {
  for (auto& [tp, pending] : renewing)
    for (auto& [off, rec] : pending) {
      auto a = acks.find(tp);
      if (a == acks.end()) continue;
      auto p = a->second.find(off);
      if (p != a->second.end() && p->second.type == static_cast<std::int8_t>(AcknowledgeType::renew)) return true;
    }
  return false;
}

void ShareConsumer::Impl::acknowledge(const ShareRecord& r, AcknowledgeType type) {
  if (type == AcknowledgeType::renew) {
    if (!explicit_mode)
      throw ShareAcknowledgementModeError("AcknowledgeType RENEW needs share.acknowledgement.mode=explicit (KIP-1222)");
    std::int32_t leader = -1;
    if (auto* t = client.cached_metadata().topic(r.topic))
      for (auto& p : t->partitions)
        if (p.partition == r.partition) leader = p.leader_id;
    if (leader >= 0 && client.broker(leader).version_for<ShareAcknowledgeRequest>() < 2)
      throw KafkaError(static_cast<std::int16_t>(ErrorCode::unsupported_version),
                       fmt::format("AcknowledgeType RENEW of {}-{}@{}: the leader speaks ShareAcknowledge below v2 "
                                   "(renewal needs Kafka 4.2+, KIP-1222)",
                                   r.topic, r.partition, r.offset));
  }
  auto it = acks.find({r.topic, r.partition});
  auto a = it == acks.end() ? decltype(it->second.end()){} : it->second.find(r.offset);
  if (it == acks.end() || a == it->second.end() || a->second.type >= 0)
    throw ShareAcknowledgementModeError(
        fmt::format("record {}-{}@{} was not handed out by the last poll or is already acknowledged", r.topic,
                    r.partition, r.offset));
  a->second.type = static_cast<std::int8_t>(type);
  if (type == AcknowledgeType::renew) renewing[{r.topic, r.partition}][r.offset] = r;
}

AcknowledgementResults ShareConsumer::Impl::send_acknowledgements(Deadline deadline, bool wait, bool final_request) {
  std::vector<AcknowledgementCommit> results;
  std::map<std::int32_t, ShareAcknowledgeRequest> reqs;
  std::map<std::int32_t, AckedOffsets> acked;
  std::vector<TopicPartition> tps;
  for (auto& [tp, pending] : acks) tps.push_back(tp);
  for (auto& tp : tps) {
    std::int32_t leader = -1;
    if (auto* t = client.cached_metadata().topic(tp.topic))
      for (auto& p : t->partitions)
        if (p.partition == tp.partition) leader = p.leader_id;
    std::vector<std::int64_t> offsets;
    auto batches = take_batches(tp, offsets);
    if (batches.empty()) continue;
    if (leader < 0 || !sessions.count(leader) || sessions[leader].epoch == 0) {
      results.push_back({tp, std::move(offsets), static_cast<std::int16_t>(ErrorCode::share_session_not_found)});
      continue;
    }
    auto& req = reqs[leader];
    for (auto& b : batches)
      for (auto t : b.acknowledge_types)
        if (t == static_cast<std::int8_t>(AcknowledgeType::renew)) req.is_renew_ack = true;
    if (req.topics.empty() || req.topics.back().topic_id != topic_ids[tp.topic])
      req.topics.push_back({topic_ids[tp.topic], {}, {}});
    req.topics.back().partitions.push_back({tp.partition, std::move(batches), {}});
    acked[leader][tp] = std::move(offsets);
  }
  if (final_request)
    for (auto& [node, s] : sessions)
      if (s.epoch != 0) reqs[node];  // closes the session even without acknowledgements
  for (auto& [node, req] : reqs) {
    auto& s = sessions[node];
    req.group_id = group;
    req.member_id = member_id;
    req.share_session_epoch = final_request ? -1 : s.epoch;
    try {
      Connection& c = client.broker(node);
      const std::int16_t v = c.version_for<ShareAcknowledgeRequest>();
      const std::int32_t corr = c.send(req, v);
      s.epoch = final_request ? 0 : next_epoch(s.epoch);
      async_acks.push_back({node, corr, v, std::move(acked[node])});
    } catch (const ConnectionError&) {
      sessions.erase(node);
      add_outcomes(acked[node], -1, results);
    }
  }
  if (wait) {
    for (auto& f : async_acks) {
      try {
        Connection& c = client.broker(f.node);
        auto r = c.receive<ShareAcknowledgeResponse>(f.corr, f.version, deadline).body;
        if (r.acquisition_lock_timeout_ms > 0) lock_ms = r.acquisition_lock_timeout_ms;  // v2+
        if (session_error(r.error_code)) sessions.erase(f.node);
        add_outcomes(r, f.partitions, topic_names, results);
      } catch (const ClientError&) {
        sessions.erase(f.node);
        add_outcomes(f.partitions, -1, results);
      }
    }
    async_acks.clear();
  }
  return report(results);
}

void ShareConsumer::Impl::finish_async(bool wait) {
  for (auto it = async_acks.begin(); it != async_acks.end();) {
    Connection* c = nullptr;
    try {
      c = &client.broker(it->node);
    } catch (const ClientError&) {
    }
    if (!wait && c && !c->ready(it->corr)) {
      ++it;
      continue;
    }
    std::vector<AcknowledgementCommit> results;
    try {
      if (!c) throw ConnectionError("lost");
      auto r = c->receive<ShareAcknowledgeResponse>(it->corr, it->version, client.default_deadline()).body;
      if (r.acquisition_lock_timeout_ms > 0) lock_ms = r.acquisition_lock_timeout_ms;  // v2+
      add_outcomes(r, it->partitions, topic_names, results);
      if (session_error(r.error_code)) sessions.erase(it->node);
    } catch (const ClientError&) {
      sessions.erase(it->node);
      results.clear();
      add_outcomes(it->partitions, -1, results);
    }
    it = async_acks.erase(it);
    report(results);
  }
}

void ShareConsumer::Impl::close(Deadline deadline) {
  if (closed) return;
  closed = true;
  if (!explicit_mode)
    for (auto& [tp, pending] : acks)
      for (auto& [off, a] : pending)
        if (a.type < 0) a.type = static_cast<std::int8_t>(AcknowledgeType::accept);
  // Nothing is renewed for a consumer that leaves: those records are released.
  for (auto& [tp, pending] : acks)
    for (auto& [off, a] : pending)
      if (a.type == static_cast<std::int8_t>(AcknowledgeType::renew))
        a.type = static_cast<std::int8_t>(AcknowledgeType::release);
  renewing.clear();
  renewed.clear();
  try {
    finish_async(true);
    send_acknowledgements(deadline, true, true);
  } catch (const ClientError&) {
  }
  membership->stop(deadline);
}

ShareConsumer::ShareConsumer(const std::map<std::string, std::string>& properties)
    : impl_(std::make_unique<Impl>(properties, required_group(properties), explicit_mode_of(properties))) {}

ShareConsumer::~ShareConsumer() {
  try {
    close(std::chrono::seconds(5));
  } catch (...) {
  }
}

void ShareConsumer::subscribe(const std::vector<std::string>& topics) { impl_->membership->subscribe(topics); }
void ShareConsumer::unsubscribe() { impl_->membership->subscribe({}); }
std::vector<ShareRecord> ShareConsumer::poll(std::chrono::milliseconds timeout) { return impl_->poll(timeout); }
void ShareConsumer::acknowledge(const ShareRecord& record, AcknowledgeType type) { impl_->acknowledge(record, type); }

AcknowledgementResults ShareConsumer::commit_sync(std::chrono::milliseconds timeout) {
  impl_->finish_async(true);
  return impl_->send_acknowledgements(Clock::now() + timeout, true, false);
}

void ShareConsumer::commit_async() {
  impl_->finish_async(false);
  impl_->send_acknowledgements(impl_->client.default_deadline(), false, false);
}

void ShareConsumer::set_acknowledgement_commit_callback(std::function<void(const AcknowledgementResults&)> callback) {
  impl_->callback = std::move(callback);
}

void ShareConsumer::set_acknowledgement_offsets_callback(std::function<void(const AcknowledgementCommit&)> callback) {
  impl_->offsets_callback = std::move(callback);
}

void ShareConsumer::close(std::chrono::milliseconds timeout) { impl_->close(Clock::now() + timeout); }
std::int32_t ShareConsumer::acquisition_lock_ms() const noexcept { return impl_->lock_ms.load(); }
const std::string& ShareConsumer::member_id() const noexcept { return impl_->member_id; }

std::vector<TopicPartition> ShareConsumer::assignment() const {
  std::vector<TopicPartition> out;
  for (auto& [id, parts] : impl_->membership->assignment()) {
    auto n = impl_->topic_names.find(id);
    for (auto p : parts) out.push_back({n == impl_->topic_names.end() ? id.to_base64() : n->second, p});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kwire::client
