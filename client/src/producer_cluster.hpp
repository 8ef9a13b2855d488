// KafkaClient as the producer's sender thread sees it (internal): leaders
// and topic ids from the metadata cache, pipelined requests to brokers over
// the client's connections (each remembers the connection it went out on, so
// an answer on a replaced connection is known to be lost), and one wait for
// any answer, a time, or a wake-up from another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/messages/produce.hpp"

namespace kwire::client {

class ProducerCluster {
 public:
  explicit ProducerCluster(KafkaClient& client);
  ~ProducerCluster();
  ProducerCluster(const ProducerCluster&) = delete;
  ProducerCluster& operator=(const ProducerCluster&) = delete;

  KafkaClient& client() noexcept { return c_; }

  struct Leader {
    std::int32_t node = -1;  // -1: none known
    std::int32_t epoch = -1;
  };
  /// The partition's leader from the metadata cache (no request).
  Leader leader(const TopicPartition& tp) const;
  /// KIP-951: a Produce answer named the partition's new leader; see
  /// KafkaClient::take_leader_hint. True when the cache took it.
  bool new_leader(const TopicPartition& tp, const protocol::ProduceResponse& answer,
                  const protocol::ProduceResponse::PartitionProduceResponse& p);
  /// The partition count of a topic from the cache (0: unknown), and the
  /// topic's error code in the last metadata.
  std::int32_t partition_count(const std::string& topic, std::int16_t* error = nullptr) const;
  std::optional<protocol::Uuid> topic_id(const std::string& topic) const;
  const std::string* topic_name(const protocol::Uuid& id) const;

  /// The connection to a broker (connecting when needed). Throws ConnectionError.
  Connection& connection(std::int32_t node);
  /// Forgets a broker's connection (its requests in flight are lost).
  void drop(std::int32_t node);

  /// A request in flight.
  struct Sent {
    std::int32_t node = -1;
    std::int32_t corr = 0;
    std::int16_t version = 0;
    std::uint64_t generation = 0;  // of the connection it went out on
    Deadline deadline{};           // late after this
  };
  /// Sends a request; with `keep`, its RECORDS go out by a gather write from
  /// the memory `keep` owns (Connection::send_gather), not copied.
  template <protocol::Message M>
  Sent send(std::int32_t node, const M& request, std::int16_t version, bool expect_response, Deadline deadline,
            std::shared_ptr<const void> keep = nullptr) {
    Connection& conn = connection(node);
    Sent s;
    s.node = node;
    s.version = version;
    s.generation = generation(node);
    s.deadline = deadline;
    s.corr = keep ? conn.send_gather(request, version, expect_response, std::move(keep))
                  : conn.send(request, version, expect_response);
    return s;
  }
  /// True when receive() would not wait: answered, connection gone or replaced, or late.
  bool ready(const Sent& s) const;
  /// The answer. Throws ConnectionError (lost or replaced connection),
  /// TimeoutError (late: the connection is closed), MalformedResponseError.
  template <protocol::Message R>
  Response<R> receive(const Sent& s) {
    Connection* conn = alive(s);
    if (!conn) throw ConnectionError(fmt_lost(s));
    try {
      return conn->receive<R>(s.corr, s.version, s.deadline);
    } catch (const ConnectionError&) {
      drop(s.node);
      throw;
    } catch (const TimeoutError&) {
      drop(s.node);
      throw;
    }
  }
  /// Requests not answered on the broker's connection.
  std::size_t in_flight(std::int32_t node) const;

  /// Runs the client's I/O until something happened (a wake(), or
  /// `answered()` true: an answer read, a connection lost) or `until`
  /// passed. Other I/O (the rest of a request written as the socket takes
  /// it) goes on inside the wait. Without `answered`, any handler run ends it.
  void wait(Deadline until, const std::function<bool()>& answered = nullptr);
  /// Makes a wait() on the sender thread return. Thread-safe. A wake-up
  /// whose posted handler other I/O on the sender thread ran first (a
  /// metadata or coordinator request) still ends the next wait().
  void wake();

 private:
  std::atomic<bool> woken_{false};
  std::uint64_t generation(std::int32_t node) const;
  Connection* alive(const Sent& s) const;
  static std::string fmt_lost(const Sent& s);

  KafkaClient& c_;
  struct Guard;
  std::unique_ptr<Guard> guard_;  // keeps the I/O context waiting for work
};

}  // namespace kwire::client
