// The Fetcher's requests and answers: which partitions go to which leader,
// fetch sessions (KIP-227), leader epochs (KIP-320), and taking an answer in
// partition by partition.
#include <algorithm>

#include <fmt/format.h>

#include "fetcher_state.hpp"
#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/errors.hpp"
#include "retriable.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

constexpr auto kNetworkException = static_cast<std::int16_t>(ErrorCode::network_exception);

}  // namespace

std::optional<std::int64_t> Fetcher::fetch_offset(const PartitionState& s) const {
  if (!s.position) return std::nullopt;
  if (s.answers.empty()) return s.position;
  if (s.answers.back().error) return std::nullopt;  // nothing more until the error is raised
  return s.answers.back().next_offset;
}

void Fetcher::send_fetches() {
  const auto now = Clock::now();
  struct Want {
    TopicPartition tp;
    Session::Sent sent;
  };
  std::map<std::int32_t, std::vector<Want>> by_leader;
  std::vector<std::string> refresh;
  for (auto& [tp, sp] : partitions_) {
    auto& s = *sp;
    // At most two answers per partition: the one being handed out and the next.
    if (s.paused || s.validate || now < s.not_before || s.answers.size() >= 2) continue;
    auto offset = fetch_offset(s);
    if (!offset) continue;
    const auto leader = cluster_.leader(tp);
    if (leader.node < 0) {
      // No leader known: waited out like a leadership error, unless metadata
      // answered an error no refresh will clear (TOPIC_AUTHORIZATION_FAILED:
      // the client may not describe the topic), which poll() raises, as
      // Java's consumer does, and asks again on the next one.
      const std::int16_t code =
          leader.error_code ? leader.error_code : static_cast<std::int16_t>(ErrorCode::leader_not_available);
      if (!fetch_waits_out(code) && !is_retriable(code)) {
        push_error(tp, s,
                   std::make_exception_ptr(
                       KafkaError(code, fmt::format("fetch from {} failed: {}", to_string(tp), error_name(code)))));
        continue;
      }
      back_off(tp, s, code, false);
      refresh.push_back(tp.topic);
      continue;
    }
    // The topic id as metadata knows it now (the lookup above loaded it).
    if (topic_recreated(tp, s)) offset = fetch_offset(s);
    // A follower the leader named (KIP-392) serves the partition until that
    // choice is metadata.max.age.ms old, as in Java's SubscriptionState.
    std::int32_t node = leader.node;
    if (s.read_replica >= 0) {
      if (now < s.read_replica_until) node = s.read_replica;
      else s.read_replica = -1;
    }
    if (in_flight_.count(node)) continue;
    if (s.leader_epoch >= 0 && leader.epoch > s.leader_epoch && s.position_epoch >= 0) {
      // The leader changed since the position was fetched: check it first.
      s.validate = true;
      s.answers.clear();
      continue;
    }
    if (leader.epoch >= 0) s.leader_epoch = leader.epoch;
    Session::Sent sent;
    sent.offset = *offset;
    sent.max_bytes = s.max_bytes > 0 ? s.max_bytes : config_.max_partition_fetch_bytes;
    sent.current_leader_epoch = leader.epoch;
    sent.last_fetched_epoch =
        !s.answers.empty() && s.answers.back().last_epoch >= 0 ? s.answers.back().last_epoch : s.position_epoch;
    sent.topic_id = s.topic_id;
    by_leader[node].push_back({tp, sent});
  }
  // A broker that cannot be reached: its partitions back off (not counted
  // against the retry budget), go back to their leader if it was a follower,
  // and metadata is refreshed.
  auto unreachable = [&](std::int32_t node, const std::vector<Want>& wants) {
    sessions_.erase(node);
    for (auto& w : wants) {
      auto& ws = state(w.tp);
      if (ws.read_replica == node) ws.read_replica = -1;
      back_off(w.tp, ws, kNetworkException, false);
      refresh.push_back(w.tp.topic);
    }
  };
  for (auto& [node, wants] : by_leader) {
    std::int16_t v;
    try {
      v = cluster_.fetch_version(node);
    } catch (const ConnectionError&) {
      unreachable(node, wants);
      continue;
    }
    // Topic ids are required from v13; stay at v12 while one is unknown.
    if (v >= 13 && std::any_of(wants.begin(), wants.end(), [](auto& w) { return w.sent.topic_id.is_zero(); })) v = 12;
    auto& session_slot = sessions_[node];
    if (!session_slot) session_slot = std::make_unique<Session>();
    auto& session = *session_slot;
    auto f = std::make_unique<InFlight>();
    f->version = v;
    f->use_session = v >= 7;
    f->incremental = f->use_session && session.id != 0;
    FetchRequest req;
    req.replica_id = -1;
    req.max_wait_ms = config_.fetch_max_wait_ms;
    req.min_bytes = config_.fetch_min_bytes;
    req.max_bytes = config_.fetch_max_bytes;
    req.isolation_level = config_.isolation_level;
    req.rack_id = config_.client_rack;  // v11+
    if (!f->use_session) {
      req.session_id = 0;
      req.session_epoch = -1;  // sessionless full fetch
    } else if (!f->incremental) {
      session = Session{};
      req.session_id = 0;
      req.session_epoch = 0;  // a full fetch that asks for a new session
    } else {
      req.session_id = session.id;
      req.session_epoch = session.epoch;
    }
    // A topic entry per (name, id): v13+ names topics by id only, and a
    // recreated topic is forgotten under its old id.
    auto add_topic = [&](auto& topics, const std::string& name, const Uuid& id) {
      if (topics.empty() || topics.back().topic != name || topics.back().topic_id != id) {
        topics.emplace_back();
        topics.back().topic = name;
        topics.back().topic_id = id;
      }
    };
    for (auto& w : wants) {
      if (v < 9) w.sent.current_leader_epoch = -1;
      if (v < 12) w.sent.last_fetched_epoch = -1;
      if (v < 13) w.sent.topic_id = Uuid{};
      f->sent[w.tp] = w.sent;
      if (f->incremental) {
        auto it = session.sent.find(w.tp);
        if (it != session.sent.end() && it->second == w.sent) continue;  // the broker has it already
      }
      add_topic(req.topics, w.tp.topic, w.sent.topic_id);
      FetchRequest::FetchPartition fp;
      fp.partition = w.tp.partition;
      fp.fetch_offset = w.sent.offset;
      fp.partition_max_bytes = w.sent.max_bytes;
      fp.current_leader_epoch = w.sent.current_leader_epoch;
      fp.last_fetched_epoch = w.sent.last_fetched_epoch;
      req.topics.back().partitions.push_back(fp);
    }
    if (f->incremental) {
      // Dropped partitions, and (v13+) ones whose topic id changed: the
      // session holds them under the old id.
      for (auto& [tp, was] : session.sent) {
        auto now_sent = f->sent.find(tp);
        if (now_sent != f->sent.end() && now_sent->second.topic_id == was.topic_id) continue;
        add_topic(req.forgotten_topics_data, tp.topic, was.topic_id);
        req.forgotten_topics_data.back().partitions.push_back(tp.partition);
      }
    }
    try {
      f->pending.node = node;
      f->pending.token = cluster_.send_fetch(node, req, v);
      f->pending.deadline =
          Clock::now() + std::chrono::milliseconds(config_.fetch_max_wait_ms + config_.request_timeout_ms);
    } catch (const ConnectionError&) {
      unreachable(node, wants);
      continue;
    }
    in_flight_[node] = std::move(f);
  }
  if (!refresh.empty()) {
    try {
      cluster_.refresh_metadata(refresh);
    } catch (const ClientError&) {
    }
  }
}

