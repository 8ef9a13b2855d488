// KafkaSink: Spark's Kafka sink contract and kwire's exactly-once mode
// (kafka_sink.hpp gives the protocol).
#include "kwire/source/kafka_sink.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/arrow_records.hpp"
#include "kwire/source/warnings.hpp"

namespace kwire::source {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool parse_bool(const std::string& name, const std::string& text) {
  const std::string v = lower(text);
  if (v == "true") return true;
  if (v == "false") return false;
  throw SinkOptionError(fmt::format("Option '{}' must be true or false, not '{}'", name, text));
}

// The metadata of the offsets a batch commits: "<query id>:<batch id>".
std::string batch_metadata(const std::string& query_id, std::int64_t batch_id) {
  return query_id + ":" + std::to_string(batch_id);
}

// The batch id in `metadata` when it was written by query `query_id`; nullopt otherwise.
std::optional<std::int64_t> batch_id_of(const std::string& metadata, const std::string& query_id) {
  if (metadata.size() <= query_id.size() + 1 || metadata.compare(0, query_id.size(), query_id) != 0 ||
      metadata[query_id.size()] != ':')
    return std::nullopt;
  const char* first = metadata.data() + query_id.size() + 1;
  const char* last = metadata.data() + metadata.size();
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last || v < 0) return std::nullopt;
  return v;
}

}  // namespace

KafkaSinkOptions KafkaSinkOptions::parse(const std::map<std::string, std::string>& options) {
  // Spark's data source options are case-insensitive (CaseInsensitiveMap);
  // the producer properties keep their case after the prefix.
  KafkaSinkOptions out;
  for (const auto& [key, value] : options) {
    const std::string k = lower(key);
    if (k.rfind("kafka.", 0) == 0) {
      out.producer_properties[key.substr(6)] = value;
    } else if (k == "topic") {
      out.topic = value;
    } else if (k == "exactlyonce") {
      out.exactly_once = parse_bool("exactlyOnce", value);
    }
  }
  auto given = [&](const char* name) {
    for (const auto& [k, _] : out.producer_properties)
      if (lower(k) == name) return true;
    return false;
  };
  // KafkaSourceProvider.validateSinkOptions / kafkaParamsForProducer.
  if (given("key.serializer"))
    throw SinkOptionError(
        "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer.");
  if (given("value.serializer"))
    throw SinkOptionError(
        "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer.");
  if (!given("bootstrap.servers"))
    throw SinkOptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer");
  if (!out.exactly_once && given("transactional.id"))
    throw SinkOptionError(
        "Option 'kafka.transactional.id' is only used with exactlyOnce=true (kwire's exactly-once Kafka sink names "
        "the transactional id after the query)");
  return out;
}

KafkaSink::KafkaSink(const std::map<std::string, std::string>& options, Mapper mapper)
    : KafkaSink(KafkaSinkOptions::parse(options), std::move(mapper)) {}

KafkaSink::KafkaSink(KafkaSinkOptions options, Mapper mapper)
    : options_(std::move(options)), mapper_(std::move(mapper)) {}

KafkaSink::~KafkaSink() { drop_producer(true); }

std::string KafkaSink::description() const {
  return fmt::format("KafkaSink[{}{}]", options_.topic ? "topic=" + *options_.topic : std::string("topic column"),
                     options_.exactly_once ? ", exactlyOnce" : "");
}

void KafkaSink::prepare_batch(const BatchContext& context) { context_ = context; }

// The batch the group holds, by this query (the highest batch id among its
// committed offsets' metadata, once no transaction holds them:
// require_stable), and the offsets committed with it.
void KafkaSink::read_last_committed_batch() {
  client::GroupAdmin groups(*admin_);
  last_committed_ = -1;
  last_committed_end_.clear();
  const auto committed = groups.committed_offsets(transactional_id_, {}, true);
  for (const auto& [tp, o] : committed)
    if (auto id = batch_id_of(o.metadata, context_->query_id)) last_committed_ = std::max(last_committed_, *id);
  for (const auto& [tp, o] : committed)
    if (batch_id_of(o.metadata, context_->query_id) == last_committed_)
      last_committed_end_[tp.topic][tp.partition] = o.offset;
}

void KafkaSink::open_producer() {
  auto props = options_.producer_properties;
  if (options_.exactly_once) {
    if (!props.contains("transactional.id")) props["transactional.id"] = "kwire-query-" + context_->query_id;
    transactional_id_ = props["transactional.id"];
  }
  producer_ = std::make_unique<client::Producer>(props);
  if (!options_.exactly_once) return;
  try {
    if (!admin_) admin_ = std::make_unique<client::KafkaClient>(options_.producer_properties);
    producer_->init_transactions();
    read_last_committed_batch();
  } catch (...) {
    drop_producer(false);
    throw;
  }
}

