// Consumer::poll keeps its deadline whatever the network does, as Java's
// poll(Duration) (or Fetcher::kMinBlockingWork for shorter polls): against a
// port that takes connections and never answers, and against a port nobody
// listens on. The cluster's silence becomes an error only after
// default.api.timeout.ms across polls.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"

using namespace std::chrono_literals;
using kwire::client::Consumer;
using kwire::client::TimeoutError;
using kwire::client::TopicPartition;
using Clock = std::chrono::steady_clock;

namespace {

// A socket bound to an ephemeral loopback port; listening (connections are
// completed by the kernel and never read) or closed again (refused).
class LocalPort {
 public:
  explicit LocalPort(bool listen) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    if (listen) {
      EXPECT_EQ(::listen(fd_, 64), 0);
    } else {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~LocalPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

const TopicPartition t0{"t", 0};

std::chrono::milliseconds timed_poll(Consumer& c, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  auto records = c.poll(timeout);
  EXPECT_TRUE(records.empty());
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

}  // namespace

TEST(PollDeadline, APortThatNeverAnswersDoesNotHoldPollPastItsTimeout) {
  LocalPort silent(true);
  // The defaults (request.timeout.ms 30 s, default.api.timeout.ms 60 s)
  // used to hold this poll for 60 s.
  Consumer c({{"bootstrap.servers", silent.address()}, {"auto.offset.reset", "earliest"}});
  c.assign({t0});
  for (int i = 0; i < 3; ++i) {
    const auto took = timed_poll(c, 400ms);
    EXPECT_GE(took, 390ms);
    EXPECT_LT(took, 1500ms) << "poll " << i;
  }
}

TEST(PollDeadline, APortNobodyListensOnDoesNotHoldPollPastItsTimeout) {
  LocalPort refused(false);
  Consumer c({{"bootstrap.servers", refused.address()}, {"auto.offset.reset", "earliest"}});
  c.assign({t0});
  for (int i = 0; i < 3; ++i) {
    const auto took = timed_poll(c, 200ms);
    EXPECT_LT(took, 1500ms) << "poll " << i;
  }
}

TEST(PollDeadline, SilenceOutlastingDefaultApiTimeoutAcrossPollsIsATimeoutError) {
  LocalPort silent(true);
  Consumer c(
      {{"bootstrap.servers", silent.address()}, {"auto.offset.reset", "earliest"}, {"default.api.timeout.ms", "1500"}});
  c.assign({t0});
  const auto start = Clock::now();
  std::string error;
  int polls = 0;
  while (error.empty() && Clock::now() - start < 10s) {
    try {
      c.poll(300ms);
      ++polls;
    } catch (const TimeoutError& e) {
      error = e.what();
    }
  }
  const auto took = Clock::now() - start;
  EXPECT_GE(polls, 1);  // the polls before it returned, empty
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 3500ms);
  EXPECT_NE(error.find("default.api.timeout.ms (1500 ms)"), std::string::npos) << error;
}
