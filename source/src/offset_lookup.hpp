// Look-ups on the brokers shared by the streaming and the batch query: the
// partitions of the subscription and offsets from an offset specification,
// each retried fetchOffset.numRetries times (sleeping
// fetchOffset.retryIntervalMs between attempts), as Spark's KafkaOffsetReader.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"

namespace kwire::client {
class KafkaClient;
}

namespace kwire::source::detail {

/// The partitions of the subscription, sorted. subscribe: every partition
/// of each topic (a missing topic is a KafkaError); subscribePattern: topics
/// (not internal) whose name contains a match; assign: the listed partitions
/// that exist (a partition number the topic does not have is left out, as in
/// Spark; a missing topic is a KafkaError, as under subscribe).
std::vector<TopicPartition> discover_partitions(client::KafkaClient& admin, const SourceOptions& options);

/// ListOffsets with one target (client::kEarliestTimestamp, kLatestTimestamp or
/// a timestamp in ms) for every partition of `tps`.
PartitionOffsets fetch_offsets(client::KafkaClient& admin, const SourceOptions& options,
                               const std::vector<TopicPartition>& tps, std::int64_t target);

/// The latest offsets of `tps`; while any is below the offset `known` has for
/// its partition (a lagging leader, KAFKA-7703) they are listed again, up to
/// fetchOffset.numRetries times fetchOffset.retryIntervalMs apart, and the
/// last answer is returned (Spark's fetchLatestOffsets(knownOffsets)).
PartitionOffsets fetch_latest_offsets(client::KafkaClient& admin, const SourceOptions& options,
                                      const std::vector<TopicPartition>& tps, const PartitionOffsets& known);

/// Resolves `spec` to offsets for exactly the partitions `tps` (Spark's
/// KafkaOffsetReaderAdmin: fetchPartitionOffsets for a batch query,
/// fetchSpecificOffsets / fetchSpecificTimestampBasedOffsets /
/// fetchGlobalTimestampBasedOffsets):
///  - earliest / latest: ListOffsets;
///  - specific offsets must name exactly `tps`: in a batch query
///    "[KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for
///    Kafka start offsets don't match what are assigned. ..." (for either end,
///    as Spark, not retried); in a stream "assertion failed: If
///    startingOffsets contains specific offsets, you must specify all
///    TopicPartitions. ..." (retried); -2 and -1 become the earliest / latest
///    offset;
///  - per-partition timestamps must name exactly `tps`
///    ("[KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified
///    for Kafka timestamp based start|end offsets don't match ..."); a
///    timestamp without a matching record gives latest when `ending` or when
///    the strategy is `latest`, else "No offset matched from request of
///    topic-partition tp and timestamp ts.".
/// Errors are SourceOptionError (the texts above) or client errors. Where
/// Spark retries (withRetries: everything but a batch query's specific
/// offsets check), the look-up is tried fetchOffset.numRetries times,
/// fetchOffset.retryIntervalMs apart, listing the partitions again into
/// `tps` before each new attempt.
PartitionOffsets resolve_offsets(client::KafkaClient& admin, const SourceOptions& options,
                                 std::vector<TopicPartition>& tps, const OffsetSpec& spec, bool ending);

}  // namespace kwire::source::detail
