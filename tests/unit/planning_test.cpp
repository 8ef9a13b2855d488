#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"

using namespace kwire::source;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

OffsetRange R(const TopicPartition& tp, std::int64_t from, std::int64_t until) {
  return OffsetRange{tp, from, until, std::nullopt};
}

const TopicPartition tp1{"t1", 1};
const TopicPartition tp2{"t2", 1};
const TopicPartition tp3{"t3", 1};

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

PlanOptions opts(bool fail, bool group_id = false) {
  PlanOptions o;
  o.fail_on_data_loss = fail;
  o.group_id_set = group_id;
  return o;
}

}  // namespace

// ---- rate_limit (expected values worked out by hand from Spark's formula) ----

TEST(RateLimit, EvenSplit) {
  // sizes 100 + 100, limit 10: each share 10 * 0.5 = 5.
  EXPECT_EQ(rate_limit(10, {{"t", {{0, 0}, {1, 0}}}}, {{"t", {{0, 100}, {1, 100}}}}, {}),
            (PartitionOffsets{{"t", {{0, 5}, {1, 5}}}}));
}

TEST(RateLimit, FloorAndSmallShareRoundsUpToOne) {
  // total 1005: 10 * 1000/1005 = 9.95 -> floor 9; 10 * 5/1005 = 0.0497 -> ceil 1.
  EXPECT_EQ(rate_limit(10, {{"t", {{0, 0}, {1, 0}}}}, {{"t", {{0, 1000}, {1, 5}}}}, {}),
            (PartitionOffsets{{"t", {{0, 9}, {1, 1}}}}));
  // Two shares of 0.5 both round up: the total (2) exceeds the limit (1).
  EXPECT_EQ(rate_limit(1, {{"t", {{0, 0}, {1, 0}}}}, {{"t", {{0, 10}, {1, 10}}}}, {}),
            (PartitionOffsets{{"t", {{0, 1}, {1, 1}}}}));
  // total 201: 100 * 200/201 = 99.5 -> 99; 100 * 1/201 = 0.497 -> 1.
  EXPECT_EQ(rate_limit(100, {{"a", {{0, 0}}}, {"b", {{0, 0}}}}, {{"a", {{0, 200}}}, {"b", {{0, 1}}}}, {}),
            (PartitionOffsets{{"a", {{0, 99}}}, {"b", {{0, 1}}}}));
}

TEST(RateLimit, CappedAtUntil) {
  // limit 1000 > backlog 15: shares 666 and 333 are capped at until.
  EXPECT_EQ(rate_limit(1000, {{"t", {{0, 0}, {1, 100}}}}, {{"t", {{0, 10}, {1, 105}}}}, {}),
            (PartitionOffsets{{"t", {{0, 10}, {1, 105}}}}));
}

TEST(RateLimit, NewPartitionBeginsAtEarliest) {
  // sizes 96 (0..96) and 32 (18..50): shares 20 * 0.75 = 15 and 20 * 0.25 = 5.
  EXPECT_EQ(rate_limit(20, {{"t", {{0, 0}}}}, {{"t", {{0, 96}, {1, 50}}}}, {{"t", {{1, 18}}}}),
            (PartitionOffsets{{"t", {{0, 15}, {1, 23}}}}));
  // A new partition without a known earliest offset keeps until.
  EXPECT_EQ(rate_limit(4, {{"t", {{0, 0}}}}, {{"t", {{0, 96}, {1, 50}}}}, {}),
            (PartitionOffsets{{"t", {{0, 4}, {1, 50}}}}));
}

TEST(RateLimit, NonPositiveSizesKeepUntilAndEmptyBacklogReturnsUntil) {
  // t-0 went backwards (size -10): keeps until; t-1 gets the whole limit.
  EXPECT_EQ(rate_limit(10, {{"t", {{0, 50}, {1, 0}}}}, {{"t", {{0, 40}, {1, 100}}}}, {}),
            (PartitionOffsets{{"t", {{0, 40}, {1, 10}}}}));
  // total < 1: until unchanged.
  PartitionOffsets until{{"t", {{0, 40}, {1, 7}}}};
  EXPECT_EQ(rate_limit(10, {{"t", {{0, 50}, {1, 7}}}}, until, {}), until);
  EXPECT_TRUE(rate_limit(10, {}, {}, {}).empty());
}

TEST(RateLimit, SaturatingAdd) {
  EXPECT_EQ(rate_limit(kMax, {{"t", {{0, kMax - 5}}}}, {{"t", {{0, kMax}}}}, {}),
            (PartitionOffsets{{"t", {{0, kMax}}}}));
}

TEST(RateLimit, ZeroLimitMakesNoProgress) {
  EXPECT_EQ(rate_limit(0, {{"t", {{0, 5}}}}, {{"t", {{0, 10}}}}, {}), (PartitionOffsets{{"t", {{0, 5}}}}));
}

