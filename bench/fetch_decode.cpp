// Captures one Fetch response from a broker and decodes it repeatedly, for the
// like-for-like decode comparison in scripts/bench (the same file is decoded
// by franz-go's kgo.ProcessFetchPartition in bench/franz).
//
//   kwire_fetch_decode capture HOST PORT TOPIC PARTITION MAX_BYTES FILE
//       Sends one Fetch v12 request (topic by name, offset 0, partition and
//       response limit MAX_BYTES, max wait 500 ms) on a plain socket and writes
//       the response body (after the response header) to FILE, the records
//       cut after the last complete batch (re-encoded with kwire's encoder).
//   kwire_fetch_decode decode FILE VERSION SECONDS
//       Parses FILE as a Fetch response body once (not timed), then for about
//       SECONDS on this thread decodes every partition's records as the
//       consumer does: decode_records (CRC-32C checked, decompression, every
//       record parsed into a RecordView; the DecodedRecords reused, as the
//       fetcher does) and ConsumerRecords handed out as Consumer::poll does
//       (fresh vectors of at most max.poll.records = 500). Prints the same line as `franz decode`.
//
// A benchmark tool only; not part of the kwire product.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kwire/client/records.hpp"
#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/header.hpp"
#include "kwire/protocol/messages/fetch.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kp = kwire::protocol;

namespace {

constexpr std::int16_t kCaptureVersion = 12;  // the last version that names topics
constexpr std::size_t kMaxPollRecords = 500;  // the consumer's max.poll.records default

// Keeps the compiler from dropping the handed-out records.
void benchmark_sink(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

void write_all(int fd, const kp::Bytes& b) {
  std::size_t done = 0;
  while (done < b.size()) {
    const ssize_t n = ::send(fd, b.data() + done, b.size() - done, 0);
    if (n <= 0) throw std::runtime_error("send failed");
    done += static_cast<std::size_t>(n);
  }
}

void read_exact(int fd, std::uint8_t* p, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, p + done, size - done, 0);
    if (n <= 0) throw std::runtime_error("connection closed while reading the response");
    done += static_cast<std::size_t>(n);
  }
}

