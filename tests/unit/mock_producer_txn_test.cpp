// The transactional producer on the mock cluster, against a transaction
// coordinator kept as a broker keeps it (MockTransactions), with the classic
// protocol (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4) and with
// transactions v2 (KIP-890: Produce v12 adds the partition, EndTxn v5 hands
// out the next epoch): commit and abort, records dropped by an abort,
// offsets committed with the transaction only, retriable coordinator
// answers, a coordinator that moves, fencing by a newer producer of the
// id, a produce error that makes the transaction abortable, records and
// close() right after a coordinator call, and calls in the wrong state.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/mock/mock_transactions.hpp"
#include "mock_consumer_support.hpp"

using namespace kwire::client;
using namespace std::chrono_literals;
using kwire::mock::MockCluster;
using kwire::mock::MockTransactions;
using kwire::mock_support::Props;
using kwire::mock_support::props;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;

namespace {

constexpr std::int16_t code(ErrorCode e) { return static_cast<std::int16_t>(e); }

ProducerMessage message(const std::string& topic, std::int32_t partition, const std::string& value) {
  ProducerMessage m;
  m.topic = topic;
  m.partition = partition;
  m.value = kwire::protocol::Bytes(value.begin(), value.end());
  return m;
}

// A transactional producer with fast retries and a bounded wait for every call.
Props txn_props(const MockCluster& c, const std::string& id, const Props& extra = {}) {
  Props p{{"transactional.id", id}, {"retry.backoff.ms", "10"}, {"linger.ms", "0"}, {"max.block.ms", "10000"}};
  for (auto& [k, v] : extra) p[k] = v;
  return props(c, p);
}

// The code of the E `f` throws (-1: nothing thrown, -2: something else).
template <class E, class F>
int thrown_code(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.code();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected error: " << e.what();
    return -2;
  }
  ADD_FAILURE() << "nothing thrown";
  return -1;
}

std::vector<std::int32_t> brokers_of(const MockCluster& c, ApiKey api) {
  std::vector<std::int32_t> out;
  for (auto& r : c.requests(api)) out.push_back(r.broker);
  return out;
}

// The same tests with the classic protocol and with transactions v2.
class MockProducerTxn : public ::testing::TestWithParam<bool> {
 protected:
  bool v2() const { return GetParam(); }
};

}  // namespace

TEST_P(MockProducerTxn, CommitWritesTransactionalBatchesToEveryPartition) {
  MockCluster c(1);
  c.create_topic("t", 2);
  MockTransactions txn(c, v2());
  Producer p(txn_props(c, "tx"));
  EXPECT_EQ(p.producer_id_and_epoch(), (std::pair<std::int64_t, std::int16_t>{-1, -1}));
  p.init_transactions();
  EXPECT_EQ(p.transactions_v2(), v2());
  const auto [pid, epoch0] = p.producer_id_and_epoch();
  ASSERT_GE(pid, 0);
  EXPECT_EQ(epoch0, 0);
  for (int round = 0; round < 2; ++round) {
    p.begin_transaction();
    p.send(message("t", 0, "a" + std::to_string(round)));
    p.send(message("t", 1, "b" + std::to_string(round)));
    p.commit_transaction();
    auto t = txn.transaction("tx");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->state, "CompleteCommit");
    EXPECT_EQ(t->commits, round + 1);
    EXPECT_EQ(t->aborts, 0);
    EXPECT_EQ(t->partitions, (std::set<TopicPartition>{{"t", 0}, {"t", 1}}));
    EXPECT_EQ(p.stats().transactions_committed, static_cast<std::uint64_t>(round + 1));
    // Transactions v2: EndTxn v5 ends each transaction with the next epoch.
    const auto epoch = static_cast<std::int16_t>(epoch0 + (v2() ? round + 1 : 0));
    EXPECT_EQ(p.producer_id_and_epoch(), (std::pair<std::int64_t, std::int16_t>{pid, epoch}));
    EXPECT_EQ(t->producer_epoch, epoch);
  }
  for (std::int32_t part : {0, 1}) {
    auto w = txn.written("t", part);
    ASSERT_EQ(w.size(), 2u) << "partition " << part;
    for (auto& b : w) {
      EXPECT_TRUE(b.transactional);
      EXPECT_EQ(b.producer_id, pid);
    }
    EXPECT_EQ(w[0].producer_epoch, 0);
    EXPECT_EQ(w[0].first_sequence, 0);
    // v2: the second transaction numbers from 0 under its new epoch; classic: it goes on.
    EXPECT_EQ(w[1].producer_epoch, v2() ? 1 : 0);
    EXPECT_EQ(w[1].first_sequence, v2() ? 0 : 1);
    EXPECT_EQ(c.high_watermark("t", part), 2);
  }
  for (auto& r : c.requests(ApiKey::produce)) {
    if (v2()) EXPECT_GE(r.version, 12);
    else EXPECT_LE(r.version, 11);
  }
  if (v2()) {
    EXPECT_TRUE(c.requests(ApiKey::add_partitions_to_txn).empty());
    for (auto& r : c.requests(ApiKey::end_txn)) EXPECT_GE(r.version, 5);
  } else {
    EXPECT_GE(c.requests(ApiKey::add_partitions_to_txn).size(), 2u);
    for (auto& r : c.requests(ApiKey::end_txn)) EXPECT_LE(r.version, 4);
  }
  EXPECT_EQ(c.requests(ApiKey::end_txn).size(), 2u);
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), 1u);
}

