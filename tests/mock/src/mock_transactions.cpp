#include "kwire/mock/mock_transactions.hpp"

#include <deque>
#include <mutex>

#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::mock {

using namespace kwire::protocol;

namespace {

constexpr auto code(ErrorCode e) { return static_cast<std::int16_t>(e); }

// Fields of a magic-2 batch header.
struct BatchHeader {
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t first_sequence = -1;
  std::int32_t last_sequence = -1;
  bool transactional = false;
};

BatchHeader header_of(ByteSpan b) {
  BatchHeader h;
  h.producer_id = static_cast<std::int64_t>(load_be64(b.data() + 43));
  h.producer_epoch = static_cast<std::int16_t>(load_be16(b.data() + 51));
  h.first_sequence = static_cast<std::int32_t>(load_be32(b.data() + 53));
  const auto delta = static_cast<std::int32_t>(load_be32(b.data() + 23));
  const std::int64_t last = static_cast<std::int64_t>(h.first_sequence) + delta;
  h.last_sequence = static_cast<std::int32_t>(last > 0x7fffffff ? last - 0x80000000LL : last);
  h.transactional = (load_be16(b.data() + 21) & 0x10) != 0;
  return h;
}

template <class Req>
Req request_of(const Bytes& payload, std::int16_t v) {
  Reader r{ByteSpan(payload)};
  Req req;
  RequestHeader h;
  decode_request(r, req, v, &h);
  return req;
}

}  // namespace

struct MockTransactions::State {
  std::mutex mu;
  bool v2 = false;
  std::int32_t coordinator = 1;
  std::map<std::int32_t, std::uint16_t> ports;
  std::map<std::int16_t, std::deque<std::int16_t>> errors;
  std::map<TopicPartition, std::deque<std::int16_t>> produce_errors;
  struct Cached {
    std::int32_t first = 0, last = 0;
    std::int64_t base = 0;
  };
  struct ProducerEntry {
    std::int16_t epoch = -1;
    std::int32_t last_sequence = -1;
    std::deque<Cached> recent;  // the last 5 batches
  };
  std::map<TopicPartition, std::map<std::int64_t, ProducerEntry>> producers;
  std::map<TopicPartition, std::vector<Written>> written;
  int duplicates = 0;
  int out_of_order = 0;
  bool duplicates_as_error = false;
  std::int64_t next_producer_id = 1000;
  struct Txn : Transaction {
    std::int32_t timeout_ms = 0;
    std::map<std::string, std::map<TopicPartition, std::int64_t>> pending_offsets;
  };
  std::map<std::string, Txn> txns;
  std::map<std::string, std::map<TopicPartition, std::int64_t>> committed;

  std::int16_t next_error(ApiKey api) {
    auto& q = errors[static_cast<std::int16_t>(api)];
    if (q.empty()) return 0;
    const auto e = q.front();
    q.pop_front();
    return e;
  }

  // The checks every coordinator call of a transaction makes; 0 or the error.
  std::int16_t check_txn(std::int32_t node, const std::string& id, std::int64_t pid, std::int16_t epoch, Txn*& out) {
    if (node != coordinator) return code(ErrorCode::not_coordinator);
    auto it = txns.find(id);
    if (it == txns.end() || it->second.producer_id != pid) return code(ErrorCode::invalid_producer_id_mapping);
    if (epoch < it->second.producer_epoch) return code(ErrorCode::producer_fenced);
    if (epoch > it->second.producer_epoch) return code(ErrorCode::invalid_producer_epoch);
    out = &it->second;
    return 0;
  }

  void begin(Txn& t) {
    if (t.state != "Ongoing") {
      t.state = "Ongoing";
      t.partitions.clear();
      t.groups.clear();
      t.pending_offsets.clear();
    }
  }

  void end(Txn& t, bool commit) {
    if (commit) {
      for (auto& [g, offs] : t.pending_offsets)
        for (auto& [tp, o] : offs) committed[g][tp] = o;
      ++t.commits;
    } else {
      ++t.aborts;
    }
    t.state = commit ? "CompleteCommit" : "CompleteAbort";
    t.pending_offsets.clear();
  }