int capture(const char* host, const char* port, const std::string& topic, std::int32_t partition,
            std::int32_t max_bytes, const char* file) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (::getaddrinfo(host, port, &hints, &ai) != 0 || !ai) throw std::runtime_error("cannot resolve the broker");
  const int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
  if (fd < 0 || ::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) throw std::runtime_error("cannot connect");
  ::freeaddrinfo(ai);

  kp::FetchRequest req;
  req.max_wait_ms = 500;
  req.min_bytes = 1;
  req.max_bytes = max_bytes;
  kp::FetchRequest::FetchTopic t;
  t.topic = topic;
  kp::FetchRequest::FetchPartition p;
  p.partition = partition;
  p.fetch_offset = 0;
  p.partition_max_bytes = max_bytes;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  write_all(fd, kp::encode_request_frame(req, kCaptureVersion, 1, std::string("kwire-capture")));

  std::uint8_t size_be[4];
  read_exact(fd, size_be, 4);
  std::uint32_t size = 0;
  std::memcpy(&size, size_be, 4);
  size = ntohl(size);
  kp::Bytes payload(size);
  read_exact(fd, payload.data(), size);
  ::close(fd);

  kp::Reader r(payload);
  kp::ResponseHeader h;
  kp::FetchResponse resp;
  if (!kp::decode_response(r, resp, kCaptureVersion, &h)) throw std::runtime_error("malformed Fetch response");
  // Keep whole batches only: a response cut at MAX_BYTES ends in a partial
  // batch (up to the producer's batch size), which decoders skip; the file is
  // the response re-encoded with the records up to the last complete batch.
  std::size_t record_bytes = 0, cut = 0;
  for (auto& tr : resp.responses)
    for (auto& pd : tr.partitions) {
      if (pd.error_code != 0) throw std::runtime_error("partition error " + std::to_string(pd.error_code));
      if (!pd.records.data) continue;
      const kp::ByteSpan all = *pd.records.data;
      std::size_t end = 0;
      while (end + kp::kLogOverhead <= all.size()) {
        const std::size_t next = end + kp::kLogOverhead + kp::load_be32(all.data() + end + 8);
        if (next > all.size()) break;
        end = next;
      }
      cut += all.size() - end;
      pd.records.data = all.first(end);
      record_bytes += end;
    }
  if (record_bytes == 0) throw std::runtime_error("the response holds no complete batch");
  const kp::Bytes body = kp::encode(resp, kCaptureVersion);
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
  if (!out) throw std::runtime_error("cannot write the capture file");
  std::printf("captured Fetch v%d: %zu bytes of whole batches (%zu bytes of a partial last batch dropped)\n",
              kCaptureVersion, record_bytes, cut);
  return 0;
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int decode(const char* file, std::int16_t version, double seconds) {
  std::ifstream in(file, std::ios::binary);
  const kp::Bytes body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kp::Reader r(body);
  kp::FetchResponse resp;
  kp::decode(r, resp, version);
  if (!r.ok()) throw std::runtime_error("cannot parse the file as a Fetch response body");

  struct Part {
    std::string topic;
    std::int32_t partition;
    kp::ByteSpan records;
  };
  std::vector<Part> parts;
  for (auto& tr : resp.responses)
    for (auto& pd : tr.partitions)
      if (pd.records.data) parts.push_back({tr.topic, pd.partition_index, *pd.records.data});

  kp::DecodeOptions opts;
  opts.check_crcs = true;
  // Reused across passes, as the fetcher reuses its DecodedRecords.
  kp::DecodedRecords decoded;
  auto pass = [&]() {
    std::size_t n = 0;
    for (const auto& p : parts) {
      decoded.clear();
      decoded.next_offset = 0;
      kp::decode_records(p.records, 0, opts, decoded);
      // Handed out as Consumer::poll does with its defaults: a fresh vector
      // grown by push_back per poll, at most max.poll.records (500) each.
      const auto& recs = decoded.records;
      for (std::size_t i = 0; i < recs.size();) {
        std::vector<kwire::client::ConsumerRecord> handed;
        for (const std::size_t stop = std::min(recs.size(), i + kMaxPollRecords); i < stop; ++i) {
          const auto& rv = recs[i];
          kwire::client::ConsumerRecord cr;
          cr.topic = &p.topic;
          cr.partition = p.partition;
          cr.offset = rv.offset;
          cr.timestamp = rv.timestamp;
          cr.timestamp_type = rv.timestamp_type;
          cr.key = rv.key;
          cr.value = rv.value;
          cr.headers = &rv.headers;
          cr.leader_epoch = rv.leader_epoch;
          handed.push_back(cr);
        }
        n += handed.size();
        benchmark_sink(handed.data());
      }
    }
    return n;
  };
  const std::size_t per_pass = pass();
  if (per_pass == 0) throw std::runtime_error("no records in the file");
  std::size_t passes = 0, total = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  double wall = 0;
  while ((wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) < seconds) {
    const std::size_t n = pass();
    if (n != per_pass) throw std::runtime_error("a pass decoded a different number of records");
    total += n;
    ++passes;
  }
  const double cpu = cpu_seconds() - cpu0;
  std::printf("records=%zu passes=%zu seconds=%.3f cpu_seconds=%.3f records_per_s=%.0f records_per_cpu_s=%.0f\n",
              per_pass, passes, wall, cpu, static_cast<double>(total) / wall, static_cast<double>(total) / cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "capture" && argc == 8)
      return capture(argv[2], argv[3], argv[4], std::stoi(argv[5]), std::stoi(argv[6]), argv[7]);
    if (cmd == "decode" && argc == 5)
      return decode(argv[2], static_cast<std::int16_t>(std::stoi(argv[3])), std::stod(argv[4]));
    std::fprintf(stderr,
                 "usage: kwire_fetch_decode capture HOST PORT TOPIC PARTITION MAX_BYTES FILE\n"
                 "       kwire_fetch_decode decode FILE VERSION SECONDS\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kwire_fetch_decode: %s\n", e.what());
    return 1;
  }
}