void KafkaSink::drop_producer(bool abort) noexcept {
  if (!producer_) return;
  if (abort && in_txn_) {
    try {
      producer_->abort_transaction();
    } catch (...) {
      // Fenced or fatal: the next init_transactions of the query aborts it.
    }
  }
  in_txn_ = false;
  try {
    producer_->close(std::chrono::milliseconds(0));
  } catch (...) {
  }
  producer_.reset();
}

// Aborts the open transaction (when the producer still can) and drops the
// producer, then rethrows the current exception; a ProducerFencedError (from
// the failure or from the abort, which says "fenced" where a record only
// failed) is raised naming the transactional id.
void KafkaSink::fail_transaction() {
  std::exception_ptr error = std::current_exception();
  auto fenced = [&](const client::ProducerFencedError& e) {
    error = std::make_exception_ptr(client::ProducerFencedError(
        e.code(), fmt::format("Kafka sink: another process of this query (same checkpoint id) took over the "
                              "transactional id {}, or this batch's transaction ran past transaction.timeout.ms "
                              "and was aborted; this sink writes nothing more: {}",
                              transactional_id_, e.what())));
    fenced_ = error;
  };
  try {
    std::rethrow_exception(error);
  } catch (const client::ProducerFencedError& e) {
    fenced(e);
  } catch (...) {
  }
  if (producer_ && in_txn_) {
    try {
      producer_->abort_transaction();
    } catch (const client::ProducerFencedError& e) {
      fenced(e);
    } catch (...) {
      // Fatal, or the broker is away: the next init_transactions of the query aborts it.
    }
  }
  in_txn_ = false;
  context_.reset();
  drop_producer(false);
  std::rethrow_exception(error);
}

// The batch's end offsets of the source partitions that still exist. A topic
// deleted under failOnDataLoss=false stays in the end offsets of the batch
// planned before its deletion (and of every replay of it), but the group
// coordinator refuses offsets for it (UNKNOWN_TOPIC_OR_PARTITION) and drops
// the offsets it held: those partitions are neither committed nor compared.
checkpoint::PartitionOffsets KafkaSink::existing_end() {
  std::vector<std::string> topics;
  for (const auto& [topic, parts] : context_->end) topics.push_back(topic);
  if (topics.empty()) return {};
  const client::ClusterMetadata md = admin_->metadata(topics);
  checkpoint::PartitionOffsets out;
  std::vector<std::string> gone;
  for (const auto& [topic, parts] : context_->end) {
    const client::TopicMetadata* t = md.topic(topic);
    const bool unknown =
        !t || t->error_code == static_cast<std::int16_t>(protocol::ErrorCode::unknown_topic_or_partition);
    for (const auto& entry : parts) {
      const std::int32_t partition = entry.first;
      const bool exists = !unknown && std::any_of(t->partitions.begin(), t->partitions.end(),
                                                  [&](const auto& p) { return p.partition == partition; });
      if (exists) out[topic][partition] = entry.second;
      else gone.push_back(fmt::format("{}-{}", topic, partition));
    }
  }
  if (!gone.empty())
    log_warning(
        fmt::format("Kafka sink: batch {} leaves the source partitions that no longer exist ({}) out of "
                    "the offsets committed to group {}",
                    context_->batch_id, fmt::join(gone, ", "), transactional_id_));
  return out;
}

void KafkaSink::begin_batch(std::int64_t batch_id) {
  if (options_.exactly_once && !context_)
    throw SinkOptionError(
        "exactlyOnce=true needs a streaming query with a checkpoint: a batch write cannot be exactly once");
  if (options_.exactly_once && context_->batch_id != batch_id)
    throw std::logic_error(
        fmt::format("KafkaSink: batch {} begun after batch {} was prepared", batch_id, context_->batch_id));
  // Fenced once, fenced for good: opening a producer again would fence the
  // newer process in turn.
  if (fenced_) std::rethrow_exception(fenced_);
  if (in_txn_) drop_producer(true);  // the previous batch failed inside its transaction
  // At-least-once: records of a batch that failed before its commit may be
  // in flight; their outcome belongs to that batch.
  if (batch_open_ && producer_ && !options_.exactly_once) producer_->flush();
  batch_id_ = batch_id;
  batch_open_ = true;
  rows_ = 0;
  skip_ = false;
  {
    std::lock_guard lock(error_mu_);
    first_error_ = nullptr;
    failed_ = false;
  }
  if (!producer_) open_producer();
  if (!options_.exactly_once) return;
  if (batch_id <= last_committed_) {
    // Only the replay of the very batch the group holds, over the same
    // offsets, was committed before a crash. Anything else means the
    // checkpoint is behind what this query id wrote to Kafka (a stale copy of
    // it, or offsets/ and commits/ removed): writing would double rows.
    if (!context_->replay || batch_id != last_committed_ || existing_end() != last_committed_end_)
      throw KafkaSinkError(fmt::format(
          "Kafka sink: the checkpoint's batch {} ({}) is not the last batch this query committed to Kafka "
          "(batch {} in group {}): the checkpoint is behind its output, e.g. an older copy of it; refusing to "
          "write rows twice",
          batch_id, context_->replay ? "a replay" : "a new batch", last_committed_, transactional_id_));
    skip_ = true;
    ++batches_skipped_;
    log_warning(
        fmt::format("Kafka sink: batch {} was committed to Kafka (transaction of {}) before the query stopped; "
                    "its rows are not written again",
                    batch_id, transactional_id_));
    return;
  }
  try {
    producer_->begin_transaction();
  } catch (...) {
    drop_producer(false);
    throw;
  }
  in_txn_ = true;
}

