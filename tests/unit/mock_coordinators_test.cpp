// The coordinator lookup (FindCoordinator for groups and transactional ids),
// its cache and "coordinator moved" rule, and the retry loop of coordinator
// requests, against a scripted FindCoordinator on the mock cluster.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "../../client/src/coordinators.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/group.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

using namespace kwire;
using namespace kwire::mock_support;
using namespace kwire::protocol;
using client::CoordinatorReply;
using client::CoordinatorType;
using client::Coordinators;
using client::RetryLoop;

namespace {

// FindCoordinator answering node `node` (or the queued errors first), and
// recording each key type and key asked for.
struct Finder {
  std::mutex mu;
  std::deque<std::int16_t> errors;
  std::int32_t node = 1;
  std::vector<std::pair<std::int8_t, std::string>> asked;
  void install(mock::MockCluster& c) {
    c.set_handler(ApiKey::find_coordinator, 0, 6,
                  [this, &c](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    (void)c;
                    Reader r{ByteSpan(p)};
                    FindCoordinatorRequest req;
                    RequestHeader h;
                    decode_request(r, req, v, &h);
                    std::lock_guard lock(mu);
                    const std::string key = v >= 4 ? req.coordinator_keys.at(0) : req.key;
                    asked.emplace_back(req.key_type, key);
                    std::int16_t e = 0;
                    if (!errors.empty()) {
                      e = errors.front();
                      errors.pop_front();
                    }
                    FindCoordinatorResponse resp;
                    resp.error_code = e;
                    resp.node_id = e ? -1 : node;
                    resp.host = "127.0.0.1";
                    resp.port = ports.at(node);
                    resp.coordinators.push_back({key, resp.node_id, "127.0.0.1", resp.port, e, std::nullopt, {}});
                    return encode_response_frame(resp, v, corr);
                  });
  }
  std::map<std::int32_t, std::int32_t> ports;
};

class MockCoordinators : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto id : cluster.node_ids()) finder.ports[id] = cluster.port(id);
    finder.install(cluster);
  }
  void fail_next(std::vector<ErrorCode> codes) {
    std::lock_guard lock(finder.mu);
    for (auto c : codes) finder.errors.push_back(static_cast<std::int16_t>(c));
  }
  RetryLoop loop(std::chrono::milliseconds budget = 5000ms) {
    return RetryLoop(client.config(), client::Clock::now() + budget, "the test call");
  }
  mock::MockCluster cluster{2};
  Finder finder;
  client::KafkaClient client{props(cluster)};
  Coordinators coordinators;
};

}  // namespace

TEST_F(MockCoordinators, LooksUpOnceAndCachesPerKeyTypeAndKey) {
  finder.node = 2;
  auto l = loop();
  EXPECT_EQ(coordinators.lookup(client, CoordinatorType::group, "g", l), 2);
  EXPECT_EQ(coordinators.lookup(client, CoordinatorType::group, "g", l), 2);
  EXPECT_EQ(coordinators.lookup(client, CoordinatorType::transaction, "g", l), 2);  // another key type
  EXPECT_EQ(coordinators.lookups(), 2u);
  EXPECT_EQ(coordinators.cached(CoordinatorType::group, "g"), std::optional<std::int32_t>(2));
  std::lock_guard lock(finder.mu);
  ASSERT_EQ(finder.asked.size(), 2u);
  EXPECT_EQ(finder.asked[0], (std::pair<std::int8_t, std::string>{0, "g"}));
  EXPECT_EQ(finder.asked[1], (std::pair<std::int8_t, std::string>{1, "g"}));
}

