#include "kwire/protocol/errors.hpp"

#include <map>
#include <mutex>
#include <string>

namespace kwire::protocol {

namespace {

struct ErrorInfo {
  std::int16_t code;
  std::string_view name;
  bool retriable;
  std::string_view description;
};

// Indexed by code - kMinKnownErrorCode; the codes are contiguous.
constexpr ErrorInfo kErrors[] = {
    {-1, "UNKNOWN_SERVER_ERROR", false, "The broker hit an unexpected error while handling the request."},
    {0, "NONE", false, ""},
    {1, "OFFSET_OUT_OF_RANGE", false, "The requested offset is outside the range the partition currently holds."},
    {2, "CORRUPT_MESSAGE", true,
     "A record failed its CRC check, has an invalid size, lacks a key on a compacted topic, or is otherwise "
     "malformed."},
    {3, "UNKNOWN_TOPIC_OR_PARTITION", true, "The broker does not host this topic or partition."},
    {4, "INVALID_FETCH_SIZE", false, "The fetch size in the request is not valid."},
    {5, "LEADER_NOT_AVAILABLE", true, "The partition has no leader right now, typically during a leader election."},
    {6, "NOT_LEADER_OR_FOLLOWER", true,
     "The broker is not the leader (or, for replica requests, not a replica) of the partition."},
    {7, "REQUEST_TIMED_OUT", true, "The request did not complete within its timeout."},
    {8, "BROKER_NOT_AVAILABLE", false, "The broker is not available."},
    {9, "REPLICA_NOT_AVAILABLE", true, "The replica for the partition is not available on this broker."},
    {10, "MESSAGE_TOO_LARGE", false, "A record or batch is larger than the broker accepts."},
    {11, "STALE_CONTROLLER_EPOCH", false, "The request came from a controller that is no longer current."},
    {12, "OFFSET_METADATA_TOO_LARGE", false, "The metadata string attached to a committed offset is too long."},
    {13, "NETWORK_EXCEPTION", true, "The connection was closed before a response arrived."},
    {14, "COORDINATOR_LOAD_IN_PROGRESS", true, "The coordinator is still loading its state and cannot answer yet."},
    {15, "COORDINATOR_NOT_AVAILABLE", true, "No coordinator is currently available for this group or transaction."},
    {16, "NOT_COORDINATOR", true, "The broker is not the coordinator for this group or transaction."},
    {17, "INVALID_TOPIC_EXCEPTION", false, "The topic name is invalid or the operation is not allowed on this topic."},
    {18, "RECORD_LIST_TOO_LARGE", false, "A record batch is larger than the topic's segment size."},
    {19, "NOT_ENOUGH_REPLICAS", true, "The write was refused because fewer in-sync replicas exist than required."},
    {20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true,
     "The records were written, but fewer in-sync replicas acknowledged them than required."},
    {21, "INVALID_REQUIRED_ACKS", false, "The acks value of the produce request is not valid."},
    {22, "ILLEGAL_GENERATION", false, "The group generation in the request is not the current one."},
    {23, "INCONSISTENT_GROUP_PROTOCOL", false,
     "The member's protocol type or protocols do not match those of the group, or are empty."},
    {24, "INVALID_GROUP_ID", false, "The group id is empty or otherwise invalid."},
    {25, "UNKNOWN_MEMBER_ID", false, "The coordinator does not know this member id."},
    {26, "INVALID_SESSION_TIMEOUT", false, "The session timeout is outside the range the broker allows."},
    {27, "REBALANCE_IN_PROGRESS", false, "The group is rebalancing; the member has to rejoin."},
    {28, "INVALID_COMMIT_OFFSET_SIZE", false, "The size of the offset commit data is not valid."},
    {29, "TOPIC_AUTHORIZATION_FAILED", false, "The principal is not authorized for this topic."},
    {30, "GROUP_AUTHORIZATION_FAILED", false, "The principal is not authorized for this group."},
    {31, "CLUSTER_AUTHORIZATION_FAILED", false, "The principal is not authorized for this cluster operation."},
    {32, "INVALID_TIMESTAMP", false, "A record timestamp is outside the range the broker accepts."},
    {33, "UNSUPPORTED_SASL_MECHANISM", false, "The broker does not offer the requested SASL mechanism."},
    {34, "ILLEGAL_SASL_STATE", false, "The request is not allowed in the current state of SASL authentication."},
    {35, "UNSUPPORTED_VERSION", false, "The broker does not support this version of the API."},
    {36, "TOPIC_ALREADY_EXISTS", false, "A topic with this name already exists."},
    {37, "INVALID_PARTITIONS", false, "The partition count is not valid."},
    {38, "INVALID_REPLICATION_FACTOR", false,
     "The replication factor is below 1 or larger than the number of available brokers."},
    {39, "INVALID_REPLICA_ASSIGNMENT", false, "The manual replica assignment is not valid."},
    {40, "INVALID_CONFIG", false, "A configuration entry is not valid."},
    {41, "NOT_CONTROLLER", true, "The broker is not the active controller."},
    {42, "INVALID_REQUEST", false,
     "The broker could not make sense of the request; it is malformed or sent to an incompatible broker."},
    {43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false, "The topic's message format does not support this request."},
    {44, "POLICY_VIOLATION", false, "The request was rejected by a policy configured on the broker."},
    {45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false, "The broker saw a producer sequence number out of order."},
    {46, "DUPLICATE_SEQUENCE_NUMBER", false, "The broker saw a producer sequence number it has already written."},
    {47, "INVALID_PRODUCER_EPOCH", false, "The producer epoch is older than the current one."},
    {48, "INVALID_TXN_STATE", false, "The transactional operation is not allowed in the transaction's current state."},
    {49, "INVALID_PRODUCER_ID_MAPPING", false, "The producer id is not the one assigned to this transactional id."},
    {50, "INVALID_TRANSACTION_TIMEOUT", false, "The transaction timeout exceeds the broker's maximum."},
    {51, "CONCURRENT_TRANSACTIONS", true, "Another operation on the same transaction is still in progress."},
    {52, "TRANSACTION_COORDINATOR_FENCED", false,
     "The transaction coordinator that sent this request has been replaced."},
    {53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false, "The principal is not authorized for this transactional id."},
    {54, "SECURITY_DISABLED", false, "Security features are disabled on the broker."},
    {55, "OPERATION_NOT_ATTEMPTED", false,
     "The broker skipped this item because another item in the same request failed."},
    {56, "KAFKA_STORAGE_ERROR", true, "The broker could not access the log on disk."},
    {57, "LOG_DIR_NOT_FOUND", false, "The requested log directory is not configured on the broker."},
    {58, "SASL_AUTHENTICATION_FAILED", false, "SASL authentication failed."},
    {59, "UNKNOWN_PRODUCER_ID", false,
     "The broker has no state for this producer id, for example because its records expired."},
    {60, "REASSIGNMENT_IN_PROGRESS", false, "A partition reassignment is already in progress."},
    {61, "DELEGATION_TOKEN_AUTH_DISABLED", false, "Delegation tokens are not enabled."},
    {62, "DELEGATION_TOKEN_NOT_FOUND", false, "The delegation token does not exist."},
    {63, "DELEGATION_TOKEN_OWNER_MISMATCH", false, "The principal is not the owner or a renewer of the token."},
    {64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false,
     "Delegation token requests are not allowed on this kind of connection or authentication."},
    {65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", false, "The principal is not authorized for this delegation token."},
    {66, "DELEGATION_TOKEN_EXPIRED", false, "The delegation token has expired."},
    {67, "INVALID_PRINCIPAL_TYPE", false, "The principal type is not supported."},
    {68, "NON_EMPTY_GROUP", false, "The group still has members."},
    {69, "GROUP_ID_NOT_FOUND", false, "The group does not exist."},
    {70, "FETCH_SESSION_ID_NOT_FOUND", true, "The broker does not know this fetch session."},
    {71, "INVALID_FETCH_SESSION_EPOCH", true, "The fetch session epoch does not match the broker's."},
    {72, "LISTENER_NOT_FOUND", true, "The partition leader has no listener matching the one this request arrived on."},
    {73, "TOPIC_DELETION_DISABLED", false, "Topic deletion is disabled on the cluster."},
    {74, "FENCED_LEADER_EPOCH", true, "The leader epoch in the request is older than the broker's."},
    {75, "UNKNOWN_LEADER_EPOCH", true, "The leader epoch in the request is newer than the broker's."},
    {76, "UNSUPPORTED_COMPRESSION_TYPE", false,
     "The client cannot handle the compression type used for this partition."},
    {77, "STALE_BROKER_EPOCH", false, "The broker epoch in the request is out of date."},
    {78, "OFFSET_NOT_AVAILABLE", true,
     "The new leader's high watermark has not caught up yet, so the offset cannot be given reliably."},
    {79, "MEMBER_ID_REQUIRED", false, "The member must join again with the member id the coordinator assigned."},
    {80, "PREFERRED_LEADER_NOT_AVAILABLE", true, "The preferred leader cannot take over leadership."},
    {81, "GROUP_MAX_SIZE_REACHED", false, "The group already has the maximum number of members."},
    {82, "FENCED_INSTANCE_ID", false, "Another member with the same group.instance.id has replaced this one."},
    {83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true, "No replica is eligible to become leader of the partition."},
    {84, "ELECTION_NOT_NEEDED", true, "The partition already has the leader the election would choose."},
    {85, "NO_REASSIGNMENT_IN_PROGRESS", false, "There is no partition reassignment to cancel."},
    {86, "GROUP_SUBSCRIBED_TO_TOPIC", false,
     "Offsets of a topic cannot be deleted while the group is subscribed to it."},
    {87, "INVALID_RECORD", false, "The broker rejected a record that failed validation."},
    {88, "UNSTABLE_OFFSET_COMMIT", true, "There are pending transactional offset commits for the partition."},
    {89, "THROTTLING_QUOTA_EXCEEDED", true, "The request exceeded the mutation rate quota."},
    {90, "PRODUCER_FENCED", false, "A newer producer with the same transactional id has fenced this one."},
    {91, "RESOURCE_NOT_FOUND", false, "The request refers to a resource that does not exist."},
    {92, "DUPLICATE_RESOURCE", false, "The request names the same resource more than once."},
    {93, "UNACCEPTABLE_CREDENTIAL", false, "The credential does not meet the broker's requirements."},
    {94, "INCONSISTENT_VOTER_SET", false,
     "The sender or receiver of a quorum request is not one of the expected voters."},
    {95, "INVALID_UPDATE_VERSION", false, "The requested feature update version is not valid."},
    {96, "FEATURE_UPDATE_FAILED", false, "The finalized features could not be updated because of a server error."},
    {97, "PRINCIPAL_DESERIALIZATION_FAILURE", false,
     "A forwarded request's principal could not be deserialized; the cluster's security setup is inconsistent."},
    {98, "SNAPSHOT_NOT_FOUND", false, "The requested snapshot does not exist."},
    {99, "POSITION_OUT_OF_RANGE", false, "The requested position is outside the snapshot."},
    {100, "UNKNOWN_TOPIC_ID", true, "The broker does not host a topic with this id."},
    {101, "DUPLICATE_BROKER_REGISTRATION", false, "Another broker is already registered with this id."},
    {102, "BROKER_ID_NOT_REGISTERED", false, "No broker is registered with this id."},
    {103, "INCONSISTENT_TOPIC_ID", true, "The topic id in the request does not match the partition's log."},
    {104, "INCONSISTENT_CLUSTER_ID", false, "The cluster id in the request does not match the server's."},
    {105, "TRANSACTIONAL_ID_NOT_FOUND", false, "The transactional id does not exist."},
    {106, "FETCH_SESSION_TOPIC_ID_ERROR", true,
     "The fetch session mixed requests with and without topic ids inconsistently."},
    {107, "INELIGIBLE_REPLICA", false, "The proposed in-sync replica set contains an ineligible replica."},
    {108, "NEW_LEADER_ELECTED", false,
     "The partition state was updated, but a different leader has since been elected."},
    {109, "OFFSET_MOVED_TO_TIERED_STORAGE", false, "The requested offset has been moved to tiered storage."},
    {110, "FENCED_MEMBER_EPOCH", false,
     "The coordinator fenced the member epoch; the member must give up its partitions and rejoin."},
    {111, "UNRELEASED_INSTANCE_ID", false,
     "The instance id is still held by another member, which has to leave the group first."},
    {112, "UNSUPPORTED_ASSIGNOR", false, "The group does not support the requested assignor or its versions."},
    {113, "STALE_MEMBER_EPOCH", false,
     "The member epoch is out of date; retry after the next heartbeat delivers the current one."},
    {114, "MISMATCHED_ENDPOINT_TYPE", false,
     "The request reached an endpoint of the wrong kind (broker vs controller)."},
    {115, "UNSUPPORTED_ENDPOINT_TYPE", false, "This endpoint type is not supported yet."},
    {116, "UNKNOWN_CONTROLLER_ID", false, "No controller with this id is known."},
    {117, "UNKNOWN_SUBSCRIPTION_ID", false, "The telemetry subscription id is unknown or out of date."},
    {118, "TELEMETRY_TOO_LARGE", false, "The pushed telemetry exceeds the size the broker accepts."},
    {119, "INVALID_REGISTRATION", false, "The controller considers the broker registration invalid."},
    {120, "TRANSACTION_ABORTABLE", false,
     "The transaction hit a server error; aborting it lets the transactional id be used again."},
    {121, "INVALID_RECORD_STATE", false, "The record's delivery state does not allow this acknowledgement."},
    {122, "SHARE_SESSION_NOT_FOUND", true, "The broker does not know this share session."},
    {123, "INVALID_SHARE_SESSION_EPOCH", true, "The share session epoch does not match the broker's."},
    {124, "FENCED_STATE_EPOCH", false, "The share-group state epoch does not match the share coordinator's."},
    {125, "INVALID_VOTER_KEY", false, "The voter key does not match the receiving replica."},
    {126, "DUPLICATE_VOTER", false, "The voter is already in the voter set."},
    {127, "VOTER_NOT_FOUND", false, "The voter is not in the voter set."},
    {128, "INVALID_REGULAR_EXPRESSION", false, "The subscription regular expression is not valid."},
    {129, "REBOOTSTRAP_REQUIRED", false,
     "The client's view of the cluster is stale; it should bootstrap its metadata again."},
    {130, "STREAMS_INVALID_TOPOLOGY", false, "The streams topology is not valid."},
    {131, "STREAMS_INVALID_TOPOLOGY_EPOCH", false, "The streams topology epoch is not valid."},
    {132, "STREAMS_TOPOLOGY_FENCED", false, "The streams topology epoch is out of date."},
    {133, "SHARE_SESSION_LIMIT_REACHED", true, "No new share session can be opened; the limit has been reached."},
    {134, "GROUP_DELETION_FAILED", false, "Some groups could not be deleted; see the per-group error messages."},
    {135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED", false,
     "The broker could not apply the streams topology description update."},
    {136, "PARTITION_OPERATION_IN_PROGRESS", false,
     "A partition creation or deletion is already in progress for this topic."},
    {137, "INVALID_DELETE_PARTITION_COUNT", false, "The partition count requested for deletion is not valid."},
};

static_assert(sizeof(kErrors) / sizeof(kErrors[0]) == kMaxKnownErrorCode - kMinKnownErrorCode + 1);

constexpr bool table_is_contiguous() {
  std::int16_t expect = kMinKnownErrorCode;
  for (const auto& e : kErrors) {
    if (e.code != expect) return false;
    ++expect;
  }
  return true;
}
static_assert(table_is_contiguous(), "error table must list every code in order");

const ErrorInfo* find(std::int16_t code) noexcept {
  if (code < kMinKnownErrorCode || code > kMaxKnownErrorCode) return nullptr;
  return &kErrors[code - kMinKnownErrorCode];
}

// Names for codes outside the table, made once per code and kept for the life
// of the program so the returned views never dangle. std::map nodes do not move.
std::string_view unknown_name(std::int16_t code) {
  static std::mutex mu;
  static std::map<std::int16_t, std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(code);
  if (it == names.end()) it = names.emplace(code, "UNKNOWN_ERROR_CODE_" + std::to_string(code)).first;
  return it->second;
}

class KafkaCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "kafka"; }
  std::string message(int value) const override {
    if (value < INT16_MIN || value > INT16_MAX) return "error code out of int16 range: " + std::to_string(value);
    const auto code = static_cast<std::int16_t>(value);
    std::string out(error_name(code));
    auto desc = error_description(code);
    if (!desc.empty()) {
      out += ": ";
      out += desc;
    }
    return out;
  }
};

}  // namespace

bool is_known_error(std::int16_t code) noexcept { return find(code) != nullptr; }

std::string_view error_name(std::int16_t code) {
  if (const auto* e = find(code)) return e->name;
  return unknown_name(code);
}

bool is_retriable(std::int16_t code) noexcept {
  const auto* e = find(code);
  return e != nullptr && e->retriable;
}

std::string_view error_description(std::int16_t code) noexcept {
  if (const auto* e = find(code)) return e->description;
  return "The broker returned an error code this client does not know.";
}

const std::error_category& kafka_category() noexcept {
  static const KafkaCategory category;
  return category;
}

}  // namespace kwire::protocol
