// kwire transactions list|describe|describe-producers (see admin_cmd.hpp):
// the columns of Kafka's kafka-transactions tool, or JSON.
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "admin_cmd.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/kafka_client.hpp"

namespace kwire::tools {

using namespace kwire::client;

int cmd_transactions_list(const CommonOptions& common, const TransactionsArgs& args) {
  KafkaClient client(common.client_properties());
  TransactionFilters f;
  f.states = args.states;
  f.producer_ids = args.producer_ids;
  if (args.duration_ms) f.min_duration_ms = *args.duration_ms;
  f.id_pattern = args.pattern;
  const auto list = Admin(client).list_transactions(f);
  std::string out;
  if (args.json) {
    out = "[";
    for (std::size_t i = 0; i < list.size(); ++i)
      out += fmt::format("{}{{\"transactionalId\":{},\"coordinator\":{},\"producerId\":{},\"state\":{}}}", i ? "," : "",
                         json_str(list[i].transactional_id), list[i].coordinator_id, list[i].producer_id,
                         json_str(list[i].state));
    out += "]\n";
  } else {
    out = fmt::format("{:<40} {:<12} {:<12} {}\n", "TransactionalId", "Coordinator", "ProducerId", "TransactionState");
    for (auto& t : list)
      out += fmt::format("{:<40} {:<12} {:<12} {}\n", t.transactional_id, t.coordinator_id, t.producer_id, t.state);
  }
  write_stdout(out);
  return 0;
}

int cmd_transactions_describe(const CommonOptions& common, const TransactionsArgs& args) {
  KafkaClient client(common.client_properties());
  const auto d = Admin(client).describe_transaction(args.transactional_id);
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  // Since the transaction began (as kafka-transactions prints it, finished or not).
  const std::int64_t duration = d.transaction_start_time_ms >= 0 ? now_ms - d.transaction_start_time_ms : -1;
  std::string parts;
  for (std::size_t i = 0; i < d.partitions.size(); ++i)
    parts += fmt::format("{}{}-{}", i ? "," : "", d.partitions[i].topic, d.partitions[i].partition);
  std::string out;
  if (args.json) {
    out = fmt::format(
        "{{\"transactionalId\":{},\"coordinator\":{},\"producerId\":{},\"producerEpoch\":{},\"state\":{},"
        "\"transactionTimeoutMs\":{},\"transactionStartTimeMs\":{},\"transactionDurationMs\":{},\"partitions\":[",
        json_str(d.transactional_id), d.coordinator_id, d.producer_id, d.producer_epoch, json_str(d.state),
        d.transaction_timeout_ms, d.transaction_start_time_ms, duration);
    for (std::size_t i = 0; i < d.partitions.size(); ++i)
      out += fmt::format("{}{{\"topic\":{},\"partition\":{}}}", i ? "," : "", json_str(d.partitions[i].topic),
                         d.partitions[i].partition);
    out += "]}\n";
  } else {
    constexpr auto kRow = "{:<13} {:<30} {:<12} {:<13} {:<16} {:<20} {:<29} {:<21} {}\n";
    out = fmt::format(kRow, "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                      "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                      "TopicPartitions");
    out += fmt::format(kRow, d.coordinator_id, d.transactional_id, d.producer_id, d.producer_epoch, d.state,
                       d.transaction_timeout_ms,
                       d.transaction_start_time_ms >= 0 ? std::to_string(d.transaction_start_time_ms) : "None",
                       duration >= 0 ? std::to_string(duration) : "None", parts);
  }
  write_stdout(out);
  return 0;
}

int cmd_transactions_describe_producers(const CommonOptions& common, const TransactionsArgs& args) {
  KafkaClient client(common.client_properties());
  const auto producers = Admin(client).describe_producers({args.topic, args.partition});
  std::string out;
  if (args.json) {
    out = "[";
    for (std::size_t i = 0; i < producers.size(); ++i) {
      auto& p = producers[i];
      out += fmt::format(
          "{}{{\"producerId\":{},\"producerEpoch\":{},\"coordinatorEpoch\":{},\"lastSequence\":{},"
          "\"lastTimestamp\":{},\"currentTransactionStartOffset\":{}}}",
          i ? "," : "", p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence, p.last_timestamp,
          p.current_txn_start_offset);
    }
    out += "]\n";
  } else {
    out = fmt::format("{:<12} {:<14} {:<23} {:<13} {:<15} {}\n", "ProducerId", "ProducerEpoch",
                      "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset");
    for (auto& p : producers)
      out += fmt::format("{:<12} {:<14} {:<23} {:<13} {:<15} {}\n", p.producer_id, p.producer_epoch,
                         p.coordinator_epoch, p.last_sequence, p.last_timestamp,
                         p.current_txn_start_offset >= 0 ? std::to_string(p.current_txn_start_offset) : "None");
  }
  write_stdout(out);
  return 0;
}

}  // namespace kwire::tools
