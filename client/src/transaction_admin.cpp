// Admin's transaction calls (see admin.hpp): ListTransactions on every
// broker, DescribeTransactions at the transactional id's coordinator,
// DescribeProducers at a partition's leader.
#include <algorithm>

#include <fmt/format.h>

#include "coordinators.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "retry_loop.hpp"

namespace kwire::client {

using namespace kwire::protocol;

std::vector<TransactionListing> Admin::list_transactions(const TransactionFilters& filters) {
  ListTransactionsRequest req;
  req.state_filters = filters.states;
  req.producer_id_filters = filters.producer_ids;
  req.duration_filter = filters.min_duration_ms;
  req.transactional_id_pattern = filters.id_pattern;
  auto md = client_.metadata(std::vector<std::string>{});
  std::vector<TransactionListing> out;
  for (auto& b : md.brokers) {
    Connection& c = client_.broker(b.node_id);
    const std::int16_t v = c.version_for<ListTransactionsRequest>();
    if (v < 1 && filters.min_duration_ms >= 0)
      throw UnsupportedVersionError(
          fmt::format("broker {} cannot filter transactions by duration (ListTransactions v1, Kafka 3.8+)", b.node_id));
    if (v < 2 && filters.id_pattern)
      throw UnsupportedVersionError(fmt::format(
          "broker {} cannot filter transactions by id pattern (ListTransactions v2, Kafka 4.1+)", b.node_id));
    auto r = c.receive<ListTransactionsResponse>(c.send(req, v), v, client_.default_deadline()).body;
    if (r.error_code)
      throw KafkaError(r.error_code,
                       fmt::format("ListTransactions on broker {}: {}", b.node_id, error_name(r.error_code)));
    if (!r.unknown_state_filters.empty())
      throw ConfigError(
          fmt::format("unknown transaction state '{}' (states: Empty, Ongoing, PrepareCommit, "
                      "PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence)",
                      r.unknown_state_filters.front()));
    for (auto& t : r.transaction_states)
      out.push_back({t.transactional_id, t.producer_id, t.transaction_state, b.node_id});
  }
  std::sort(out.begin(), out.end(), [](const TransactionListing& a, const TransactionListing& b) {
    return a.transactional_id < b.transactional_id;
  });
  return out;
}

TransactionDescription Admin::describe_transaction(const std::string& transactional_id) {
  TransactionDescription out;
  out.transactional_id = transactional_id;
  RetryLoop loop(client_.config(), Clock::now() + std::chrono::milliseconds(client_.config().default_api_timeout_ms),
                 fmt::format("DescribeTransactions for {}", transactional_id));
  call_coordinator(client_, *coordinators_, CoordinatorType::transaction, transactional_id, loop, [&](Connection& c) {
    DescribeTransactionsRequest req;
    req.transactional_ids = {transactional_id};
    const std::int16_t v = c.version_for<DescribeTransactionsRequest>();
    auto r = c.receive<DescribeTransactionsResponse>(c.send(req, v), v, loop.request_deadline()).body;
    if (r.transaction_states.size() != 1)
      throw MalformedResponseError("DescribeTransactions answered for another number of transactional ids");
    auto& t = r.transaction_states[0];
    if (coordinator_retriable(t.error_code)) return CoordinatorReply::retry(t.error_code);
    if (t.error_code)
      throw KafkaError(t.error_code,
                       fmt::format("DescribeTransactions for {}: {}", transactional_id, error_name(t.error_code)));
    out.coordinator_id = *coordinators_->cached(CoordinatorType::transaction, transactional_id);
    out.state = t.transaction_state;
    out.producer_id = t.producer_id;
    out.producer_epoch = t.producer_epoch;
    out.transaction_timeout_ms = t.transaction_timeout_ms;
    out.transaction_start_time_ms = t.transaction_start_time_ms;
    out.partitions.clear();
    for (auto& td : t.topics)
      for (auto p : td.partitions) out.partitions.push_back({td.topic, p});
    std::sort(out.partitions.begin(), out.partitions.end());
    return CoordinatorReply::done();
  });
  return out;
}

std::vector<ProducerStateDescription> Admin::describe_producers(const TopicPartition& partition) {
  DescribeProducersRequest req;
  req.topics.push_back({partition.topic, {partition.partition}, {}});
  Connection& c = client_.leader_for(partition);
  const std::int16_t v = c.version_for<DescribeProducersRequest>();
  auto r = c.receive<DescribeProducersResponse>(c.send(req, v), v, client_.default_deadline()).body;
  for (auto& t : r.topics)
    for (auto& p : t.partitions) {
      if (t.name != partition.topic || p.partition_index != partition.partition) continue;
      if (p.error_code)
        throw KafkaError(p.error_code,
                         fmt::format("DescribeProducers for {}-{}: {}{}", partition.topic, partition.partition,
                                     error_name(p.error_code), p.error_message ? ": " + *p.error_message : ""));
      std::vector<ProducerStateDescription> out;
      for (auto& s : p.active_producers)
        out.push_back({s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
                       s.current_txn_start_offset});
      std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.producer_id < b.producer_id; });
      return out;
    }
  throw MalformedResponseError(
      fmt::format("DescribeProducers answered without partition {}-{}", partition.topic, partition.partition));
}

}  // namespace kwire::client
