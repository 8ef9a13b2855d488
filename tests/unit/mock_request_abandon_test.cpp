// A wait cut short by its caller's own deadline gives the request up but not
// the connection (its late answer is matched by correlation id and dropped);
// a request unanswered for request.timeout.ms fails the connection.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/messages/metadata.hpp"

using namespace std::chrono_literals;
using kwire::client::Clock;
using kwire::client::Connection;
using kwire::client::ConnectionError;
using kwire::client::ConnectionOptions;
using kwire::client::TimeoutError;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using kwire::protocol::MetadataRequest;
using kwire::protocol::MetadataResponse;

namespace {

MetadataRequest all_topics() { return MetadataRequest{}; }  // null topics: all of them

}  // namespace

// A connection to a mock broker whose Metadata answers come `delay` late.
class MockRequestAbandon : public ::testing::Test {
 protected:
  Connection& connect(std::chrono::milliseconds request_timeout, std::chrono::milliseconds delay, int partitions = 1) {
    c.create_topic("t", partitions);
    ConnectionOptions opts;
    opts.request_timeout = request_timeout;
    conn = std::make_unique<Connection>(io, "127.0.0.1", c.port(c.node_ids().front()), opts);
    conn->connect(Clock::now() + 5s);
    Fault f;
    f.api = ApiKey::metadata;
    f.delay = delay;
    c.inject(f);
    return *conn;
  }
  void TearDown() override { c.clear_faults(); }

  MockCluster c;
  boost::asio::io_context io;
  std::unique_ptr<Connection> conn;
};

TEST_F(MockRequestAbandon, AShortWaitKeepsTheConnectionAndDropsTheLateAnswer) {
  Connection& conn = connect(5000ms, 400ms, 2);
  EXPECT_THROW((conn.request<MetadataResponse>(all_topics(), Clock::now() + 50ms)), TimeoutError);
  EXPECT_TRUE(conn.is_open());
  EXPECT_EQ(conn.in_flight(), 1u);
  // The next request on the same connection gets its own answer, not the
  // late one of the request given up.
  const auto r = conn.request<MetadataResponse>(all_topics(), Clock::now() + 5s);
  ASSERT_EQ(r.body.topics.size(), 1u);
  EXPECT_EQ(r.body.topics[0].partitions.size(), 2u);
  EXPECT_EQ(conn.in_flight(), 0u);
  EXPECT_TRUE(conn.is_open());
  EXPECT_EQ(c.connections_accepted(), 1);
  EXPECT_EQ(c.requests(ApiKey::metadata).size(), 2u);
}

TEST_F(MockRequestAbandon, ARequestUnansweredForRequestTimeoutFailsTheConnection) {
  Connection& conn = connect(300ms, 3000ms);
  EXPECT_THROW((conn.request<MetadataResponse>(all_topics(), Clock::now() + 50ms)), TimeoutError);
  EXPECT_TRUE(conn.is_open());
  std::this_thread::sleep_for(350ms);
  // Past request.timeout.ms with no answer: the connection is given up, and
  // a request on it says so rather than queueing behind a silent broker.
  EXPECT_FALSE(conn.is_open());
  try {
    conn.request<MetadataResponse>(all_topics(), Clock::now() + 5s);
    ADD_FAILURE() << "a request on a connection past its request timeout was sent";
  } catch (const ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("request.timeout.ms"), std::string::npos) << e.what();
  }
}

TEST_F(MockRequestAbandon, AWaitToTheRequestsOwnTimeoutFailsTheConnection) {
  Connection& conn = connect(300ms, 3000ms);
  EXPECT_THROW((conn.request<MetadataResponse>(all_topics(), Clock::now() + 300ms)), TimeoutError);
  EXPECT_FALSE(conn.is_open());
}