// Transactions v2: the coordinator writes a transaction's markers after it
// answers EndTxn, and a broker holds a Produce of the next transaction that
// comes before them for 20 ms. The next transaction's batches go no sooner
// than one EndTxn round trip after the answer: here EndTxn is held 60 ms, so
// the next Produce reaches the broker at least 120 ms after the EndTxn did.
TEST(MockProducerTxnState, NextTransactionsBatchesWaitOneEndTxnRoundTripAfterIt) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, true);
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  p.begin_transaction();
  p.send(message("t", 0, "a"));
  kwire::mock::Fault held;
  held.api = ApiKey::end_txn;
  held.delay = 60ms;
  c.inject(held);
  p.commit_transaction();
  p.begin_transaction();
  p.send(message("t", 0, "b"));
  p.commit_transaction();
  const auto ends = c.requests(ApiKey::end_txn);
  const auto produces = c.requests(ApiKey::produce);
  ASSERT_EQ(ends.size(), 2u);
  ASSERT_EQ(produces.size(), 2u);
  EXPECT_GE(produces[1].received - ends[0].received, 120ms);
  EXPECT_EQ(txn.written("t", 0).size(), 2u);
}

TEST_P(MockProducerTxn, AbortFailsTheQueuedRecordsAndEndsTheTransaction) {
  MockCluster c(1);
  c.create_topic("t", 2);
  MockTransactions txn(c, v2());
  // Records stay queued until flushed.
  Producer p(txn_props(c, "tx", {{"linger.ms", "60000"}}));
  p.init_transactions();
  p.begin_transaction();
  auto written = p.send_future(message("t", 0, "a"));
  p.flush();
  EXPECT_EQ(written.get().offset, 0);
  auto queued = p.send_future(message("t", 1, "b"));
  std::mutex mu;
  std::vector<std::exception_ptr> errors;
  p.send(message("t", 1, "c"), [&](const RecordMetadata&, std::exception_ptr e) {
    std::lock_guard lock(mu);
    errors.push_back(e);
  });
  const auto start = std::chrono::steady_clock::now();
  p.abort_transaction();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_THROW(queued.get(), TransactionAbortedError);
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THROW(std::rethrow_exception(errors[0]), TransactionAbortedError);
  }
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, "CompleteAbort");
  EXPECT_EQ(t->aborts, 1);
  EXPECT_EQ(t->commits, 0);
  EXPECT_EQ(t->partitions, (std::set<TopicPartition>{{"t", 0}}));
  EXPECT_TRUE(txn.written("t", 1).empty());
  auto s = p.stats();
  EXPECT_EQ(s.transactions_aborted, 1u);
  EXPECT_EQ(s.transactions_committed, 0u);
  EXPECT_EQ(s.records_failed, 2u);
  EXPECT_EQ(s.records_sent, 1u);

  // The next transaction starts clean and commits.
  p.begin_transaction();
  auto next = p.send_future(message("t", 1, "d"));
  p.commit_transaction();
  EXPECT_EQ(next.get().offset, 0);
  t = txn.transaction("tx");
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 1);
  EXPECT_EQ(t->partitions, (std::set<TopicPartition>{{"t", 1}}));
  ASSERT_EQ(txn.written("t", 1).size(), 1u);
  EXPECT_EQ(txn.written("t", 1)[0].producer_epoch, v2() ? 1 : 0);
}