  std::int16_t check_produce(std::int16_t version, const std::string& topic, std::int32_t partition, ByteSpan batch,
                             std::int64_t log_end, std::int64_t* duplicate_of) {
    const TopicPartition tp{topic, partition};
    if (auto& q = produce_errors[tp]; !q.empty()) {
      const auto e = q.front();
      q.pop_front();
      if (e) return e;  // 0: this batch goes through as usual
    }
    const BatchHeader h = header_of(batch);
    auto record = [&] {
      written[tp].push_back(
          {h.producer_id, h.producer_epoch, h.first_sequence, h.last_sequence, log_end, h.transactional});
    };
    if (h.producer_id < 0) {
      record();
      return 0;
    }
    if (h.transactional) {
      Txn* t = nullptr;
      for (auto& [id, x] : txns)
        if (x.producer_id == h.producer_id) t = &x;
      if (!t || h.producer_epoch < t->producer_epoch) return code(ErrorCode::invalid_producer_epoch);
      if (t->state != "Ongoing" || !t->partitions.count(tp)) {
        if (v2 && version >= 12) {
          begin(*t);
          t->partitions.insert(tp);
        } else {
          return code(ErrorCode::invalid_txn_state);
        }
      }
    }
    auto& producers_of = producers[tp];
    auto it = producers_of.find(h.producer_id);
    if (it != producers_of.end()) {
      auto& e = it->second;
      if (h.producer_epoch < e.epoch) return code(ErrorCode::invalid_producer_epoch);
      if (h.producer_epoch > e.epoch) {
        if (h.first_sequence != 0) {
          ++out_of_order;
          return code(ErrorCode::out_of_order_sequence_number);
        }
        e = ProducerEntry{};
      } else {
        for (auto& c : e.recent)
          if (c.first == h.first_sequence && c.last == h.last_sequence) {
            ++duplicates;
            if (duplicates_as_error) return code(ErrorCode::duplicate_sequence_number);
            *duplicate_of = c.base;
            return 0;
          }
        const bool next =
            e.last_sequence == 0x7fffffff ? h.first_sequence == 0 : h.first_sequence == e.last_sequence + 1;
        if (!next) {
          ++out_of_order;
          return code(ErrorCode::out_of_order_sequence_number);
        }
      }
    }
    auto& e = producers_of[h.producer_id];
    e.epoch = h.producer_epoch;
    e.last_sequence = h.last_sequence;
    e.recent.push_back({h.first_sequence, h.last_sequence, log_end});
    if (e.recent.size() > 5) e.recent.pop_front();
    record();
    return 0;
  }
};

