// The broker's ingest ceiling for a produce shape: how many records per second
// a single broker on this host takes when the client does almost no work per
// record. The records are encoded once, into one Produce request carrying one
// record batch per partition; that same request is then written again and
// again (up to IN_FLIGHT unanswered, as a producer with
// max.in.flight.requests.per.connection=5), and every answer is checked.
//
//   kwire_produce_ceiling BROKER TOPIC PARTITIONS RECORDS SIZE [BATCH_BYTES [IN_FLIGHT]]
//       BROKER is HOST:PORT of the leader of every partition of TOPIC (a
//       single-node cluster). Each batch holds as many records of SIZE bytes
//       as fit in BATCH_BYTES (default 1,000,000: the batch.size the produce
//       comparison gives every client); acks=all, no compression, no producer
//       id (so no sequence numbers: the broker's work per record is at most
//       that of an idempotent producer); the last request carries what is
//       left of RECORDS. Prints "<acknowledged> <seconds> <records/s>",
//       seconds from the first write to the last answer. Exit status 1 when
//       an answer carries an error.
//
// The client's cost per request is one write of the request and one read of
// the answer, so the rate it reaches is what the broker (and the host's
// loopback) allow: a producer on the same host cannot go faster. A benchmark
// tool only; not part of the kwire product.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kwire/protocol/header.hpp"
#include "kwire/protocol/messages/produce.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace {

constexpr std::int16_t kVersion = 11;
using kwire::protocol::Bytes;
using kwire::protocol::ByteSpan;

int usage() {
  std::fprintf(stderr, "usage: kwire_produce_ceiling BROKER TOPIC PARTITIONS RECORDS SIZE [BATCH_BYTES [IN_FLIGHT]]\n");
  return 2;
}

int connect_to(const std::string& hostport) {
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return -1;
  const std::string host = hostport.substr(0, colon), port = hostport.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Reads one answer; false (with a message) when it is missing or carries an error.
bool read_answer(int fd, std::int16_t version, Bytes& buf) {
  std::uint8_t size_be[4];
  bool got = read_all(fd, size_be, 4);
  if (got) {
    std::uint32_t size;
    std::memcpy(&size, size_be, 4);
    buf.resize(ntohl(size));
    got = read_all(fd, buf.data(), buf.size());
  }
  if (!got) {
    std::fprintf(stderr, "kwire_produce_ceiling: the broker closed the connection\n");
    return false;
  }
  kwire::protocol::Reader r(ByteSpan(buf.data(), buf.size()));
  kwire::protocol::ProduceResponse resp;
  if (!kwire::protocol::decode_response(r, resp, version)) {
    std::fprintf(stderr, "kwire_produce_ceiling: a malformed Produce answer\n");
    return false;
  }
  for (const auto& t : resp.responses)
    for (const auto& p : t.partition_responses)
      if (p.error_code != 0) {
        std::fprintf(stderr, "kwire_produce_ceiling: partition %d answered error code %d\n", p.index, p.error_code);
        return false;
      }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) return usage();
  const std::string broker = argv[1], topic = argv[2];
  const int partitions = std::atoi(argv[3]);
  const std::uint64_t records = std::strtoull(argv[4], nullptr, 10);
  const std::size_t size = std::strtoull(argv[5], nullptr, 10);
  const std::size_t batch_bytes = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 1000000;
  const int in_flight = argc > 7 ? std::atoi(argv[7]) : 5;
  if (partitions <= 0 || records == 0 || size == 0 || batch_bytes == 0 || in_flight <= 0) return usage();

  std::vector<std::uint8_t> payload(size);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> letter('A', 'Z');
  for (auto& b : payload) b = static_cast<std::uint8_t>(letter(rng));

  // One batch per partition, as many records as fit in batch_bytes; the last
  // request carries what is left of RECORDS, spread over the partitions.
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const ByteSpan value(payload.data(), payload.size());
  kwire::protocol::RecordBatchBuilder probe;
  std::int64_t per_batch = 0;
  while (probe.append_within(batch_bytes, now_ms, std::nullopt, value, {})) ++per_batch;
  if (per_batch == 0) {
    std::fprintf(stderr, "kwire_produce_ceiling: a record of %zu bytes does not fit in a batch of %zu\n", size,
                 batch_bytes);
    return 2;
  }
  const auto per_request = static_cast<std::uint64_t>(per_batch * partitions);
  // request(counts): a Produce request frame with counts[p] records for
  // partition p (the frame holds a copy of the batches).
  auto request = [&](const std::vector<std::int64_t>& counts) {
    std::vector<kwire::protocol::RecordBatchBuilder> builders(static_cast<std::size_t>(partitions));
    kwire::protocol::ProduceRequest req;
    req.acks = -1;
    req.timeout_ms = 30000;
    req.topic_data.resize(1);
    req.topic_data[0].name = topic;
    for (int p = 0; p < partitions; ++p) {
      const auto n = counts[static_cast<std::size_t>(p)];
      if (n == 0) continue;
      auto& b = builders[static_cast<std::size_t>(p)];
      for (std::int64_t i = 0; i < n; ++i) b.append(now_ms, std::nullopt, value, {});
      const auto batch = b.finish({});
      kwire::protocol::ProduceRequest::PartitionProduceData pd;
      pd.index = p;
      pd.records.data = ByteSpan(batch.data(), batch.size());
      req.topic_data[0].partition_data.push_back(std::move(pd));
    }
    // Produce v11: topic names (v13 wants topic ids), spoken by Kafka 3.x and 4.x.
    return kwire::protocol::encode_request_frame(req, kVersion, 0, std::string("kwire-produce-ceiling"));
  };
  const std::uint64_t full = records / per_request, rest = records % per_request;
  Bytes frame = request(std::vector<std::int64_t>(static_cast<std::size_t>(partitions), per_batch));
  Bytes last;
  if (rest) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(partitions));
    for (int p = 0; p < partitions; ++p)
      counts[static_cast<std::size_t>(p)] =
          static_cast<std::int64_t>(rest / static_cast<std::uint64_t>(partitions) +
                                    (static_cast<std::uint64_t>(p) < rest % static_cast<std::uint64_t>(partitions)));
    last = request(counts);
  }

  const int fd = connect_to(broker);
  if (fd < 0) {
    std::fprintf(stderr, "kwire_produce_ceiling: cannot connect to %s\n", broker.c_str());
    return 1;
  }
  const std::uint64_t requests = full + (rest ? 1 : 0);
  Bytes answer;
  std::uint64_t sent = 0, answered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (answered < requests) {
    while (sent < requests && sent - answered < static_cast<std::uint64_t>(in_flight)) {
      const std::uint32_t corr = htonl(static_cast<std::uint32_t>(sent));
      Bytes& f = sent < full ? frame : last;
      std::memcpy(f.data() + 8, &corr, 4);  // size(4) api_key(2) api_version(2) correlation_id(4)
      if (!write_all(fd, f.data(), f.size())) {
        std::fprintf(stderr, "kwire_produce_ceiling: write failed\n");
        return 1;
      }
      ++sent;
    }
    if (!read_answer(fd, kVersion, answer)) return 1;
    ++answered;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  std::printf("%llu %.3f %.0f\n", static_cast<unsigned long long>(records), secs, static_cast<double>(records) / secs);
  return 0;
}