// ---- split_ranges: the reference vectors ----

TEST(SplitRanges, MinPartitions4TwoRanges) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 5), R(tp2, 1, 21)}, 4, std::nullopt),
            (std::vector<OffsetRange>{R(tp1, 1, 5), R(tp2, 1, 7), R(tp2, 7, 14), R(tp2, 14, 21)}));
}

TEST(SplitRanges, MinPartitions3OneRange) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 11)}, 3, std::nullopt),
            (std::vector<OffsetRange>{R(tp1, 1, 4), R(tp1, 4, 7), R(tp1, 7, 11)}));
}

TEST(SplitRanges, MinPartitions4TinyAndLarge) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 2), R(tp2, 1, 1001)}, 4, std::nullopt),
            (std::vector<OffsetRange>{R(tp1, 1, 2), R(tp2, 1, 334), R(tp2, 334, 667), R(tp2, 667, 1001)}));
}

TEST(SplitRanges, MaxRecords20) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 50)}, std::nullopt, 20),
            (std::vector<OffsetRange>{R(tp1, 1, 17), R(tp1, 17, 33), R(tp1, 33, 50)}));
}

TEST(SplitRanges, MaxRecords4Splits) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 6)}, std::nullopt, 4), (std::vector<OffsetRange>{R(tp1, 1, 3), R(tp1, 3, 6)}));
}

TEST(SplitRanges, MaxRecords4Unsplit) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 5)}, std::nullopt, 4), (std::vector<OffsetRange>{R(tp1, 1, 5)}));
}

TEST(SplitRanges, MinPartitionsAndMaxRecords) {
  EXPECT_EQ(split_ranges({R(tp1, 1, 40)}, 4, 20),
            (std::vector<OffsetRange>{R(tp1, 1, 10), R(tp1, 10, 20), R(tp1, 20, 30), R(tp1, 30, 40)}));
}

TEST(SplitRanges, NoSplitDropsEmptyAndKeepsOrder) {
  OffsetRange located = R(tp3, 0, 3);
  located.preferred_location = "executor_host_1";
  auto out = split_ranges({R(tp2, 5, 9), R(tp1, 4, 4), R(tp1, 9, 2), located}, std::nullopt, std::nullopt);
  EXPECT_EQ(out, (std::vector<OffsetRange>{R(tp2, 5, 9), R(tp3, 0, 3)}));
  EXPECT_FALSE(out[1].preferred_location);
  // Enough ranges for minPartitions: nothing is split.
  EXPECT_EQ(split_ranges({R(tp1, 0, 100), R(tp2, 0, 1)}, 2, std::nullopt),
            (std::vector<OffsetRange>{R(tp1, 0, 100), R(tp2, 0, 1)}));
  EXPECT_TRUE(split_ranges({}, 4, 10).empty());
  EXPECT_THROW(split_ranges({}, 0, std::nullopt), std::invalid_argument);
  EXPECT_THROW(split_ranges({}, std::nullopt, 0), std::invalid_argument);
}

// ---- Data loss ----