TEST_P(MockProducerTxn, OffsetsAreCommittedWithACommitOnly) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, v2());
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  ConsumerGroupMetadata g;
  g.group_id = "g";
  g.member_id = "member-1";
  g.generation = 3;
  p.begin_transaction();
  p.send(message("t", 0, "a"));
  p.send_offsets_to_transaction({{{"in", 0}, {42, -1, ""}}}, g);
  p.abort_transaction();
  EXPECT_TRUE(txn.committed_offsets("g").empty());
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, "CompleteAbort");
  EXPECT_EQ(t->groups, std::set<std::string>{"g"});

  // A transaction of offsets alone still ends with EndTxn.
  p.begin_transaction();
  p.send_offsets_to_transaction({{{"in", 0}, {43, -1, ""}}, {{"in", 1}, {7, -1, "m"}}}, g);
  p.commit_transaction();
  EXPECT_EQ(txn.committed_offsets("g"), (std::map<TopicPartition, std::int64_t>{{{"in", 0}, 43}, {{"in", 1}, 7}}));
  t = txn.transaction("tx");
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 1);
  EXPECT_EQ(t->aborts, 1);
  EXPECT_EQ(c.requests(ApiKey::end_txn).size(), 2u);
  // Classic: the group joins with AddOffsetsToTxn; v2: TxnOffsetCommit v5 adds it.
  EXPECT_EQ(c.requests(ApiKey::add_offsets_to_txn).size(), v2() ? 0u : 2u);
  const auto commits = c.requests(ApiKey::txn_offset_commit);
  ASSERT_EQ(commits.size(), 2u);
  for (auto& r : commits) {
    if (v2()) EXPECT_GE(r.version, 5);
    else EXPECT_LE(r.version, 4);
  }
}

TEST_P(MockProducerTxn, RetriableCoordinatorAnswersAreRetried) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, v2());
  txn.fail_next(ApiKey::init_producer_id, ErrorCode::coordinator_load_in_progress, 1);
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), 2u);
  EXPECT_GE(p.producer_id_and_epoch().first, 0);
  if (!v2()) txn.fail_next(ApiKey::add_partitions_to_txn, ErrorCode::concurrent_transactions, 2);
  txn.fail_next(ApiKey::end_txn, ErrorCode::concurrent_transactions, 2);
  p.begin_transaction();
  auto f = p.send_future(message("t", 0, "a"));
  p.commit_transaction();
  EXPECT_EQ(f.get().offset, 0);
  EXPECT_EQ(c.requests(ApiKey::end_txn).size(), 3u);
  EXPECT_EQ(c.requests(ApiKey::add_partitions_to_txn).size(), v2() ? 0u : 3u);
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 1);
  EXPECT_EQ(t->partitions, (std::set<TopicPartition>{{"t", 0}}));
  ASSERT_EQ(txn.written("t", 0).size(), 1u);
  EXPECT_TRUE(txn.written("t", 0)[0].transactional);
  EXPECT_EQ(p.stats().transactions_committed, 1u);
  EXPECT_EQ(c.requests(ApiKey::find_coordinator).size(), 1u);  // the coordinator stayed where it was
}

TEST_P(MockProducerTxn, ACoordinatorThatMovesIsFoundAgain) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  MockTransactions txn(c, v2());
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  p.begin_transaction();
  p.send(message("t", 0, "a"));
  p.commit_transaction();
  EXPECT_EQ(brokers_of(c, ApiKey::end_txn), std::vector<std::int32_t>{1});

  std::int32_t other = -1;
  for (auto n : c.node_ids())
    if (n != 1) other = n;
  ASSERT_GT(other, 0);
  txn.set_coordinator(other);
  c.clear_requests();
  p.begin_transaction();
  p.send(message("t", 0, "b"));
  p.commit_transaction();
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 2);
  EXPECT_GE(c.requests(ApiKey::find_coordinator).size(), 1u);
  // The old coordinator answered NOT_COORDINATOR to the first call of the
  // transaction (classic: AddPartitionsToTxn; v2: EndTxn), the new one took it.
  const auto first_call = v2() ? ApiKey::end_txn : ApiKey::add_partitions_to_txn;
  const auto calls = brokers_of(c, first_call);
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front(), 1);
  EXPECT_EQ(calls.back(), other);
  EXPECT_EQ(brokers_of(c, ApiKey::end_txn).back(), other);
  EXPECT_EQ(c.high_watermark("t", 0), 2);
}

