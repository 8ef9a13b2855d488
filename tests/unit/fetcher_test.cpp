// The Fetcher's position logic on a fake cluster (fetcher_fake_cluster.hpp).
#include "kwire/client/fetcher.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fetcher_fake_cluster.hpp"
#include "kwire/protocol/errors.hpp"

using namespace kwire::client;
using namespace kwire::protocol;
using namespace std::chrono_literals;
using namespace kwire_test;

TEST(Fetcher, CorruptBatchInOnePartitionDeliversRecordsBeforeItThenRaisesOnceWhileOthersFlow) {
  FakeCluster c;
  c.leaders[B] = {1, 5, 0};  // one leader: A and B come in one answer
  c.append(A, 3);            // 0-2
  c.append(A, 3);            // 3-5
  c.append(A, 3);            // 6-8: corrupt
  c.corrupt(A, 6);
  c.append(B, 5);  // 0-4
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A, B});
  f.seek(A, 0);
  f.seek(B, 0);
  auto first = f.poll(1s, 100);
  EXPECT_EQ(offsets(first), cat(range(0, 0, 6), range(1, 0, 5)));
  try {
    f.poll(1s, 100);
    FAIL() << "no error for the corrupt batch";
  } catch (const CorruptBatchError& e) {
    EXPECT_EQ(e.partition(), A);
    EXPECT_EQ(e.base_offset(), 6);
    EXPECT_EQ(e.kind(), CorruptionKind::crc_mismatch);
    const std::string what = e.what();
    EXPECT_NE(what.find("t-0"), std::string::npos) << what;
    EXPECT_NE(what.find("CRC"), std::string::npos) << what;
    EXPECT_EQ(what.find("base offset 6"), what.rfind("base offset 6")) << "named twice: " << what;
  }
  EXPECT_EQ(f.position(A), 6);
  EXPECT_EQ(f.position(B), 5);
  // B keeps flowing: new records of B arrive although A fails again.
  c.append(B, 2);  // 5-6
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  int errors = 0;
  for (int i = 0; i < 10 && (got.size() < 2 || errors == 0); ++i) {
    try {
      auto recs = f.poll(200ms, 100);
      auto o = offsets(recs);
      got.insert(got.end(), o.begin(), o.end());
    } catch (const CorruptBatchError&) {
      ++errors;
    }
  }
  EXPECT_EQ(got, range(1, 5, 7));
  EXPECT_GE(errors, 1);
  EXPECT_EQ(f.position(A), 6);
  // Seeking past the bad batch skips only it.
  f.seek(A, 9);
  c.append(A, 1);  // 9
  auto after = f.poll(1s, 100);
  EXPECT_EQ(offsets(after), range(0, 9, 10));
}

TEST(Fetcher, AnAnswerIsDecodedAPartAtATimeAndACorruptBatchInALaterPartRaisesAfterTheRecordsBefore) {
  FakeCluster c;
  c.append(A, 3);  // 0-2
  c.append(A, 3);  // 3-5
  c.append(A, 3);  // 6-8: corrupt
  c.corrupt(A, 6);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  // One answer holds all three batches; two records per poll cross the
  // batch boundaries.
  std::vector<std::vector<std::pair<std::int32_t, std::int64_t>>> polls;
  for (int i = 0; i < 3; ++i) polls.push_back(offsets(f.poll(1s, 2)));
  EXPECT_EQ(polls, (std::vector<std::vector<std::pair<std::int32_t, std::int64_t>>>{range(0, 0, 2), range(0, 2, 4),
                                                                                    range(0, 4, 6)}));
  EXPECT_EQ(f.position(A), 6);
  try {
    f.poll(1s, 2);
    FAIL() << "no error for the corrupt batch";
  } catch (const CorruptBatchError& e) {
    EXPECT_EQ(e.base_offset(), 6);
  }
  EXPECT_EQ(f.position(A), 6);
}

TEST(Fetcher, CorruptFirstBatchRaisesWithoutRecords) {
  FakeCluster c;
  c.append(A, 4);
  c.corrupt(A, 0);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_THROW(f.poll(1s, 100), CorruptBatchError);
  EXPECT_EQ(f.position(A), 0);
}

TEST(Fetcher, PartitionListedTwiceInOneAnswerIsTakenOnceTheLaterEntry) {
  FakeCluster c;
  c.append(A, 5);
  c.edit = [](std::int32_t, FetchResponse& r) {
    // The same partition again, answered as a second topic entry.
    auto copy = r.responses.front();
    r.responses.push_back(copy);
  };
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 5));
  c.edit = nullptr;
  EXPECT_TRUE(f.poll(50ms, 100).empty());
  EXPECT_EQ(f.position(A), 5);
}