bool Fetcher::take_answer(Deadline until) {
  if (in_flight_.empty()) return false;
  std::vector<FetchCluster::Pending> pending;
  pending.reserve(in_flight_.size());
  for (auto& [node, f] : in_flight_) pending.push_back(f->pending);
  const auto index = cluster_.wait_any(pending, until);
  if (!index) return false;
  const std::int32_t node = pending[*index].node;
  std::unique_ptr<InFlight> f = std::move(in_flight_.at(node));
  in_flight_.erase(node);
  std::vector<std::string> refresh;
  Response<FetchResponse> resp;
  try {
    resp = cluster_.receive_fetch(f->pending, f->version);
  } catch (const ClientError& e) {
    // Lost with its connection, or no answer within request.timeout.ms (the
    // connection is then closed, so no late answer can be mistaken for
    // another): as Java's consumer, a disconnect. The partitions back off
    // (not counted against the retry budget) and are fetched again from the
    // same offsets after a metadata refresh; a reader that needs progress
    // bounds its own wait (kafkaConsumer.pollTimeoutMs in the source).
    if (!dynamic_cast<const ConnectionError*>(&e) && !dynamic_cast<const TimeoutError*>(&e)) throw;
    sessions_.erase(node);
    for (auto& [tp, sent] : f->sent) {
      auto it = partitions_.find(tp);
      if (it == partitions_.end()) continue;
      if (it->second->read_replica == node) it->second->read_replica = -1;
      if (fetch_offset(*it->second) != sent.offset) continue;
      back_off(tp, *it->second, kNetworkException, false);
      refresh.push_back(tp.topic);
    }
    try {
      cluster_.refresh_metadata(refresh);
    } catch (const ClientError&) {
    }
    return true;
  }
  const auto top_error = resp.body.error_code;
  if (top_error == static_cast<std::int16_t>(ErrorCode::fetch_session_id_not_found) ||
      top_error == static_cast<std::int16_t>(ErrorCode::invalid_fetch_session_epoch) ||
      top_error == static_cast<std::int16_t>(ErrorCode::fetch_session_topic_id_error)) {
    // The broker dropped or does not know our session: the next fetch to it
    // is a full one that opens a new session. No position moved.
    sessions_.erase(node);
    return true;
  }
  if (top_error != 0) {
    sessions_.erase(node);
    throw KafkaError(top_error, fmt::format("Fetch from broker {} failed: {}", node, error_name(top_error)));
  }
  if (f->use_session && resp.body.session_id != 0) {
    auto& session = sessions_[node];
    if (!session) session = std::make_unique<Session>();
    if (!f->incremental) session->id = resp.body.session_id;
    session->epoch = session->epoch == 0x7fffffff ? 1 : session->epoch + 1;
    session->sent = f->sent;
  } else {
    sessions_.erase(node);  // the broker keeps no session for us
  }
  // A partition listed twice is taken once, the later entry (as Java's
  // response map); partitions not asked for are ignored.
  std::map<TopicPartition, FetchResponse::PartitionData*> entries;
  for (auto& t : resp.body.responses) {
    const std::string* name = &t.topic;
    if (resp.version >= 13) {
      name = cluster_.topic_name(t.topic_id);
      if (!name) continue;
    }
    for (auto& p : t.partitions) {
      TopicPartition tp{*name, p.partition_index};
      auto sent = f->sent.find(tp);
      if (sent == f->sent.end()) continue;
      if (resp.version >= 13 && sent->second.topic_id != t.topic_id) continue;  // another incarnation of the topic
      entries[tp] = &p;
    }
  }
  for (auto& [tp, p] : entries) take_partition(tp, *f, *p, resp.frame, resp.body.node_endpoints, refresh);
  if (!refresh.empty()) {
    try {
      cluster_.refresh_metadata(refresh);
    } catch (const ClientError&) {
    }
  }
  return true;
}