TEST_P(MockProducerTxn, ASecondProducerOfTheIdFencesTheFirst) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, v2());
  Producer first(txn_props(c, "tx"));
  first.init_transactions();
  const auto [pid, epoch] = first.producer_id_and_epoch();
  first.begin_transaction();
  first.send(message("t", 0, "a"));
  first.flush();

  Producer second(txn_props(c, "tx"));
  second.init_transactions();
  EXPECT_EQ(second.producer_id_and_epoch(),
            (std::pair<std::int64_t, std::int16_t>{pid, static_cast<std::int16_t>(epoch + 1)}));
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->aborts, 1);  // the first producer's open transaction was aborted
  EXPECT_EQ(t->commits, 0);

  EXPECT_EQ(thrown_code<ProducerFencedError>([&] { first.commit_transaction(); }), code(ErrorCode::producer_fenced));
  EXPECT_THROW(first.begin_transaction(), ProducerFencedError);
  EXPECT_THROW(first.send(message("t", 0, "x")), ProducerFencedError);
  EXPECT_EQ(txn.transaction("tx")->commits, 0);

  second.begin_transaction();
  second.send(message("t", 0, "b"));
  second.commit_transaction();
  t = txn.transaction("tx");
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 1);
  EXPECT_EQ(first.stats().transactions_committed, 0u);
}

TEST_P(MockProducerTxn, AFailedRecordMakesTheTransactionAbortable) {
  MockCluster c(1);
  c.create_topic("t", 2);
  MockTransactions txn(c, v2());
  const ErrorCode failure = v2() ? ErrorCode::transaction_abortable : ErrorCode::topic_authorization_failed;
  txn.fail_produce("t", 0, failure);
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  const auto [pid, epoch] = p.producer_id_and_epoch();
  p.begin_transaction();
  auto good = p.send_future(message("t", 1, "b"));
  p.flush();
  EXPECT_EQ(good.get().offset, 0);
  auto bad = p.send_future(message("t", 0, "a"));
  EXPECT_EQ(thrown_code<ProduceError>([&] { bad.get(); }), code(failure));
  EXPECT_EQ(thrown_code<TransactionAbortableError>([&] { p.commit_transaction(); }), code(failure));
  EXPECT_THROW(p.send(message("t", 1, "x")), TransactionAbortableError);
  p.abort_transaction();
  auto t = txn.transaction("tx");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->aborts, 1);
  EXPECT_EQ(t->commits, 0);
  // The refused batch left the partition's sequence behind: the next
  // transaction goes on under a new epoch (v2: from EndTxn; classic: KIP-360
  // InitProducerId with the current id and epoch after the abort, which
  // leaves the transaction Empty).
  EXPECT_EQ(t->state, v2() ? "CompleteAbort" : "Empty");
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), v2() ? 1u : 2u);
  EXPECT_EQ(p.producer_id_and_epoch(),
            (std::pair<std::int64_t, std::int16_t>{pid, static_cast<std::int16_t>(epoch + 1)}));
  EXPECT_EQ(t->producer_epoch, epoch + 1);

  p.begin_transaction();
  auto again = p.send_future(message("t", 0, "c"));
  p.commit_transaction();
  EXPECT_EQ(again.get().offset, 0);
  t = txn.transaction("tx");
  EXPECT_EQ(t->state, "CompleteCommit");
  EXPECT_EQ(t->commits, 1);
  auto w = txn.written("t", 0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].producer_epoch, epoch + 1);
  EXPECT_EQ(w[0].first_sequence, 0);
  EXPECT_EQ(p.stats().transactions_aborted, 1u);
  EXPECT_EQ(p.stats().transactions_committed, 1u);
}

// A coordinator that lost the producer's id (INVALID_PRODUCER_ID_MAPPING,
// e.g. the id expired) takes no EndTxn for it: the transaction is abortable,
// the abort sends no EndTxn and gets the id again with InitProducerId (Java's
// TransactionManager), and the next transaction commits.
TEST(MockProducerTxnState, ALostProducerIdIsAbortedWithANewInitProducerId) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, false);
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  p.begin_transaction();
  txn.fail_next(ApiKey::add_partitions_to_txn, ErrorCode::invalid_producer_id_mapping);
  p.send(message("t", 0, "lost"));
  EXPECT_EQ(thrown_code<TransactionAbortableError>([&] { p.commit_transaction(); }),
            code(ErrorCode::invalid_producer_id_mapping));
  const auto end_txns = c.requests(ApiKey::end_txn).size();
  p.abort_transaction();
  EXPECT_EQ(c.requests(ApiKey::end_txn).size(), end_txns);
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), 2u);
  p.begin_transaction();
  auto f = p.send_future(message("t", 0, "kept"));
  p.commit_transaction();
  EXPECT_EQ(f.get().offset, 0);
  EXPECT_EQ(txn.transaction("tx")->commits, 1);
  EXPECT_EQ(p.stats().transactions_aborted, 1u);
}