MockTransactions::MockTransactions(MockCluster& cluster, bool v2) : st_(std::make_shared<State>()) {
  st_->v2 = v2;
  for (auto n : cluster.node_ids()) st_->ports[n] = cluster.port(n);
  if (v2) cluster.set_finalized_feature("transaction.version", 2);
  std::shared_ptr<State> st = st_;
  cluster.set_produce_check([st](std::int32_t, std::int16_t version, const std::optional<std::string>&,
                                 const std::string& topic, std::int32_t partition, ByteSpan batch, std::int64_t log_end,
                                 std::int64_t* duplicate_of) {
    std::lock_guard lock(st->mu);
    return st->check_produce(version, topic, partition, batch, log_end, duplicate_of);
  });
  cluster.set_handler(ApiKey::find_coordinator, 0, 6,
                      [st](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                        std::lock_guard lock(st->mu);
                        auto req = request_of<FindCoordinatorRequest>(p, v);
                        FindCoordinatorResponse r;
                        const auto e = st->next_error(ApiKey::find_coordinator);
                        const auto node = st->coordinator;
                        const auto port = static_cast<std::int32_t>(st->ports[node]);
                        r.error_code = e;
                        r.node_id = node;
                        r.host = "127.0.0.1";
                        r.port = port;
                        for (auto& k : req.coordinator_keys)
                          r.coordinators.push_back({k, node, "127.0.0.1", port, e, std::nullopt, {}});
                        return encode_response_frame(r, v, corr);
                      });
  cluster.set_handler(
      ApiKey::init_producer_id, 0, 5,
      [st](std::int32_t node, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(st->mu);
        auto req = request_of<InitProducerIdRequest>(p, v);
        InitProducerIdResponse r;
        r.error_code = st->next_error(ApiKey::init_producer_id);
        if (r.error_code) return encode_response_frame(r, v, corr);
        if (!req.transactional_id) {
          r.producer_id = st->next_producer_id++;
          r.producer_epoch = 0;
          return encode_response_frame(r, v, corr);
        }
        if (node != st->coordinator) {
          r.error_code = code(ErrorCode::not_coordinator);
          return encode_response_frame(r, v, corr);
        }
        auto it = st->txns.find(*req.transactional_id);
        if (it == st->txns.end()) {
          State::Txn t;
          t.producer_id = st->next_producer_id++;
          t.producer_epoch = 0;
          t.state = "Empty";
          it = st->txns.emplace(*req.transactional_id, t).first;
        } else {
          auto& t = it->second;
          if (req.producer_id >= 0 && (req.producer_id != t.producer_id || req.producer_epoch != t.producer_epoch)) {
            r.error_code = code(v >= 4 ? ErrorCode::producer_fenced : ErrorCode::invalid_producer_epoch);
            return encode_response_frame(r, v, corr);
          }
          if (t.state == "Ongoing") st->end(t, false);  // fences the older producer's transaction
          if (t.producer_epoch >= 0x7ffe) {
            t.producer_id = st->next_producer_id++;
            t.producer_epoch = 0;
          } else {
            ++t.producer_epoch;
          }
          t.state = "Empty";
          t.partitions.clear();
          t.groups.clear();
        }
        it->second.timeout_ms = req.transaction_timeout_ms;
        r.producer_id = it->second.producer_id;
        r.producer_epoch = it->second.producer_epoch;
        return encode_response_frame(r, v, corr);
      });
  cluster.set_handler(
      ApiKey::add_partitions_to_txn, 0, 5,
      [st](std::int32_t node, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(st->mu);
        auto req = request_of<AddPartitionsToTxnRequest>(p, v);
        std::int16_t e = st->next_error(ApiKey::add_partitions_to_txn);
        State::Txn* t = nullptr;
        if (!e)
          e = st->check_txn(node, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                            req.v3_and_below_producer_epoch, t);
        if (!e && t) {
          st->begin(*t);
          for (auto& topic : req.v3_and_below_topics)
            for (auto part : topic.partitions) t->partitions.insert({topic.name, part});
        }
        AddPartitionsToTxnResponse r;
        for (auto& topic : req.v3_and_below_topics) {
          AddPartitionsToTxnResponse::TopicResult tr;
          tr.name = topic.name;
          for (auto part : topic.partitions) tr.results_by_partition.push_back({part, e, {}});
          r.results_by_topic_v3_and_below.push_back(std::move(tr));
        }
        return encode_response_frame(r, v, corr);
      });
  cluster.set_handler(
      ApiKey::add_offsets_to_txn, 0, 4,
      [st](std::int32_t node, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(st->mu);
        auto req = request_of<AddOffsetsToTxnRequest>(p, v);
        AddOffsetsToTxnResponse r;
        r.error_code = st->next_error(ApiKey::add_offsets_to_txn);
        State::Txn* t = nullptr;
        if (!r.error_code)
          r.error_code = st->check_txn(node, req.transactional_id, req.producer_id, req.producer_epoch, t);
        if (!r.error_code && t) {
          st->begin(*t);
          t->groups.insert(req.group_id);
        }
        return encode_response_frame(r, v, corr);
      });
  cluster.set_handler(
      ApiKey::txn_offset_commit, 0, v2 ? 5 : 4,
      [st](std::int32_t node, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(st->mu);
        auto req = request_of<TxnOffsetCommitRequest>(p, v);
        std::int16_t e = st->next_error(ApiKey::txn_offset_commit);
        State::Txn* t = nullptr;
        if (!e) e = st->check_txn(node, req.transactional_id, req.producer_id, req.producer_epoch, t);
        if (!e && t) {
          if (v >= 5) {
            st->begin(*t);
            t->groups.insert(req.group_id);
          } else if (t->state != "Ongoing" || !t->groups.count(req.group_id)) {
            e = code(ErrorCode::invalid_txn_state);
          }
        }
        TxnOffsetCommitResponse r;
        for (auto& topic : req.topics) {
          TxnOffsetCommitResponse::Topic rt;
          rt.name = topic.name;
          for (auto& part : topic.partitions) {
            rt.partitions.push_back({part.partition_index, e, {}});
            if (!e) t->pending_offsets[req.group_id][{topic.name, part.partition_index}] = part.committed_offset;
          }
          r.topics.push_back(std::move(rt));
        }
        return encode_response_frame(r, v, corr);
      });
  cluster.set_handler(
      ApiKey::end_txn, 0, v2 ? 5 : 4,
      [st](std::int32_t node, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(st->mu);
        auto req = request_of<EndTxnRequest>(p, v);
        EndTxnResponse r;
        r.error_code = st->next_error(ApiKey::end_txn);
        State::Txn* t = nullptr;
        if (!r.error_code)
          r.error_code = st->check_txn(node, req.transactional_id, req.producer_id, req.producer_epoch, t);
        if (!r.error_code && t) {
          const std::string done = req.committed ? "CompleteCommit" : "CompleteAbort";
          if (t->state == "Ongoing") st->end(*t, req.committed);
          else if (t->state != done) r.error_code = code(ErrorCode::invalid_txn_state);
          if (!r.error_code && v >= 5) {
            ++t->producer_epoch;  // transactions v2: every end bumps the epoch
            r.producer_id = t->producer_id;
            r.producer_epoch = t->producer_epoch;
          }
        }
        return encode_response_frame(r, v, corr);
      });
}