TEST(Fetcher, PartitionsNotAskedForAreIgnored) {
  FakeCluster c;
  c.append(A, 2);
  c.append(B, 3);
  c.edit = [&](std::int32_t, FetchResponse& r) {
    // B was not asked of this leader (nor assigned): an answer for it anyway.
    FetchResponse::PartitionData pd;
    pd.partition_index = 1;
    pd.high_watermark = 3;
    static Bytes blob;
    blob = c.logs[B].front().bytes;
    pd.records.data = ByteSpan(blob);
    r.responses.front().partitions.push_back(pd);
  };
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 2));
}

TEST(Fetcher, NoRecordBelowThePositionIsHandedOut) {
  FakeCluster c;
  c.append(A, 10);  // one batch 0-9
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 6);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 6, 10));
}

TEST(Fetcher, PositionMovesOnlyAsRecordsAreHandedOut) {
  FakeCluster c;
  c.append(A, 10);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(offsets(f.poll(1s, 4)), range(0, 0, 4));
  EXPECT_EQ(f.position(A), 4);
  EXPECT_EQ(offsets(f.poll(1s, 4)), range(0, 4, 8));
  EXPECT_EQ(f.position(A), 8);
  EXPECT_EQ(offsets(f.poll(1s, 4)), range(0, 8, 10));
  EXPECT_EQ(f.position(A), 10);
}

TEST(Fetcher, SeekPauseAndResumeWithAFetchInFlight) {
  FakeCluster c;
  c.append(A, 5);
  c.append(A, 5);
  c.append(B, 4);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A, B});
  f.seek(A, 0);
  f.seek(B, 0);
  c.hold = true;
  EXPECT_TRUE(f.poll(0ms, 100).empty());  // the Fetch is out, not answered
  ASSERT_TRUE(f.fetch_in_flight());
  ASSERT_EQ(c.fetches.size(), 2u);  // A and B have different leaders
  EXPECT_EQ(asked(c.fetches[0].request).at(A), 0);
  f.seek(A, 7);  // A's answer for offset 0 no longer counts
  f.pause({B});  // B's answer is not handed out while paused
  c.hold = false;
  auto recs = f.poll(1s, 100);
  EXPECT_EQ(offsets(recs), range(0, 7, 10));
  EXPECT_EQ(f.position(B), 0);
  EXPECT_TRUE(f.poll(50ms, 100).empty());
  f.resume({B});
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(1, 0, 4));
}

TEST(Fetcher, AssignKeepsPositionsOfPartitionsKeptAndDropsOthers) {
  FakeCluster c;
  c.append(A, 3);
  c.append(B, 3);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A, B});
  f.seek(A, 1);
  f.seek(B, 2);
  f.assign({A});
  EXPECT_EQ(f.position(A), 1);
  EXPECT_THROW(f.position(B), ClientError);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 1, 3));
}

TEST(Fetcher, SendsCurrentLeaderEpochAndTheEpochOfTheLastFetchedBatch) {
  FakeCluster c;
  c.leaders[A] = {1, 7, 0};
  c.append(A, 3, 4);  // epoch 4
  c.append(A, 2, 6);  // epoch 6
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 5));
  const auto& first = c.fetches.front().request.topics.front().partitions.front();
  EXPECT_EQ(first.current_leader_epoch, 7);
  EXPECT_EQ(first.last_fetched_epoch, -1);  // nothing fetched before offset 0
  // The next Fetch (from 5) names epoch 6, the epoch of the batch that ends at 4.
  ASSERT_GE(c.fetches.size(), 2u);
  const auto& next = c.fetches.back().request.topics.front().partitions.front();
  EXPECT_EQ(next.fetch_offset, 5);
  EXPECT_EQ(next.current_leader_epoch, 7);
  EXPECT_EQ(next.last_fetched_epoch, 6);
}

TEST(Fetcher, OlderFetchVersionsSendNoEpochs) {
  FakeCluster c;
  c.version = 8;
  c.append(A, 3);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  EXPECT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 3));
  const auto& p = c.fetches.front().request.topics.front().partitions.front();
  EXPECT_EQ(p.current_leader_epoch, -1);
  EXPECT_EQ(p.last_fetched_epoch, -1);
}

TEST(Fetcher, FencedLeaderEpochRefreshesMetadataAndRetriesAtTheSamePosition) {
  FakeCluster c;
  c.append(A, 4);
  int fenced = 2;
  c.edit = [&](std::int32_t, FetchResponse& r) {
    if (fenced-- > 0) {
      auto& p = r.responses.front().partitions.front();
      p.error_code = static_cast<std::int16_t>(ErrorCode::fenced_leader_epoch);
      p.records.data.reset();
    }
  };
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 1);
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  for (int i = 0; i < 20 && got.empty(); ++i) got = offsets(f.poll(100ms, 100));
  EXPECT_EQ(got, range(0, 1, 4));
  EXPECT_GE(c.refreshes, 2);
  ASSERT_GE(c.fetches.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(asked(c.fetches[i].request).at(A), 1) << i;
}

