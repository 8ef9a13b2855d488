// Produces synthetic user events as JSON with kwire's producer:
//   {"user_id":42,"action":"purchase","amount":12.5,"event_ts":1764480000000}
// Usage: gen_events --bootstrap HOST:PORT [--topic user-events] [--count 100000] [--seed 1]
//                   [--compression none|gzip|snappy|lz4|zstd]
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include <fmt/format.h>

#include "kwire/client/producer.hpp"

int main(int argc, char** argv) {
  std::string bootstrap = "127.0.0.1:19092", topic = "user-events", compression = "lz4";
  long count = 100000;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--bootstrap") bootstrap = v;
    else if (k == "--topic") topic = v;
    else if (k == "--count") count = std::stol(v);
    else if (k == "--seed") seed = static_cast<unsigned>(std::stoul(v));
    else if (k == "--compression") compression = v;
    else {
      fmt::print(stderr, "gen_events: unknown argument {}\n", k);
      return 2;
    }
  }
  try {
    kwire::client::Producer producer({{"bootstrap.servers", bootstrap},
                                      {"compression.type", compression},
                                      {"batch.size", "262144"},
                                      {"acks", "all"}});
    std::mt19937_64 rng(seed);
    static const char* actions[] = {"view", "click", "add_to_cart", "purchase", "refund"};
    std::uniform_int_distribution<int> action(0, 4), user(1, 5000), cents(-500, 50000);
    auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < count; ++i) {
      int u = user(rng);
      std::string value = fmt::format("{{\"user_id\":{},\"action\":\"{}\",\"amount\":{:.2f},\"event_ts\":{}}}", u,
                                      actions[action(rng)], cents(rng) / 100.0, now + i);
      std::string key = std::to_string(u);
      kwire::client::ProducerMessage msg;
      msg.topic = topic;
      msg.key = kwire::protocol::Bytes(key.begin(), key.end());
      msg.value = kwire::protocol::Bytes(value.begin(), value.end());
      producer.send(std::move(msg));
    }
    producer.flush();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("produced {} events to '{}' in {:.2f} s ({:.0f} records/s)\n", count, topic, secs, count / secs);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gen_events: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
