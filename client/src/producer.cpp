#include "kwire/client/producer.hpp"

#include <fmt/format.h>

#include "kwire/protocol/errors.hpp"

namespace kwire::client {

using namespace kwire::protocol;

std::int32_t murmur2(ByteSpan data) noexcept {
  // Same constants and tail handling as the Java client's Utils.murmur2.
  const std::uint32_t seed = 0x9747b28c;
  const std::uint32_t m = 0x5bd1e995;
  const int r = 24;
  const std::size_t length = data.size();
  std::uint32_t h = seed ^ static_cast<std::uint32_t>(length);
  const std::size_t length4 = length / 4;
  for (std::size_t i = 0; i < length4; ++i) {
    std::size_t i4 = i * 4;
    std::uint32_t k = std::uint32_t(data[i4]) | (std::uint32_t(data[i4 + 1]) << 8) |
                      (std::uint32_t(data[i4 + 2]) << 16) | (std::uint32_t(data[i4 + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const std::size_t tail = length & ~std::size_t{3};
  switch (length % 4) {
    case 3: h ^= std::uint32_t(data[tail + 2]) << 16; [[fallthrough]];
    case 2: h ^= std::uint32_t(data[tail + 1]) << 8; [[fallthrough]];
    case 1: h ^= std::uint32_t(data[tail]); h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<std::int32_t>(h);
}

Producer::Producer(const std::map<std::string, std::string>& properties)
    : Producer(ClientConfig::from_properties(properties)) {}
Producer::Producer(ClientConfig config) : client_(std::make_unique<KafkaClient>(std::move(config))) {}
Producer::~Producer() = default;

void Producer::send(ProducerMessage msg) {
  std::int32_t partition;
  std::int32_t count = client_->partition_count(msg.topic);
  if (msg.partition) {
    if (*msg.partition < 0 || *msg.partition >= count)
      throw ClientError(
          fmt::format("partition {} does not exist in topic '{}' ({} partitions)", *msg.partition, msg.topic, count));
    partition = *msg.partition;
  } else if (msg.key) {
    partition = static_cast<std::int32_t>((murmur2(ByteSpan(*msg.key)) & 0x7fffffff) % count);
  } else {
    auto it = sticky_partition_.find(msg.topic);
    if (it == sticky_partition_.end()) it = sticky_partition_.emplace(msg.topic, round_robin_++ % count).first;
    partition = it->second;
  }
  TopicPartition tp{msg.topic, partition};
  std::size_t size = 24 + (msg.key ? msg.key->size() : 0) + (msg.value ? msg.value->size() : 0);
  for (auto& h : msg.headers) size += h.key.size() + (h.value ? h.value->size() : 0) + 4;
  auto& batch = pending_[tp];
  batch.push_back(ProducerRecord{std::move(msg.key), std::move(msg.value), std::move(msg.headers), msg.timestamp});
  auto& bytes = pending_bytes_[tp];
  bytes += size;
  if (bytes >= static_cast<std::size_t>(std::max(client_->config().batch_size, 1))) {
    if (!msg.partition && !batch.empty()) {
      // move the sticky partition on for unkeyed records
      auto sit = sticky_partition_.find(tp.topic);
      if (sit != sticky_partition_.end() && sit->second == partition) sit->second = (partition + 1) % count;
    }
    send_batches(true);
  }
}

void Producer::flush() { send_batches(false); }

void Producer::send_batches(bool only_full) {
  std::map<TopicPartition, Bytes> batches;
  std::map<TopicPartition, std::size_t> counts;
  const auto batch_size = static_cast<std::size_t>(std::max(client_->config().batch_size, 1));
  BatchOptions opts;
  opts.compression = client_->config().compression_type;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.empty() || (only_full && pending_bytes_[it->first] < batch_size)) {
      ++it;
      continue;
    }
    Bytes out;
    encode_record_batch(it->second, opts, out);
    counts[it->first] = it->second.size();
    batches.emplace(it->first, std::move(out));
    pending_bytes_.erase(it->first);
    it = pending_.erase(it);
  }
  if (batches.empty()) return;
  auto results = client_->produce(batches);
  std::optional<std::pair<TopicPartition, std::int16_t>> failed;
  for (auto& [tp, res] : results) {
    if (res.error_code == 0) records_sent_ += counts[tp];
    else if (!failed) failed.emplace(tp, res.error_code);
  }
  if (!failed) return;
  const auto& tp = failed->first;
  const std::int16_t code = failed->second;
  const bool retriable = is_retriable(code);
  const std::string tries = retriable ? fmt::format(" after {} attempts", client_->config().retries + 1) : "";
  if (code == static_cast<std::int16_t>(ErrorCode::not_enough_replicas) ||
      code == static_cast<std::int16_t>(ErrorCode::not_enough_replicas_after_append))
    throw NotEnoughReplicasError(
        tp, code, true,
        fmt::format("produce to {} failed{}: {} (acks={}: fewer in-sync replicas than the topic's "
                    "min.insync.replicas)",
                    to_string(tp), tries, error_name(code), client_->config().acks == -1 ? "all" : "1"));
  throw ProduceError(tp, code, retriable,
                     fmt::format("produce to {} failed{}: {}", to_string(tp), tries, error_name(code)));
}

}  // namespace kwire::client