TEST_F(MockCoordinators, MovedCodesForgetTheNodeAndLoadingKeepsIt) {
  auto l = loop();
  coordinators.lookup(client, CoordinatorType::group, "g", l);
  EXPECT_TRUE(coordinators.answered(CoordinatorType::group, "g", static_cast<std::int16_t>(ErrorCode::coordinator_load_in_progress)));
  EXPECT_TRUE(coordinators.cached(CoordinatorType::group, "g").has_value());
  EXPECT_TRUE(coordinators.answered(CoordinatorType::group, "g", static_cast<std::int16_t>(ErrorCode::not_coordinator)));
  EXPECT_FALSE(coordinators.cached(CoordinatorType::group, "g").has_value());
  coordinators.lookup(client, CoordinatorType::group, "g", l);
  EXPECT_TRUE(coordinators.answered(CoordinatorType::group, "g", static_cast<std::int16_t>(ErrorCode::coordinator_not_available)));
  EXPECT_FALSE(coordinators.cached(CoordinatorType::group, "g").has_value());
  EXPECT_FALSE(coordinators.answered(CoordinatorType::group, "g", static_cast<std::int16_t>(ErrorCode::unknown_member_id)));
}

TEST_F(MockCoordinators, RetriableFindCoordinatorAnswersAreRetriedWithBackOff) {
  fail_next({ErrorCode::coordinator_not_available, ErrorCode::coordinator_load_in_progress,
             ErrorCode::coordinator_not_available});
  auto l = loop();
  const auto t0 = client::Clock::now();
  EXPECT_EQ(coordinators.lookup(client, CoordinatorType::transaction, "tx", l), 1);
  // retry.backoff.ms=20 doubling with 20% jitter: at least 0.8 * (20 + 40 + 80) ms.
  EXPECT_GE(client::Clock::now() - t0, 112ms);
  EXPECT_EQ(l.attempts(), 3);
  EXPECT_EQ(coordinators.lookups(), 4u);
}

TEST_F(MockCoordinators, TheDeadlineEndsTheLookupNamingTheLastError) {
  fail_next(std::vector<ErrorCode>(100, ErrorCode::coordinator_load_in_progress));
  auto l = loop(300ms);
  try {
    coordinators.lookup(client, CoordinatorType::group, "g", l);
    FAIL() << "expected a TimeoutError";
  } catch (const client::TimeoutError& e) {
    EXPECT_STREQ(e.what(), "the test call did not succeed in time (last error COORDINATOR_LOAD_IN_PROGRESS)");
  }
}

TEST_F(MockCoordinators, AuthorizationFailuresAreRaisedNotRetried) {
  fail_next({ErrorCode::group_authorization_failed, ErrorCode::transactional_id_authorization_failed});
  auto l = loop();
  EXPECT_THROW(coordinators.lookup(client, CoordinatorType::group, "g", l), client::GroupAuthorizationError);
  try {
    coordinators.lookup(client, CoordinatorType::transaction, "tx", l);
    FAIL() << "expected a KafkaError";
  } catch (const client::KafkaError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::transactional_id_authorization_failed));
    EXPECT_STREQ(e.what(), "FindCoordinator for transactional id tx: TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
  }
  EXPECT_EQ(coordinators.lookups(), 2u);
}

// call_coordinator: a NOT_COORDINATOR reply sends the next attempt to the
// node found again; a lost connection counts as a move.
TEST_F(MockCoordinators, CallCoordinatorFollowsTheCoordinatorWhenItMoves) {
  std::vector<std::int32_t> tried;
  auto l = loop();
  int n = 0;
  client::call_coordinator(client, coordinators, CoordinatorType::group, "g", l, [&](client::Connection& c) {
    tried.push_back(c.port() == cluster.port(1) ? 1 : 2);
    switch (n++) {
      case 0: {
        std::lock_guard lock(finder.mu);
        finder.node = 2;
        return CoordinatorReply::retry(static_cast<std::int16_t>(ErrorCode::not_coordinator));
      }
      case 1: return CoordinatorReply::retry(static_cast<std::int16_t>(ErrorCode::coordinator_load_in_progress));
      case 2: {
        std::lock_guard lock(finder.mu);
        finder.node = 1;
        throw client::ConnectionError("lost");
      }
      default: return CoordinatorReply::done();
    }
  });
  EXPECT_EQ(tried, (std::vector<std::int32_t>{1, 2, 2, 1}));
  EXPECT_EQ(coordinators.lookups(), 3u);
  EXPECT_EQ(l.attempts(), 3);
}