void KafkaSink::send(const client::ProducerRecordView& record) {
  if (options_.exactly_once) {
    // A failed record fails the commit (TransactionAbortableError).
    producer_->send(record);
    return;
  }
  producer_->send(record, [this](const client::RecordMetadata&, std::exception_ptr error) {
    if (!error) return;
    std::lock_guard lock(error_mu_);
    if (!first_error_) first_error_ = error;
    failed_ = true;
  });
}

void KafkaSink::write(std::span<const Row> rows) {
  if (!producer_ && !skip_) throw std::logic_error("KafkaSink: write without begin_batch");
  if (!skip_ && failed_) {
    std::lock_guard lock(error_mu_);
    std::rethrow_exception(first_error_);
  }
  try {
    client::ProducerRecordView v;
    for (const Row& r : rows) {
      v.topic = options_.topic ? std::string_view(*options_.topic) : r.topic;
      v.partition = r.partition;
      v.key = r.key;
      v.value = r.value;
      v.headers =
          r.headers ? std::span<const protocol::RecordHeader>(*r.headers) : std::span<const protocol::RecordHeader>();
      v.timestamp = -1;
      if (mapper_ && !mapper_(r, v)) continue;
      ++rows_;  // a batch committed before a crash counts its rows and sends none
      if (skip_) continue;
      if (v.topic.empty())
        throw ArrowRecordError(
            "The Kafka message data sent to the producer contains a null topic. Use the "
            "`topic` option for setting a default topic.");
      send(v);
    }
  } catch (...) {
    if (options_.exactly_once && !skip_) fail_transaction();
    throw;
  }
}

void KafkaSink::write_arrow(const ArrowSchema& schema, const ArrowArray& batch) {
  if (!producer_ && !skip_) throw std::logic_error("KafkaSink: write without begin_batch");
  ArrowRecordReader reader(schema, options_.topic);
  if (skip_) {
    rows_ += batch.length;
    return;
  }
  try {
    rows_ += reader.for_each(batch, [this](const client::ProducerRecordView& v) { send(v); });
  } catch (...) {
    if (options_.exactly_once) fail_transaction();
    throw;
  }
}

std::int64_t KafkaSink::commit_batch(std::int64_t batch_id) {
  if (batch_id != batch_id_)
    throw std::logic_error(fmt::format("KafkaSink: commit of batch {} while batch {} is open", batch_id, batch_id_));
  if (skip_) {
    batch_open_ = false;
    context_.reset();
    return rows_;
  }
  if (!producer_) throw std::logic_error("KafkaSink: commit without begin_batch");
  if (!options_.exactly_once) {
    producer_->flush();
    batch_open_ = false;
    std::lock_guard lock(error_mu_);
    if (first_error_) std::rethrow_exception(first_error_);
    return rows_;
  }
  checkpoint::PartitionOffsets end;
  try {
    end = existing_end();
    std::map<client::TopicPartition, client::OffsetAndMetadata> offsets;
    const std::string metadata = batch_metadata(context_->query_id, batch_id);
    for (const auto& [topic, parts] : end)
      for (const auto& [partition, offset] : parts) offsets[{topic, partition}] = {offset, -1, metadata};
    if (!offsets.empty()) producer_->send_offsets_to_transaction(offsets, {transactional_id_, "", -1, std::nullopt});
    producer_->commit_transaction();
  } catch (...) {
    // Whatever the outcome (a time-out leaves it unknown), the next batch
    // starts with init_transactions and asks the group what was committed.
    fail_transaction();
  }
  in_txn_ = false;
  batch_open_ = false;
  last_committed_ = batch_id;
  last_committed_end_ = std::move(end);
  context_.reset();
  return rows_;
}

void KafkaSink::close() { drop_producer(true); }

}  // namespace kwire::source