void Fetcher::take_partition(const TopicPartition& tp, const InFlight& f, FetchResponse::PartitionData& p,
                             const std::shared_ptr<const Bytes>& frame,
                             const std::vector<FetchResponse::NodeEndpoint>& endpoints,
                             std::vector<std::string>& refresh) {
  auto it = partitions_.find(tp);
  if (it == partitions_.end()) return;  // no longer assigned
  auto& s = *it->second;
  const std::int64_t sent = f.sent.at(tp).offset;
  // Only an answer for where the partition is now counts: one sought,
  // paused or reset meanwhile, or sent to a topic since recreated, is
  // fetched again from its position.
  if (s.paused || fetch_offset(s) != sent) return;
  if (!f.sent.at(tp).topic_id.is_zero() && f.sent.at(tp).topic_id != s.topic_id) return;
  const std::int16_t code = p.error_code;
  const std::int32_t node = f.pending.node;
  const bool from_follower = s.read_replica >= 0 && s.read_replica == node;
  if (code == 0) {
    s.failures = s.attempts = 0;
    s.not_before = {};
    s.info = FetchedPartition{tp, sent, p.high_watermark, p.last_stable_offset, p.log_start_offset, node};
    if (f.version >= 11 && p.preferred_read_replica >= 0 && p.preferred_read_replica != node) {
      // KIP-392: the leader names a follower (in client.rack) to read from;
      // such an answer carries no records. The next fetch goes there.
      s.read_replica = p.preferred_read_replica;
      s.read_replica_until = Clock::now() + std::chrono::milliseconds(config_.metadata_max_age_ms);
    }
    if (f.version >= 12 && (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0)) {
      // KIP-320: the log diverged from what was fetched before `sent`.
      truncated(tp, s, p.diverging_epoch.end_offset, p.diverging_epoch.epoch);
      return;
    }
    if (!p.records.data || p.records.data->empty()) return;
    const auto end = next_offset_after_batches(*p.records.data, sent);
    if (end.next_offset == sent) {
      // A batch larger than what was asked for arrives cut off (brokers
      // before 0.10.1): ask for its full size next time.
      if (end.partial_size > 0) {
        if (end.partial_size > static_cast<std::size_t>(config_.fetch_max_bytes))
          push_error(tp, s,
                     std::make_exception_ptr(
                         ClientError(fmt::format("the batch at offset {} of {} is {} bytes, above fetch.max.bytes ({})",
                                                 sent, to_string(tp), end.partial_size, config_.fetch_max_bytes))));
        else s.max_bytes = static_cast<std::int32_t>(end.partial_size);
      }
      return;
    }
    s.max_bytes = 0;
    Answer a;
    a.fetch_offset = sent;
    a.next_offset = end.next_offset;
    a.last_epoch = end.last_epoch;
    a.frame = frame;
    DecodeOptions opts;
    opts.check_crcs = config_.check_crcs;
    opts.read_committed = config_.isolation_level == 1;
    if (opts.read_committed && p.aborted_transactions)
      for (auto& t : *p.aborted_transactions) opts.aborted_transactions.push_back({t.producer_id, t.first_offset});
    a.decoder.emplace(*p.records.data, sent, std::move(opts));
    s.answers.push_back(std::move(a));
    enqueue(tp, s);
    return;
  }
  // Any error from a follower sends the partition back to its leader (Java's
  // FetchCollector clears the preferred read replica on each of them).
  if (from_follower) s.read_replica = -1;
  if (code == static_cast<std::int16_t>(ErrorCode::offset_out_of_range)) {
    // A lagging follower does not have the offset yet: ask the leader, which
    // decides whether it is really out of range, after a back-off (the
    // leader may name the same follower again at once).
    if (from_follower) {
      back_off(tp, s, code, false);
      return;
    }
    if (!s.answers.empty()) {
      // Past answers not handed out yet: handled once the position gets there.
      back_off(tp, s, kNetworkException, false);
      return;
    }
    if (reset_ == OffsetResetPolicy::none) {
      push_error(
          tp, s,
          std::make_exception_ptr(OffsetOutOfRangeError(
              tp, sent, fmt::format("offset {} is out of range for {} (OFFSET_OUT_OF_RANGE)", sent, to_string(tp)))));
      return;
    }
    s.position.reset();  // resolved with auto.offset.reset by the next round
    return;
  }
  if ((code == static_cast<std::int16_t>(ErrorCode::not_leader_or_follower) ||
       code == static_cast<std::int16_t>(ErrorCode::fenced_leader_epoch)) &&
      p.current_leader.leader_id >= 0 && p.current_leader.leader_epoch >= 0) {
    // KIP-951: the answer names the new leader; fetch from it next, no
    // Metadata round trip and no back-off (the client has not seen this
    // epoch fail).
    const FetchResponse::NodeEndpoint* endpoint = nullptr;
    for (auto& e : endpoints)
      if (e.node_id == p.current_leader.leader_id) endpoint = &e;
    if (cluster_.new_leader(tp, p.current_leader.leader_id, p.current_leader.leader_epoch, endpoint)) {
      s.not_before = {};
      return;
    }
  }
  if (fetch_waits_out(code) || is_retriable(code)) {
    // Leadership moved, a stale or future leader epoch, a recreated topic,
    // ...: refresh metadata and retry at the same position after a
    // back-off; only other retriable errors count against `retries`.
    refresh.push_back(tp.topic);
    back_off(tp, s, code, !fetch_waits_out(code));
    return;
  }
  push_error(tp, s,
             std::make_exception_ptr(
                 KafkaError(code, fmt::format("fetch from {} failed: {}", to_string(tp), error_name(code)))));
}

}  // namespace kwire::client