// The coordinator calls run on the sender thread: what the callers do
// meanwhile (a record, close()) must not wait for the sender's idle timeout.
TEST_P(MockProducerTxn, RecordsAndCloseAfterACoordinatorCallGoAtOnce) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c, v2());
  Producer p(txn_props(c, "tx"));
  p.init_transactions();
  ConsumerGroupMetadata g;
  g.group_id = "g";
  for (int round = 0; round < 4; ++round) {
    p.begin_transaction();
    p.send_offsets_to_transaction({{{"in", 0}, {round, -1, ""}}}, g);
    auto f = p.send_future(message("t", 0, "r" + std::to_string(round)));
    EXPECT_EQ(f.wait_for(500ms), std::future_status::ready) << "round " << round;
    p.commit_transaction();
    EXPECT_EQ(f.get().offset, round);
  }
  // A transaction of offsets alone, then close().
  p.begin_transaction();
  p.send_offsets_to_transaction({{{"in", 0}, {9, -1, ""}}}, g);
  p.commit_transaction();
  const auto start = std::chrono::steady_clock::now();
  p.close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  EXPECT_EQ(txn.transaction("tx")->commits, 5);
  EXPECT_EQ(txn.committed_offsets("g"), (std::map<TopicPartition, std::int64_t>{{{"in", 0}, 9}}));
}

INSTANTIATE_TEST_SUITE_P(Protocols, MockProducerTxn, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "V2" : "Classic"; });

TEST(MockProducerTxnState, CallsInTheWrongStateThrowTransactionStateError) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  Producer p(txn_props(c, "tx"));
  EXPECT_THROW(p.begin_transaction(), TransactionStateError);
  EXPECT_THROW(p.send(message("t", 0, "a")), TransactionStateError);
  EXPECT_THROW(p.commit_transaction(), TransactionStateError);
  EXPECT_TRUE(c.requests(ApiKey::init_producer_id).empty());
  p.init_transactions();
  EXPECT_THROW(p.init_transactions(), TransactionStateError);
  EXPECT_THROW(p.send(message("t", 0, "a")), TransactionStateError);
  EXPECT_THROW(p.commit_transaction(), TransactionStateError);
  EXPECT_THROW(p.abort_transaction(), TransactionStateError);
  p.begin_transaction();
  EXPECT_THROW(p.begin_transaction(), TransactionStateError);
  EXPECT_THROW(p.send_offsets_to_transaction({{{"in", 0}, {1, -1, ""}}}, ConsumerGroupMetadata{}),
               TransactionStateError);
  // Nothing was sent: the abort needs no EndTxn.
  p.abort_transaction();
  EXPECT_TRUE(c.requests(ApiKey::end_txn).empty());
  EXPECT_TRUE(txn.written("t", 0).empty());
  p.begin_transaction();
  p.send(message("t", 0, "b"));
  p.commit_transaction();
  EXPECT_EQ(txn.transaction("tx")->commits, 1);

  // Without transactional.id there are no transactions.
  Producer plain(props(c));
  EXPECT_THROW(plain.init_transactions(), TransactionStateError);
  EXPECT_THROW(plain.begin_transaction(), TransactionStateError);
}

TEST(MockProducerTxnState, AnUnauthorizedTransactionalIdIsFatal) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  txn.fail_next(ApiKey::init_producer_id, ErrorCode::transactional_id_authorization_failed);
  Producer p(txn_props(c, "tx"));
  EXPECT_EQ(thrown_code<ProducerFatalError>([&] { p.init_transactions(); }),
            code(ErrorCode::transactional_id_authorization_failed));
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), 1u);  // not retried
  EXPECT_EQ(thrown_code<ProducerFatalError>([&] { p.begin_transaction(); }),
            code(ErrorCode::transactional_id_authorization_failed));
  EXPECT_THROW(p.send(message("t", 0, "a")), ProducerFatalError);
  EXPECT_THROW(p.init_transactions(), ProducerFatalError);
  EXPECT_FALSE(txn.transaction("tx"));
  EXPECT_EQ(p.producer_id_and_epoch().first, -1);
}