// A retriable error that is not about leadership (here REQUEST_TIMED_OUT)
// counts against `retries`; then poll() raises it, naming the partition.
TEST(Fetcher, RetryBudgetExhaustedRaisesKafkaErrorNamingThePartition) {
  FakeCluster c;
  c.append(A, 4);
  c.append(B, 2);
  c.leaders[B] = {1, 5, 0};
  c.edit = [&](std::int32_t, FetchResponse& r) {
    for (auto& p : r.responses.front().partitions)
      if (p.partition_index == 0) {
        p.error_code = static_cast<std::int16_t>(ErrorCode::request_timed_out);
        p.records.data.reset();
      }
  };
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A, B});
  f.seek(A, 0);
  f.seek(B, 0);
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  std::optional<std::string> error;
  for (int i = 0; i < 50 && !error; ++i) {
    try {
      auto o = offsets(f.poll(50ms, 100));
      got.insert(got.end(), o.begin(), o.end());
    } catch (const KafkaError& e) {
      EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::request_timed_out));
      error = e.what();
    }
  }
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("t-0"), std::string::npos) << *error;
  EXPECT_NE(error->find("REQUEST_TIMED_OUT"), std::string::npos) << *error;
  EXPECT_EQ(got, range(1, 0, 2));  // B was not held up
  EXPECT_EQ(f.position(A), 0);
}

// Leadership and stale-metadata errors are waited out however long they last
// (as the Java consumer does): four times `retries` answers of each, then
// the partition reads on from where it was. None reaches poll().
class FetcherWaitsOut : public ::testing::TestWithParam<ErrorCode> {};

TEST_P(FetcherWaitsOut, ErrorsLongerThanTheRetryBudgetNeverReachPoll) {
  FakeCluster c;
  c.append(A, 4);
  int failing = 4 * (config().retries + 1);
  c.edit = [&](std::int32_t, FetchResponse& r) {
    if (failing <= 0) return;
    --failing;
    for (auto& p : r.responses.front().partitions) {
      p.error_code = static_cast<std::int16_t>(GetParam());
      p.records.data.reset();
    }
  };
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 1);
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  for (int i = 0; i < 100 && got.size() < 3; ++i) {
    auto o = offsets(f.poll(50ms, 100));  // throws on failure
    got.insert(got.end(), o.begin(), o.end());
  }
  EXPECT_EQ(got, range(0, 1, 4));
  EXPECT_EQ(failing, 0);
  // 16 refused answers, then the one with the records: all at offset 1.
  ASSERT_GE(c.fetches.size(), 17u);
  for (std::size_t i = 0; i < 17; ++i) EXPECT_EQ(asked(c.fetches[i].request).at(A), 1) << i;
  EXPECT_GE(c.refreshes, 16);
}

INSTANTIATE_TEST_SUITE_P(Errors, FetcherWaitsOut,
                         ::testing::Values(ErrorCode::not_leader_or_follower, ErrorCode::fenced_leader_epoch,
                                           ErrorCode::unknown_leader_epoch, ErrorCode::unknown_topic_or_partition,
                                           ErrorCode::unknown_topic_id, ErrorCode::inconsistent_topic_id,
                                           ErrorCode::kafka_storage_error, ErrorCode::offset_not_available,
                                           ErrorCode::replica_not_available, ErrorCode::leader_not_available),
                         [](const auto& info) {
                           return std::string(error_name(static_cast<std::int16_t>(info.param)));
                         });

// A partition whose leader is unknown for longer than the retry budget waits
// for metadata to name one, then reads on.
TEST(Fetcher, NoLeaderKnownIsWaitedOut) {
  FakeCluster c;
  c.append(A, 3);
  const auto known = c.leaders[A];
  c.leaders.erase(A);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(f.poll(20ms, 100).empty());
  EXPECT_TRUE(c.fetches.empty());
  EXPECT_GT(c.refreshes, config().retries + 1);
  c.leaders[A] = known;
  EXPECT_EQ(poll_for(f, 3, 200ms), range(0, 0, 3));
}

