#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <system_error>

#include "kwire/protocol/errors.hpp"

using namespace kwire::protocol;

TEST(Errors, NamesOfKnownCodes) {
  EXPECT_EQ(error_name(-1), "UNKNOWN_SERVER_ERROR");
  EXPECT_EQ(error_name(0), "NONE");
  EXPECT_EQ(error_name(1), "OFFSET_OUT_OF_RANGE");
  EXPECT_EQ(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
  EXPECT_EQ(error_name(6), "NOT_LEADER_OR_FOLLOWER");
  EXPECT_EQ(error_name(35), "UNSUPPORTED_VERSION");
  EXPECT_EQ(error_name(36), "TOPIC_ALREADY_EXISTS");
  EXPECT_EQ(error_name(74), "FENCED_LEADER_EPOCH");
  EXPECT_EQ(error_name(100), "UNKNOWN_TOPIC_ID");
  EXPECT_EQ(error_name(129), "REBOOTSTRAP_REQUIRED");
  EXPECT_EQ(error_name(ErrorCode::invalid_delete_partition_count), "INVALID_DELETE_PARTITION_COUNT");
  EXPECT_EQ(static_cast<std::int16_t>(ErrorCode::invalid_delete_partition_count), kMaxKnownErrorCode);
}

TEST(Errors, RetriableFlags) {
  // Retriable: transient broker or metadata conditions.
  for (auto e : {ErrorCode::corrupt_message,
                 ErrorCode::unknown_topic_or_partition,
                 ErrorCode::leader_not_available,
                 ErrorCode::not_leader_or_follower,
                 ErrorCode::request_timed_out,
                 ErrorCode::replica_not_available,
                 ErrorCode::network_exception,
                 ErrorCode::coordinator_load_in_progress,
                 ErrorCode::coordinator_not_available,
                 ErrorCode::not_coordinator,
                 ErrorCode::not_enough_replicas,
                 ErrorCode::not_enough_replicas_after_append,
                 ErrorCode::not_controller,
                 ErrorCode::concurrent_transactions,
                 ErrorCode::kafka_storage_error,
                 ErrorCode::fetch_session_id_not_found,
                 ErrorCode::invalid_fetch_session_epoch,
                 ErrorCode::fenced_leader_epoch,
                 ErrorCode::unknown_leader_epoch,
                 ErrorCode::offset_not_available,
                 ErrorCode::throttling_quota_exceeded,
                 ErrorCode::unknown_topic_id,
                 ErrorCode::share_session_limit_reached})
    EXPECT_TRUE(is_retriable(e)) << error_name(e);
  // Not retriable: the request itself is wrong, or the client must change state first.
  for (auto e : {ErrorCode::unknown_server_error, ErrorCode::none, ErrorCode::offset_out_of_range,
                 ErrorCode::broker_not_available, ErrorCode::message_too_large, ErrorCode::rebalance_in_progress,
                 ErrorCode::topic_authorization_failed, ErrorCode::unsupported_version, ErrorCode::topic_already_exists,
                 ErrorCode::invalid_request, ErrorCode::out_of_order_sequence_number, ErrorCode::producer_fenced,
                 ErrorCode::transaction_abortable, ErrorCode::rebootstrap_required, ErrorCode::new_leader_elected,
                 ErrorCode::offset_moved_to_tiered_storage})
    EXPECT_FALSE(is_retriable(e)) << error_name(e);
}

TEST(Errors, EveryKnownCodeHasAUniqueWellFormedName) {
  std::set<std::string> seen;
  for (int c = kMinKnownErrorCode; c <= kMaxKnownErrorCode; ++c) {
    const auto code = static_cast<std::int16_t>(c);
    EXPECT_TRUE(is_known_error(code));
    std::string name(error_name(code));
    ASSERT_FALSE(name.empty()) << c;
    for (char ch : name) EXPECT_TRUE(std::isupper(static_cast<unsigned char>(ch)) || ch == '_') << name;
    EXPECT_TRUE(seen.insert(name).second) << "duplicate " << name;
    if (c != 0) {
      EXPECT_FALSE(error_description(code).empty()) << name;
    }
  }
  EXPECT_TRUE(error_description(0).empty());
}

TEST(Errors, UnknownCodesDoNotCrash) {
  EXPECT_FALSE(is_known_error(138));
  EXPECT_EQ(error_name(138), "UNKNOWN_ERROR_CODE_138");
  EXPECT_EQ(error_name(-2), "UNKNOWN_ERROR_CODE_-2");
  EXPECT_EQ(error_name(INT16_MAX), "UNKNOWN_ERROR_CODE_32767");
  EXPECT_EQ(error_name(INT16_MIN), "UNKNOWN_ERROR_CODE_-32768");
  EXPECT_FALSE(is_retriable(138));
  EXPECT_FALSE(is_retriable(-2));
  EXPECT_FALSE(error_description(999).empty());
  // The returned view is stable: asking again gives the same storage.
  auto a = error_name(5000);
  auto b = error_name(5000);
  EXPECT_EQ(a.data(), b.data());
  EXPECT_EQ(a, "UNKNOWN_ERROR_CODE_5000");
}

TEST(Errors, StdErrorCodeIntegration) {
  std::error_code ok = ErrorCode::none;
  EXPECT_FALSE(ok);

  std::error_code ec = ErrorCode::not_leader_or_follower;
  EXPECT_TRUE(ec);
  EXPECT_EQ(ec.value(), 6);
  EXPECT_STREQ(ec.category().name(), "kafka");
  EXPECT_EQ(&ec.category(), &kafka_category());
  EXPECT_EQ(ec, ErrorCode::not_leader_or_follower);
  EXPECT_NE(ec, ErrorCode::leader_not_available);
  EXPECT_EQ(ec.message().rfind("NOT_LEADER_OR_FOLLOWER: ", 0), 0u) << ec.message();

  std::error_code raw = to_error_code(37);
  EXPECT_EQ(raw, ErrorCode::invalid_partitions);
  EXPECT_EQ(to_error_code(777).message(),
            "UNKNOWN_ERROR_CODE_777: "
            "The broker returned an error code this client does not know.");
  EXPECT_EQ(make_error_code(ErrorCode::none).message(), "NONE");
  // A value outside int16 cannot come from the wire but must not misbehave.
  EXPECT_FALSE(std::error_code(70000, kafka_category()).message().empty());
}
