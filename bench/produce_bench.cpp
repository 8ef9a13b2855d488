// Produces N records of S bytes with kwire's Producer, for the produce
// comparison in scripts/bench (the same work as bench/rdkafka_produce.c and
// `franz produce`).
//
//   kwire_produce_bench BROKERS TOPIC RECORDS SIZE [-X key=value ...]
//       Sends RECORDS records without key, each with the same value of SIZE
//       random letters A-Z (generated once), to TOPIC (partitions chosen by
//       the sticky partitioner), each send() with a callback that counts
//       acknowledgements and failures; one flush() at the end. Prints
//       "<acknowledged> <seconds> <records/s>" (seconds from the first send()
//       to the end of flush()). Exit status 1 when a record failed or fewer
//       or more than RECORDS were acknowledged.
//   kwire_produce_bench BROKERS TOPIC RECORDS SIZE --per-transaction K [-X ...]
//       The same records in transactions of K records each (transactional.id
//       kwire-bench-<pid>): init_transactions(), then begin_transaction(),
//       K send()s and commit_transaction() until RECORDS are sent. Prints
//       "<acknowledged> <seconds> <records/s> <commits> <commits/s>", seconds
//       from the first begin_transaction() to the last commit.
//   kwire_produce_bench --settings [-X key=value ...]
//       Prints the producer settings in effect, read back from the parsed
//       configuration (ClientConfig::from_properties).
//
// Settings: acks=all and enable.idempotence=true (stated; both are the
// Producer's defaults), the Producer's defaults otherwise (linger.ms=5,
// batch.size=16384, compression.type=none, buffer.memory=33554432, at most 5
// requests in flight per broker), then the -X properties.
//
// A benchmark tool only; not part of the kwire product.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "kwire/client/config.hpp"
#include "kwire/client/producer.hpp"

namespace {

struct Counters {
  std::atomic<std::uint64_t> acked{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<bool> reported{false};
};

const std::map<std::string, std::string> kStated = {
    {"acks", "all"},
    {"enable.idempotence", "true"},
};

int usage() {
  std::fprintf(stderr,
               "usage: kwire_produce_bench BROKERS TOPIC RECORDS SIZE [--per-transaction K] [-X key=value ...]\n"
               "       kwire_produce_bench --settings [-X key=value ...]\n");
  return 2;
}

// Parses "-X key=value" pairs from argv[first..]; false on a malformed one.
bool parse_props(int argc, char** argv, int first, std::map<std::string, std::string>& props) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-X" && i + 1 < argc) {
      arg = argv[++i];
    } else if (arg.rfind("-X", 0) == 0) {
      arg = arg.substr(2);
    } else {
      return false;
    }
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    props[arg.substr(0, eq)] = arg.substr(eq + 1);
  }
  return true;
}

std::string describe(std::map<std::string, std::string> props) {
  props.emplace("bootstrap.servers", "127.0.0.1:9092");
  const auto c = kwire::client::ClientConfig::from_properties(props);
  std::string given;
  for (const auto& [k, v] : props) {
    if (k == "bootstrap.servers") continue;
    given += (given.empty() ? "given: " : ", ") + k + "=" + v;
  }
  return given + "; in effect: acks=" + (c.acks == -1 ? std::string("all") : std::to_string(c.acks)) +
         ", enable.idempotence=" + (c.enable_idempotence.value_or(true) ? "true" : "false") +
         ", linger.ms=" + std::to_string(c.linger_ms) + ", batch.size=" + std::to_string(c.batch_size) +
         ", buffer.memory=" + std::to_string(c.buffer_memory) +
         ", max.in.flight.requests.per.connection=" + std::to_string(c.max_in_flight_requests_per_connection) +
         ", send.buffer.bytes=" + std::to_string(c.send_buffer_bytes) +
         (c.send_buffer_bytes < 0 ? " (the kernel's auto-tuned size)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> props = kStated;
  if (argc >= 2 && std::string(argv[1]) == "--settings") {
    if (!parse_props(argc, argv, 2, props)) return usage();
    try {
      std::printf("%s\n", describe(props).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kwire_produce_bench: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (argc < 5) return usage();
  const std::string topic = argv[2];
  const std::uint64_t records = std::strtoull(argv[3], nullptr, 10);
  const std::size_t size = std::strtoull(argv[4], nullptr, 10);
  if (records == 0) return usage();
  std::uint64_t per_transaction = 0;
  int first_prop = 5;
  if (argc >= 7 && std::string(argv[5]) == "--per-transaction") {
    per_transaction = std::strtoull(argv[6], nullptr, 10);
    if (per_transaction == 0) return usage();
    first_prop = 7;
  }
  if (!parse_props(argc, argv, first_prop, props)) return usage();
  props["bootstrap.servers"] = argv[1];
  if (per_transaction) props["transactional.id"] = "kwire-bench-" + std::to_string(::getpid());

  std::vector<std::uint8_t> payload(size);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> letter('A', 'Z');
  for (auto& b : payload) b = static_cast<std::uint8_t>(letter(rng));

  Counters counters;
  try {
    kwire::client::Producer producer(props);
    kwire::client::ProducerRecordView record;
    record.topic = topic;
    record.value = kwire::protocol::ByteSpan(payload.data(), payload.size());
    Counters* c = &counters;
    if (per_transaction) producer.init_transactions();
    std::uint64_t commits = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < records; ++i) {
      if (per_transaction && i % per_transaction == 0) producer.begin_transaction();
      producer.send(record, [c](const kwire::client::RecordMetadata&, std::exception_ptr error) {
        if (!error) {
          c->acked.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        c->failed.fetch_add(1, std::memory_order_relaxed);
        if (!c->reported.exchange(true)) {
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "kwire_produce_bench: record failed: %s\n", e.what());
          }
        }
      });
      if (per_transaction && ((i + 1) % per_transaction == 0 || i + 1 == records)) {
        producer.commit_transaction();
        ++commits;
      }
    }
    producer.flush();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    producer.close();
    const std::uint64_t acked = counters.acked.load();
    const double span = secs > 0 ? secs : 1e-3;
    if (per_transaction)
      std::printf("%llu %.3f %.0f %llu %.1f\n", static_cast<unsigned long long>(acked), secs,
                  static_cast<double>(acked) / span, static_cast<unsigned long long>(commits),
                  static_cast<double>(commits) / span);
    else
      std::printf("%llu %.3f %.0f\n", static_cast<unsigned long long>(acked), secs, static_cast<double>(acked) / span);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kwire_produce_bench: %s\n", e.what());
    return 1;
  }
  const std::uint64_t acked = counters.acked.load(), failed = counters.failed.load();
  if (failed != 0 || acked != records) {
    std::fprintf(stderr, "kwire_produce_bench: %llu acknowledged, %llu failed, expected %llu\n",
                 static_cast<unsigned long long>(acked), static_cast<unsigned long long>(failed),
                 static_cast<unsigned long long>(records));
    return 1;
  }
  return 0;
}