TEST(Fetcher, LeaderChangeValidatesThePositionAndReportsTruncation) {
  FakeCluster c;
  c.append(A, 5, 5);  // 0-4, epoch 5
  c.append(A, 5, 5);  // 5-9, epoch 5
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  auto got = poll_for(f, 10, 200ms);
  ASSERT_EQ(got, range(0, 0, 10));
  // An unclean election: the new leader (epoch 6) has epoch 5 only up to offset 7.
  c.leaders[A] = {2, 6, 0};
  c.truncate(A, 5);
  c.append(A, 3, 5);  // 5-7, epoch 5
  c.append(A, 4, 6);  // 8-11, epoch 6
  c.epoch_end_offsets[A] = {0, 5, 8};
  try {
    for (int i = 0; i < 5; ++i) f.poll(100ms, 100);
    FAIL() << "no truncation reported";
  } catch (const LogTruncationError& e) {
    EXPECT_EQ(e.partition(), A);
    EXPECT_EQ(e.offset(), 10);
    EXPECT_EQ(e.divergent_offset(), 8);
    EXPECT_NE(std::string(e.what()).find("t-0"), std::string::npos);
  }
  ASSERT_FALSE(c.epoch_queries.empty());
  EXPECT_EQ(c.epoch_queries.back().at(A).current_leader_epoch, 6);
  EXPECT_EQ(c.epoch_queries.back().at(A).leader_epoch, 5);
  EXPECT_EQ(f.position(A), 10);
}

TEST(Fetcher, TruncationWithAResetPolicyMovesToTheDivergentOffset) {
  FakeCluster c;
  c.append(A, 10, 5);
  Fetcher f(c, config(), OffsetResetPolicy::earliest);
  f.assign({A});
  f.seek(A, 0);
  ASSERT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 10));
  c.leaders[A] = {2, 6, 0};
  c.truncate(A, 0);
  c.append(A, 7, 5);  // 0-6, epoch 5
  c.append(A, 3, 6);  // 7-9, epoch 6
  c.epoch_end_offsets[A] = {0, 5, 7};
  auto got = poll_for(f, 3, 100ms);
  EXPECT_EQ(got, range(0, 7, 10));
}

TEST(Fetcher, LeaderChangeWithoutDivergenceKeepsThePosition) {
  FakeCluster c;
  c.append(A, 4, 5);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  ASSERT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 4));
  c.leaders[A] = {2, 6, 0};
  c.epoch_end_offsets[A] = {0, 5, 4};
  c.append(A, 2, 6);
  auto got = poll_for(f, 2, 100ms);
  EXPECT_EQ(got, range(0, 4, 6));
  EXPECT_EQ(c.epoch_queries.size(), 1u);
  EXPECT_EQ(c.fetches.back().node, 2);
}

TEST(Fetcher, DivergingEpochInAFetchAnswerIsATruncation) {
  FakeCluster c;
  c.append(A, 6, 5);
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A});
  f.seek(A, 0);
  ASSERT_EQ(offsets(f.poll(1s, 100)), range(0, 0, 6));
  c.edit = [](std::int32_t, FetchResponse& r) {
    auto& p = r.responses.front().partitions.front();
    p.diverging_epoch.epoch = 5;
    p.diverging_epoch.end_offset = 4;
    p.records.data.reset();
  };
  try {
    for (int i = 0; i < 5; ++i) f.poll(100ms, 100);
    FAIL() << "no truncation reported";
  } catch (const LogTruncationError& e) {
    EXPECT_EQ(e.offset(), 6);
    EXPECT_EQ(e.divergent_offset(), 4);
  }
}

TEST(Fetcher, OffsetOutOfRangeWithResetNoneRaisesForThatPartitionAlone) {
  FakeCluster c;
  c.append(A, 3);
  c.append(B, 3);
  c.leaders[B] = {1, 5, 0};
  c.log_start[A] = 2;
  Fetcher f(c, config(), OffsetResetPolicy::none);
  f.assign({A, B});
  f.seek(A, 0);
  f.seek(B, 0);
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  bool raised = false;
  for (int i = 0; i < 5 && (!raised || got.size() < 3); ++i) {
    try {
      auto o = offsets(f.poll(100ms, 100));
      got.insert(got.end(), o.begin(), o.end());
    } catch (const OffsetOutOfRangeError& e) {
      EXPECT_EQ(e.partition(), A);
      EXPECT_EQ(e.offset(), 0);
      raised = true;
    }
  }
  EXPECT_TRUE(raised);
  EXPECT_EQ(got, range(1, 0, 3));
}

TEST(Fetcher, OffsetOutOfRangeResetsWithThePolicy) {
  FakeCluster c;
  c.append(A, 6);
  c.log_start[A] = 4;
  Fetcher f(c, config(), OffsetResetPolicy::earliest);
  f.assign({A});
  f.seek(A, 1);
  auto got = poll_for(f, 2, 100ms);
  EXPECT_EQ(got, range(0, 4, 6));
}