TEST(DataLoss, NamesAndMessages) {
  EXPECT_EQ(data_loss_name(DataLossKind::partitions_deleted), "PARTITIONS_DELETED");
  EXPECT_EQ(data_loss_name(DataLossKind::partitions_deleted_and_group_id_config_present),
            "PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT");
  EXPECT_EQ(data_loss_name(DataLossKind::initial_offset_not_found_for_partitions),
            "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS");
  EXPECT_EQ(data_loss_name(DataLossKind::added_partition_does_not_start_from_offset_zero),
            "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO");
  EXPECT_EQ(data_loss_name(DataLossKind::partition_offset_changed), "PARTITION_OFFSET_CHANGED");
  EXPECT_EQ(data_loss_name(DataLossKind::could_not_read_offset_range), "COULD_NOT_READ_OFFSET_RANGE");

  auto e = DataLossError::could_not_read_offset_range({"t", 3}, 10, 20, std::nullopt);
  EXPECT_EQ(std::string(e.what()),
            "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE: Some data may have been lost because "
            "they are not available in Kafka any more; either the data was aged out by Kafka or "
            "the topic may have been deleted before all the data in the topic was processed. If "
            "you don't want your streaming query to fail on such cases, set the source option "
            "failOnDataLoss to false. Reason: Could not read records in offset [10, 20) for topic "
            "partition t-3 with consumer group null.");
  EXPECT_EQ(e.kind(), DataLossKind::could_not_read_offset_range);
  EXPECT_EQ(e.topic(), "t");
  EXPECT_EQ(e.partition(), 3);
  EXPECT_EQ(e.start_offset(), 10);
  EXPECT_EQ(e.end_offset(), 20);
  EXPECT_TRUE(
      contains(DataLossError::could_not_read_offset_range({"t", 3}, 1, 2, "g1").what(), "with consumer group g1."));
  auto w = data_loss_warning(e);
  EXPECT_TRUE(contains(w, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"));
  EXPECT_TRUE(contains(w, "set the source option \"failOnDataLoss\" to \"true\"."));
}

TEST(PlanBatch, PlainRangesSortedAndEmptyDropped) {
  PartitionOffsets start{{"b", {{0, 5}}}, {"a", {{1, 7}, {0, 2}}}};
  PartitionOffsets end{{"b", {{0, 10}}}, {"a", {{1, 7}, {0, 4}}}};
  auto plan = plan_batch(start, end, {}, opts(true));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"a", 0}, 2, 4), R({"b", 0}, 5, 10)}));
  EXPECT_EQ(plan.end, end);
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(PlanBatch, NewPartitionStartsAtEarliestZero) {
  auto plan =
      plan_batch({{"t", {{0, 5}}}}, {{"t", {{0, 10}, {1, 4}}}}, {{"t", {{1, 0}}}, {"other", {{0, 99}}}}, opts(true));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 5, 10), R({"t", 1}, 0, 4)}));
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(PlanBatch, AddedPartitionNotFromZero) {
  PartitionOffsets start{{"t", {{0, 5}}}}, end{{"t", {{0, 10}, {1, 4}}}}, earliest{{"t", {{1, 2}}}};
  try {
    plan_batch(start, end, earliest, opts(true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::added_partition_does_not_start_from_offset_zero);
    EXPECT_TRUE(contains(e.what(),
                         "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO: "
                         "Some data may have been lost"));
    EXPECT_TRUE(contains(e.what(), "Reason: Added partition t-1 starts from 2 instead of 0."));
    EXPECT_EQ(e.start_offset(), 2);
  }
  auto plan = plan_batch(start, end, earliest, opts(false));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 5, 10), R({"t", 1}, 2, 4)}));
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_TRUE(contains(plan.warnings[0], "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"));
}

TEST(PlanBatch, InitialOffsetNotFound) {
  PartitionOffsets start{{"t", {{0, 5}}}}, end{{"t", {{0, 10}, {1, 4}, {2, 3}}}};
  try {
    plan_batch(start, end, {{"t", {{2, 0}}}}, opts(true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::initial_offset_not_found_for_partitions);
    EXPECT_TRUE(contains(e.what(), "KAFKA_DATA_LOSS.INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS: "));
    EXPECT_TRUE(contains(e.what(),
                         "Reason: Cannot find initial offsets for partitions Set(t-1). "
                         "They may have been deleted."));
  }
  auto plan = plan_batch(start, end, {{"t", {{2, 0}}}}, opts(false));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 5, 10), R({"t", 2}, 0, 3)}));
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_TRUE(contains(plan.warnings[0], "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS"));
  EXPECT_EQ(plan.end, end);
}

TEST(PlanBatch, PartitionsDeleted) {
  PartitionOffsets start{{"t", {{0, 5}, {1, 3}}}, {"gone", {{0, 1}}}}, end{{"t", {{0, 10}}}};
  try {
    plan_batch(start, end, {}, opts(true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partitions_deleted);
    EXPECT_TRUE(contains(e.what(), "KAFKA_DATA_LOSS.PARTITIONS_DELETED: "));
    EXPECT_TRUE(contains(e.what(), "Reason: Partitions Set(gone-0, t-1) have been deleted."));
    EXPECT_EQ(e.partitions().size(), 2u);
  }
  try {
    plan_batch(start, end, {}, opts(true, /*group_id=*/true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partitions_deleted_and_group_id_config_present);
    EXPECT_TRUE(contains(e.what(), "KAFKA_DATA_LOSS.PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT: "));
    EXPECT_TRUE(contains(e.what(),
                         "have been deleted. Kafka option 'kafka.group.id' has been set on "
                         "this query, it is not recommended to set this option."));
  }
  auto plan = plan_batch(start, end, {}, opts(false));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 5, 10)}));
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_TRUE(contains(plan.warnings[0], "KAFKA_DATA_LOSS.PARTITIONS_DELETED"));
}

