// A TCP forwarder on 127.0.0.1 for tests: every connection accepted is
// joined to a new connection to the target port of the moment, bytes copied
// both ways until either side closes (then both are closed). set_target()
// points later connections elsewhere, as a load balancer or a DNS name that
// moves to another cluster; drop_connections() ends the ones made so far.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

namespace kwire_test {

class TcpForwarder {
 public:
  explicit TcpForwarder(std::uint16_t target)
      : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), target_(target) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TcpForwarder() {
    boost::asio::post(io_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
      for (auto& p : pairs_) p->close();
      pairs_.clear();
    });
    work_.reset();
    thread_.join();
  }
  TcpForwarder(const TcpForwarder&) = delete;
  TcpForwarder& operator=(const TcpForwarder&) = delete;

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  /// "127.0.0.1:port", for bootstrap.servers.
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }
  /// Connections accepted from now on go to `target`.
  void set_target(std::uint16_t target) { target_ = target; }
  /// Closes every connection accepted so far, both sides.
  void drop_connections() {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      for (auto& p : pairs_) p->close();
      pairs_.clear();
      done.set_value();
    });
    done.get_future().wait();
  }
  int accepted() const { return accepted_; }

 private:
  using tcp = boost::asio::ip::tcp;
  struct Pair : std::enable_shared_from_this<Pair> {
    explicit Pair(boost::asio::io_context& io) : client(io), upstream(io) {}
    tcp::socket client;
    tcp::socket upstream;
    std::array<char, 16384> to_upstream{};
    std::array<char, 16384> to_client{};
    void close() {
      boost::system::error_code ec;
      client.close(ec);
      upstream.close(ec);
    }
    // Copies what `from` sends to `to`, until an error on either.
    void pump(tcp::socket& from, tcp::socket& to, std::array<char, 16384>& buf) {
      auto self = shared_from_this();
      from.async_read_some(boost::asio::buffer(buf), [self, &from, &to, &buf](auto ec, std::size_t n) {
        if (ec) return self->close();
        boost::asio::async_write(to, boost::asio::buffer(buf.data(), n), [self, &from, &to, &buf](auto wec, auto) {
          if (wec) return self->close();
          self->pump(from, to, buf);
        });
      });
    }
  };

  void accept() {
    auto pair = std::make_shared<Pair>(io_);
    acceptor_.async_accept(pair->client, [this, pair](auto ec) {
      if (ec) return;
      ++accepted_;
      pairs_.push_back(pair);
      const tcp::endpoint to(boost::asio::ip::make_address("127.0.0.1"), target_.load());
      pair->upstream.async_connect(to, [pair](auto cec) {
        if (cec) return pair->close();
        pair->pump(pair->client, pair->upstream, pair->to_upstream);
        pair->pump(pair->upstream, pair->client, pair->to_client);
      });
      accept();
    });
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{io_.get_executor()};
  tcp::acceptor acceptor_;
  std::atomic<std::uint16_t> target_;
  std::atomic<int> accepted_{0};
  std::vector<std::shared_ptr<Pair>> pairs_;  // on the io thread only
  std::thread thread_;
};

}  // namespace kwire_test
