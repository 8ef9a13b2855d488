// The idempotence and transaction rows of `kwire conformance`
// (conformance_txn.cpp).
#pragma once

#include <string>

#include "conformance_groups.hpp"

namespace kwire::tools {

struct TxnChecks {
  client::KafkaClient* client = nullptr;
  std::string prefix;  // transactional ids, groups and the scratch topic start with it
};

/// Adds the rows of InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
/// TxnOffsetCommit, EndTxn, DescribeTransactions, ListTransactions and
/// DescribeProducers. Creates and deletes the topic `<prefix>-txn`.
void run_txn_conformance(const TxnChecks& t, const RunApi& run_api);

}  // namespace kwire::tools