TEST(PlanBatch, PartitionOffsetChanged) {
  PartitionOffsets start{{"t", {{0, 50}, {1, 0}}}}, end{{"t", {{0, 10}, {1, 8}}}};
  try {
    plan_batch(start, end, {}, opts(true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partition_offset_changed);
    EXPECT_TRUE(contains(e.what(), "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED: "));
    // Spark 4.2's text, whole.
    EXPECT_TRUE(contains(e.what(),
                         "Reason: Partition t-0 offset was changed from 50 to 10. This could be either 1) a user "
                         "error that the start offset is set beyond available offset when starting query, or 2) "
                         "the kafka topic-partition is deleted and re-created."))
        << e.what();
    EXPECT_EQ(e.start_offset(), 50);
    EXPECT_EQ(e.end_offset(), 10);
  }
  auto plan = plan_batch(start, end, {}, opts(false));
  // The backwards partition reads nothing; the next batch starts at the new offset.
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 1}, 0, 8)}));
  EXPECT_EQ(plan.end, end);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_TRUE(contains(plan.warnings[0], "PARTITION_OFFSET_CHANGED"));
  EXPECT_TRUE(contains(plan.warnings[0], "the kafka topic-partition is deleted and re-created.")) << plan.warnings[0];
  for (const auto& r : plan.ranges) EXPECT_GT(r.until_offset, r.from_offset);
}

TEST(PlanBatch, CaseOrderWhenSeveralHappen) {
  PartitionOffsets start{{"t", {{0, 50}, {1, 3}}}};
  PartitionOffsets end{{"t", {{0, 10}, {2, 4}, {3, 6}}}};
  PartitionOffsets earliest{{"t", {{3, 1}}}};  // t-2 missing, t-3 starts at 1
  try {
    plan_batch(start, end, earliest, opts(true));
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::initial_offset_not_found_for_partitions);
  }
  auto plan = plan_batch(start, end, earliest, opts(false));
  ASSERT_EQ(plan.warnings.size(), 4u);
  EXPECT_TRUE(contains(plan.warnings[0], "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS"));
  EXPECT_TRUE(contains(plan.warnings[1], "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"));
  EXPECT_TRUE(contains(plan.warnings[2], "PARTITIONS_DELETED"));
  EXPECT_TRUE(contains(plan.warnings[3], "PARTITION_OFFSET_CHANGED"));
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 3}, 1, 6)}));
}

TEST(PlanBatch, SplitsWithOptions) {
  PlanOptions o = opts(true);
  o.min_partitions = 3;
  auto plan = plan_batch({{"t", {{0, 1}}}}, {{"t", {{0, 11}}}}, {}, o);
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 1, 4), R({"t", 0}, 4, 7), R({"t", 0}, 7, 11)}));
  o.min_partitions.reset();
  o.max_records_per_partition = 4;
  plan = plan_batch({{"t", {{0, 1}}}}, {{"t", {{0, 6}}}}, {}, o);
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{R({"t", 0}, 1, 3), R({"t", 0}, 3, 6)}));
}

TEST(PlanBatch, PlanOptionsFromSourceOptions) {
  auto s = parse_source_options({{"kafka.bootstrap.servers", "h:1"},
                                 {"subscribe", "t"},
                                 {"kafka.group.id", "g"},
                                 {"failOnDataLoss", "false"},
                                 {"minPartitions", "6"},
                                 {"maxRecordsPerPartition", "1000"}},
                                QueryMode::streaming);
  PlanOptions p = plan_options(s);
  EXPECT_FALSE(p.fail_on_data_loss);
  EXPECT_TRUE(p.group_id_set);
  EXPECT_EQ(p.min_partitions, 6);
  EXPECT_EQ(p.max_records_per_partition, 1000);
}

// ---- Lag ----

TEST(Lag, MinMaxAvgBehindLatest) {
  auto m = offsets_behind_latest({{"t", {{0, 100}, {1, 50}}}, {"u", {{0, 7}}}},
                                 {{"t", {{0, 90}, {1, 50}}}, {"u", {{0, 2}}}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->min_offsets_behind_latest, 0);
  EXPECT_EQ(m->max_offsets_behind_latest, 10);
  EXPECT_DOUBLE_EQ(m->avg_offsets_behind_latest, 5.0);
  auto zero = offsets_behind_latest({{"t", {{0, 10}}}}, {{"t", {{0, 10}}}});
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->max_offsets_behind_latest, 0);
  EXPECT_DOUBLE_EQ(zero->avg_offsets_behind_latest, 0.0);
}

TEST(Lag, EmptyAndUnconsumedPartitions) {
  EXPECT_FALSE(offsets_behind_latest({}, {{"t", {{0, 1}}}}));
  EXPECT_FALSE(offsets_behind_latest({{"t", {{0, 1}}}}, {}));
  auto m = offsets_behind_latest({{"t", {{0, 9}, {1, 4}}}}, {{"t", {{0, 6}}}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->min_offsets_behind_latest, 3);
  EXPECT_EQ(m->max_offsets_behind_latest, 3);
  EXPECT_DOUBLE_EQ(m->avg_offsets_behind_latest, 3.0);
}
