// Idempotence and transaction rows of `kwire conformance`. Each version is
// checked by what the coordinators do with it: InitProducerId hands out an id
// and bumps the epoch when asked with the current one (v3+, KIP-360);
// partitions and offsets added to a transaction are committed or aborted by
// EndTxn; TxnOffsetCommit's offset reads back once committed; EndTxn v5
// answers the next epoch (transactions v2); the admin calls show the open
// transaction and its producer.
#include "conformance_txn.hpp"
#include "conformance_exchange.hpp"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using client::Connection;

namespace {

constexpr std::int32_t kTxnTimeoutMs = 60000;

struct Producer {
  std::string id;
  std::int64_t pid = -1;
  std::int16_t epoch = -1;
  std::int32_t sequence = 0;
};

struct Checker {
  const TxnChecks& t;
  std::string topic;
  Uuid topic_id;     // the topic's id (TxnOffsetCommit v6 names topics by id only)
  bool tv2 = false;  // the cluster finalized transaction.version >= 2

  Connection& coordinator(std::int8_t key_type, const std::string& key) {
    return conformance_coordinator(*t.client, key_type, key);
  }
  Connection& txn_coordinator(const std::string& id) { return coordinator(1, id); }

  template <class Resp, class Req>
  Resp call(Connection& c, const Req& req, std::int16_t v, std::string& size_error) {
    return checked_exchange<Resp>(c, req, v, t.client->default_deadline(), size_error);
  }
  // A call whose answer may be CONCURRENT_TRANSACTIONS or
  // COORDINATOR_LOAD_IN_PROGRESS while an earlier transaction of the same id
  // completes: asked again (at most 10 s).
  template <class Resp, class Req, class Code>
  Resp call_settled(Connection& c, const Req& req, std::int16_t v, std::string& size_error, Code code_of) {
    for (int attempt = 0;; ++attempt) {
      Resp r = call<Resp>(c, req, v, size_error);
      const std::int16_t code = code_of(r);
      if ((code != static_cast<std::int16_t>(ErrorCode::concurrent_transactions) &&
           code != static_cast<std::int16_t>(ErrorCode::coordinator_load_in_progress)) ||
          attempt >= 200)
        return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::string init(Producer& p, std::int16_t v, bool bump = false) {
    InitProducerIdRequest req;
    req.transactional_id = p.id;
    req.transaction_timeout_ms = kTxnTimeoutMs;
    if (bump) {
      req.producer_id = p.pid;
      req.producer_epoch = p.epoch;
    }
    std::string err;
    auto r = call_settled<InitProducerIdResponse>(txn_coordinator(p.id), req, v, err,
                                                  [](const InitProducerIdResponse& x) { return x.error_code; });
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("InitProducerId returned {}", error_name(r.error_code));
    if (r.producer_id < 0 || r.producer_epoch < 0)
      return fmt::format("InitProducerId gave producer {} epoch {}", r.producer_id, r.producer_epoch);
    p.pid = r.producer_id;
    p.epoch = r.producer_epoch;
    p.sequence = 0;
    return {};
  }

  std::string add_partition(Producer& p, std::int16_t v) {
    AddPartitionsToTxnRequest req;
    AddPartitionsToTxnRequest::Topic topic_entry{topic, {0}, {}};
    if (v >= 4) {
      req.transactions = {{p.id, p.pid, p.epoch, false, {topic_entry}, {}}};
    } else {
      req.v3_and_below_transactional_id = p.id;
      req.v3_and_below_producer_id = p.pid;
      req.v3_and_below_producer_epoch = p.epoch;
      req.v3_and_below_topics = {topic_entry};
    }
    std::string err;
    auto r = call_settled<AddPartitionsToTxnResponse>(
        txn_coordinator(p.id), req, v, err, [v](const AddPartitionsToTxnResponse& x) -> std::int16_t {
          const auto& topics = v >= 4 ? (x.results_by_transaction.empty() ? x.results_by_topic_v3_and_below
                                                                          : x.results_by_transaction[0].topic_results)
                                      : x.results_by_topic_v3_and_below;
          if (x.error_code) return x.error_code;
          for (auto& tr : topics)
            for (auto& pr : tr.results_by_partition)
              if (pr.partition_error_code) return pr.partition_error_code;
          return 0;
        });
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("AddPartitionsToTxn returned {}", error_name(r.error_code));
    const auto& topics = v >= 4 ? (r.results_by_transaction.size() == 1 ? r.results_by_transaction[0].topic_results
                                                                        : r.results_by_topic_v3_and_below)
                                : r.results_by_topic_v3_and_below;
    if (topics.size() != 1 || topics[0].name != topic || topics[0].results_by_partition.size() != 1)
      return "wrong shape";
    const auto& pr = topics[0].results_by_partition[0];
    if (pr.partition_error_code)
      return fmt::format("partition {} returned {}", pr.partition_index, error_name(pr.partition_error_code));
    return {};
  }

  // Writes 2 transactional records to partition 0 with Produce v `produce_v`.
  std::string produce(Producer& p, std::int16_t produce_v) {
    std::vector<ProducerRecord> recs(2);
    for (std::size_t i = 0; i < recs.size(); ++i) {
      std::string v = fmt::format("{}-{}", p.id, p.sequence + static_cast<std::int32_t>(i));
      recs[i].value = Bytes(v.begin(), v.end());
    }
    BatchOptions o;
    o.producer_id = p.pid;
    o.producer_epoch = p.epoch;
    o.base_sequence = p.sequence;
    o.transactional = true;
    Bytes batch;
    encode_record_batch(recs, o, batch);
    ProduceRequest req;
    req.transactional_id = p.id;
    req.acks = -1;
    req.timeout_ms = 10000;
    ProduceRequest::TopicProduceData td;
    td.name = topic;
    ProduceRequest::PartitionProduceData pd;
    pd.index = 0;
    pd.records.data = ByteSpan(batch);
    td.partition_data.push_back(pd);
    req.topic_data.push_back(td);
    Connection& leader = t.client->leader_for(client::TopicPartition{topic, 0});
    std::string err;
    auto r = call<ProduceResponse>(leader, req, produce_v, err);
    if (!err.empty()) return err;
    if (r.responses.size() != 1 || r.responses[0].partition_responses.size() != 1) return "Produce: wrong shape";
    const auto code = r.responses[0].partition_responses[0].error_code;
    if (code) return fmt::format("transactional Produce v{} returned {}", produce_v, error_name(code));
    p.sequence += 2;
    return {};
  }

  std::string end(Producer& p, std::int16_t v, bool commit, EndTxnResponse* out = nullptr) {
    EndTxnRequest req{p.id, p.pid, p.epoch, commit, {}};
    std::string err;
    auto r = call_settled<EndTxnResponse>(txn_coordinator(p.id), req, v, err,
                                          [](const EndTxnResponse& x) { return x.error_code; });
    if (!err.empty()) return err;
    if (r.error_code)
      return fmt::format("EndTxn ({}) returned {}", commit ? "commit" : "abort", error_name(r.error_code));
    if (out) *out = r;
    return {};
  }

  std::int16_t max_of(Connection& c, std::int16_t api, std::int16_t ours) {
    auto it = c.broker_versions().find(api);
    if (it == c.broker_versions().end()) return -1;
    return std::min(it->second.max, ours);
  }
  template <class M>
  std::int16_t classic_max(Connection& c, std::int16_t limit) {
    return std::min<std::int16_t>(c.version_for<M>(), limit);
  }

  // An open transaction with two records on partition 0 (the classic way).
  std::string open(Producer& p) {
    auto& coord = txn_coordinator(p.id);
    std::string e = init(p, coord.version_for<InitProducerIdRequest>());
    if (e.empty()) e = add_partition(p, classic_max<AddPartitionsToTxnRequest>(coord, 3));
    if (e.empty())
      e = produce(p, classic_max<ProduceRequest>(t.client->leader_for(client::TopicPartition{topic, 0}), 11));
    return e;
  }
  std::string abort_classic(Producer& p) { return end(p, classic_max<EndTxnRequest>(txn_coordinator(p.id), 4), false); }

  std::string id(const char* what, std::int16_t v) const { return fmt::format("{}-{}-v{}", t.prefix, what, v); }

  std::string check_init(std::int16_t v) {
    Producer p{id("init", v)};
    if (auto e = init(p, v); !e.empty()) return e;
    if (v >= 3) {
      const std::int16_t first = p.epoch;
      if (auto e = init(p, v, true); !e.empty()) return "bumping the epoch: " + e;
      if (p.epoch != first + 1) return fmt::format("epoch {} after a bump from {}", p.epoch, first);
    }
    // An idempotent producer (no transactional id) asks any broker.
    InitProducerIdRequest req;
    req.transaction_timeout_ms = kTxnTimeoutMs;
    std::string err;
    auto r = call<InitProducerIdResponse>(t.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("idempotent InitProducerId returned {}", error_name(r.error_code));
    if (r.producer_id < 0) return "idempotent InitProducerId gave no producer id";
    return {};
  }

  std::string check_add_partitions(std::int16_t v) {
    Producer p{id("apt", v)};
    auto& coord = txn_coordinator(p.id);
    if (auto e = init(p, coord.version_for<InitProducerIdRequest>()); !e.empty()) return "setup: " + e;
    if (auto e = add_partition(p, v); !e.empty()) return e;
    if (auto e = produce(p, classic_max<ProduceRequest>(t.client->leader_for(client::TopicPartition{topic, 0}), 11));
        !e.empty())
      return e;
    return abort_classic(p);
  }

  std::string check_add_offsets(std::int16_t v) {
    Producer p{id("aot", v)};
    auto& coord = txn_coordinator(p.id);
    if (auto e = init(p, coord.version_for<InitProducerIdRequest>()); !e.empty()) return "setup: " + e;
    AddOffsetsToTxnRequest req{p.id, p.pid, p.epoch, id("g-aot", v), {}};
    std::string err;
    auto r = call_settled<AddOffsetsToTxnResponse>(coord, req, v, err,
                                                   [](const AddOffsetsToTxnResponse& x) { return x.error_code; });
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("AddOffsetsToTxn returned {}", error_name(r.error_code));
    return abort_classic(p);
  }

  // Commits offset 2 of partition 0 for a group inside a transaction, then
  // reads it back (require_stable: only once the commit marker is written).
  std::string check_txn_offset_commit(std::int16_t v) {
    const bool v2_flow = v >= 5;
    if (v2_flow && !tv2) return "transaction.version is not 2: TxnOffsetCommit v5 is refused";
    Producer p{id("toc", v)};
    const std::string group = id("g-toc", v);
    auto& coord = txn_coordinator(p.id);
    if (auto e = init(p, coord.version_for<InitProducerIdRequest>()); !e.empty()) return "setup: " + e;
    if (!v2_flow) {
      AddOffsetsToTxnRequest add{p.id, p.pid, p.epoch, group, {}};
      std::string err;
      auto r = call_settled<AddOffsetsToTxnResponse>(coord, add, classic_max<AddOffsetsToTxnRequest>(coord, 4), err,
                                                     [](const AddOffsetsToTxnResponse& x) { return x.error_code; });
      if (r.error_code) return fmt::format("setup: AddOffsetsToTxn returned {}", error_name(r.error_code));
    }
    TxnOffsetCommitRequest req;
    req.transactional_id = p.id;
    req.group_id = group;
    req.producer_id = p.pid;
    req.producer_epoch = p.epoch;
    TxnOffsetCommitRequest::Partition part;
    part.partition_index = 0;
    part.committed_offset = 2;
    part.committed_metadata = std::string("kwire");
    req.topics = {{topic, {part}, {}}};
    if (v >= 6) req.topics[0].topic_id = topic_id;
    Connection& gc = coordinator(0, group);
    std::string err;
    auto r = call_settled<TxnOffsetCommitResponse>(gc, req, v, err, [](const TxnOffsetCommitResponse& x) {
      return x.topics.empty() || x.topics[0].partitions.empty() ? std::int16_t{0}
                                                                : x.topics[0].partitions[0].error_code;
    });
    if (!err.empty()) return err;
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return "wrong shape";
    if (v >= 6 && r.topics[0].topic_id != topic_id) return "the answer names another topic id";
    if (auto code = r.topics[0].partitions[0].error_code) return fmt::format("partition returned {}", error_name(code));
    const std::int16_t end_v = v2_flow ? coord.version_for<EndTxnRequest>() : classic_max<EndTxnRequest>(coord, 4);
    if (auto e = end(p, end_v, true); !e.empty()) return e;
    for (int attempt = 0;; ++attempt) {
      OffsetFetchRequest f;
      const std::int16_t fv = gc.version_for<OffsetFetchRequest>();
      std::vector<OffsetFetchRequest::OffsetFetchRequestTopic> topics{{topic, {0}, {}}};
      if (fv >= 8) f.groups = {{group, std::nullopt, -1, topics, {}}};
      else {
        f.group_id = group;
        f.topics = topics;
      }
      f.require_stable = true;
      std::string ferr;
      auto fr = call<OffsetFetchResponse>(gc, f, fv, ferr);
      const auto& ts = fv >= 8 ? (fr.groups.empty() ? fr.topics : fr.groups[0].topics) : fr.topics;
      std::int16_t code = fv >= 8 && !fr.groups.empty() ? fr.groups[0].error_code : fr.error_code;
      std::int64_t offset = -1;
      if (!ts.empty() && !ts[0].partitions.empty()) {
        offset = ts[0].partitions[0].committed_offset;
        if (!code) code = ts[0].partitions[0].error_code;
      }
      if (code == static_cast<std::int16_t>(ErrorCode::unstable_offset_commit) && attempt < 100) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (code) return fmt::format("OffsetFetch after the commit returned {}", error_name(code));
      if (offset != 2) return fmt::format("committed offset {} after the commit instead of 2", offset);
      return {};
    }
  }

  std::string check_end_txn(std::int16_t v) {
    Producer p{id("end", v)};
    auto& coord = txn_coordinator(p.id);
    if (v <= 4) {
      if (auto e = open(p); !e.empty()) return "setup: " + e;
      return end(p, v, true);
    }
    if (!tv2) return "transaction.version is not 2: EndTxn v5 is refused";
    // Transactions v2: Produce v12+ adds the partition itself; the end bumps the epoch.
    if (auto e = init(p, coord.version_for<InitProducerIdRequest>()); !e.empty()) return "setup: " + e;
    if (auto e =
            produce(p, std::min<std::int16_t>(
                           t.client->leader_for(client::TopicPartition{topic, 0}).version_for<ProduceRequest>(), 12));
        !e.empty())
      return "Produce v12 without AddPartitionsToTxn: " + e;
    EndTxnResponse r;
    if (auto e = end(p, v, true, &r); !e.empty()) return e;
    if (r.producer_id != p.pid || r.producer_epoch != p.epoch + 1)
      return fmt::format("EndTxn v5 answered producer {} epoch {} after {} epoch {}", r.producer_id, r.producer_epoch,
                         p.pid, p.epoch);
    return {};
  }

  std::string check_describe_transactions(std::int16_t v) {
    Producer p{id("desc", v)};
    if (auto e = open(p); !e.empty()) return "setup: " + e;
    DescribeTransactionsRequest req;
    req.transactional_ids = {p.id};
    std::string err;
    auto r = call<DescribeTransactionsResponse>(txn_coordinator(p.id), req, v, err);
    std::string res = err;
    if (res.empty()) {
      if (r.transaction_states.size() != 1) res = "wrong shape";
      else {
        auto& s = r.transaction_states[0];
        if (s.error_code) res = fmt::format("returned {}", error_name(s.error_code));
        else if (s.transactional_id != p.id || s.producer_id != p.pid || s.producer_epoch != p.epoch)
          res = fmt::format("described {} producer {} epoch {}", s.transactional_id, s.producer_id, s.producer_epoch);
        else if (s.transaction_state != "Ongoing")
          res = fmt::format("state {} instead of Ongoing", s.transaction_state);
        else if (s.transaction_timeout_ms != kTxnTimeoutMs)
          res = fmt::format("timeout {} instead of {}", s.transaction_timeout_ms, kTxnTimeoutMs);
        else if (s.topics.size() != 1 || s.topics[0].topic != topic || s.topics[0].partitions != std::vector<int>{0})
          res = "the transaction does not list partition 0 of the topic";
      }
    }
    if (auto e = abort_classic(p); !e.empty() && res.empty()) res = "cleanup: " + e;
    return res;
  }

  std::string check_list_transactions(std::int16_t v) {
    Producer p{id("list", v)};
    if (auto e = open(p); !e.empty()) return "setup: " + e;
    ListTransactionsRequest req;
    req.state_filters = {"Ongoing", "NoSuchState"};
    if (v >= 1) req.duration_filter = 0;
    if (v >= 2) req.transactional_id_pattern = t.prefix + "-list-.*";
    std::string err;
    auto r = call<ListTransactionsResponse>(txn_coordinator(p.id), req, v, err);
    std::string res = err;
    if (res.empty()) {
      bool found = false;
      for (auto& s : r.transaction_states) {
        if (s.transactional_id == p.id) found = s.producer_id == p.pid && s.transaction_state == "Ongoing";
        if (v >= 2 && s.transactional_id.rfind(t.prefix + "-list-", 0) != 0)
          res = fmt::format("{} listed despite the id pattern", s.transactional_id);
      }
      if (r.error_code) res = fmt::format("returned {}", error_name(r.error_code));
      else if (r.unknown_state_filters != std::vector<std::string>{"NoSuchState"})
        res = "the unknown state filter was not reported";
      else if (!found && res.empty()) res = fmt::format("the open transaction {} is not listed as Ongoing", p.id);
    }
    if (auto e = abort_classic(p); !e.empty() && res.empty()) res = "cleanup: " + e;
    return res;
  }

  std::string check_describe_producers(std::int16_t v) {
    Producer p{id("prod", v)};
    if (auto e = open(p); !e.empty()) return "setup: " + e;
    DescribeProducersRequest req;
    req.topics = {{topic, {0}, {}}};
    std::string err;
    auto r = call<DescribeProducersResponse>(t.client->leader_for(client::TopicPartition{topic, 0}), req, v, err);
    std::string res = err;
    if (res.empty()) {
      if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) res = "wrong shape";
      else {
        auto& part = r.topics[0].partitions[0];
        bool found = false;
        for (auto& s : part.active_producers)
          if (s.producer_id == p.pid)
            found = s.producer_epoch == p.epoch && s.last_sequence == p.sequence - 1 && s.current_txn_start_offset >= 0;
        if (part.error_code) res = fmt::format("returned {}", error_name(part.error_code));
        else if (!found)
          res = fmt::format("producer {} (epoch {}, last sequence {}, open transaction) not described", p.pid, p.epoch,
                            p.sequence - 1);
      }
    }
    if (auto e = abort_classic(p); !e.empty() && res.empty()) res = "cleanup: " + e;
    return res;
  }
};

template <class M>
ConformanceRow row_of() {
  return declared_row<M>();
}

}  // namespace

void run_txn_conformance(const TxnChecks& t, const RunApi& run_api) {
  Checker c{t, t.prefix + "-txn", {}};
  t.client->create_topics({{c.topic, 1, 1, {}}});
  {
    const auto md = t.client->metadata(std::vector<std::string>{c.topic});
    if (const auto* tm = md.topic(c.topic)) c.topic_id = tm->topic_id;
  }
  {
    Connection& any = t.client->any_connection();
    auto it = any.finalized_features().find("transaction.version");
    c.tv2 = it != any.finalized_features().end() && it->second >= 2;
  }
  run_api(row_of<InitProducerIdRequest>(), [&](std::int16_t v) { return c.check_init(v); });
  run_api(row_of<AddPartitionsToTxnRequest>(), [&](std::int16_t v) { return c.check_add_partitions(v); });
  run_api(row_of<AddOffsetsToTxnRequest>(), [&](std::int16_t v) { return c.check_add_offsets(v); });
  run_api(row_of<TxnOffsetCommitRequest>(), [&](std::int16_t v) { return c.check_txn_offset_commit(v); });
  run_api(row_of<EndTxnRequest>(), [&](std::int16_t v) { return c.check_end_txn(v); });
  run_api(row_of<DescribeTransactionsRequest>(), [&](std::int16_t v) { return c.check_describe_transactions(v); });
  run_api(row_of<ListTransactionsRequest>(), [&](std::int16_t v) { return c.check_list_transactions(v); });
  run_api(row_of<DescribeProducersRequest>(), [&](std::int16_t v) { return c.check_describe_producers(v); });
  try {
    t.client->delete_topics({c.topic});
  } catch (const std::exception&) {
  }
}

}  // namespace kwire::tools