MockTransactions::~MockTransactions() = default;

void MockTransactions::set_coordinator(std::int32_t node) {
  std::lock_guard lock(st_->mu);
  st_->coordinator = node;
}

void MockTransactions::fail_next(ApiKey api, ErrorCode c, int times) {
  std::lock_guard lock(st_->mu);
  for (int i = 0; i < times; ++i) st_->errors[static_cast<std::int16_t>(api)].push_back(code(c));
}

void MockTransactions::fail_produce(const std::string& topic, std::int32_t partition, ErrorCode c, int times) {
  std::lock_guard lock(st_->mu);
  for (int i = 0; i < times; ++i) st_->produce_errors[{topic, partition}].push_back(code(c));
}

void MockTransactions::forget_producers(const std::string& topic, std::int32_t partition) {
  std::lock_guard lock(st_->mu);
  st_->producers.erase({topic, partition});
}

void MockTransactions::duplicates_as_error(bool on) {
  std::lock_guard lock(st_->mu);
  st_->duplicates_as_error = on;
}

std::vector<MockTransactions::Written> MockTransactions::written(const std::string& topic,
                                                                 std::int32_t partition) const {
  std::lock_guard lock(st_->mu);
  auto it = st_->written.find({topic, partition});
  return it == st_->written.end() ? std::vector<Written>{} : it->second;
}

int MockTransactions::duplicates() const {
  std::lock_guard lock(st_->mu);
  return st_->duplicates;
}

int MockTransactions::out_of_order() const {
  std::lock_guard lock(st_->mu);
  return st_->out_of_order;
}

std::optional<MockTransactions::Transaction> MockTransactions::transaction(const std::string& id) const {
  std::lock_guard lock(st_->mu);
  auto it = st_->txns.find(id);
  if (it == st_->txns.end()) return std::nullopt;
  return static_cast<const Transaction&>(it->second);
}

std::map<TopicPartition, std::int64_t> MockTransactions::committed_offsets(const std::string& group) const {
  std::lock_guard lock(st_->mu);
  auto it = st_->committed.find(group);
  return it == st_->committed.end() ? std::map<TopicPartition, std::int64_t>{} : it->second;
}

}  // namespace kwire::mock
