// KafkaSink: Spark's Kafka sink contract and kwire's exactly-once mode
// (kafka_sink.hpp gives the protocol).
#include "kwire/source/kafka_sink.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
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

// The batch id kept in a committed offset's metadata; nullopt when it is not one.
std::optional<std::int64_t> batch_id_of(const std::string& metadata) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(metadata.data(), metadata.data() + metadata.size(), v);
  if (ec != std::errc() || end != metadata.data() + metadata.size() || v < 0) return std::nullopt;
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

KafkaSink::KafkaSink(const std::map<std::string, std::string>& options) : KafkaSink(KafkaSinkOptions::parse(options)) {}

KafkaSink::KafkaSink(KafkaSinkOptions options) : options_(std::move(options)) {}

KafkaSink::~KafkaSink() { drop_producer(true); }

std::string KafkaSink::description() const {
  return fmt::format("KafkaSink[{}{}]", options_.topic ? "topic=" + *options_.topic : std::string("topic column"),
                     options_.exactly_once ? ", exactlyOnce" : "");
}

void KafkaSink::prepare_batch(const BatchContext& context) { context_ = context; }

void KafkaSink::open_producer() {
  auto props = options_.producer_properties;
  if (options_.exactly_once) {
    if (!props.contains("transactional.id")) props["transactional.id"] = "kwire-query-" + context_->query_id;
    transactional_id_ = props["transactional.id"];
  }
  producer_ = std::make_unique<client::Producer>(props);
  if (!options_.exactly_once) return;
  try {
    producer_->init_transactions();
    last_committed_ = read_last_committed_batch();
  } catch (...) {
    drop_producer(false);
    throw;
  }
}

// The highest batch id among the group's committed offsets' metadata, once
// no transaction holds them (require_stable).
std::int64_t KafkaSink::read_last_committed_batch() {
  client::KafkaClient admin(options_.producer_properties);
  client::GroupAdmin groups(admin);
  std::int64_t last = -1;
  for (const auto& [tp, committed] : groups.committed_offsets(transactional_id_, {}, true))
    if (auto id = batch_id_of(committed.metadata)) last = std::max(last, *id);
  return last;
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
                              "transactional id {}; this one cannot write any more: {}",
                              transactional_id_, e.what())));
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
  drop_producer(false);
  std::rethrow_exception(error);
}

void KafkaSink::begin_batch(std::int64_t batch_id) {
  if (options_.exactly_once && !context_)
    throw SinkOptionError(
        "exactlyOnce=true needs a streaming query with a checkpoint: a batch write cannot be exactly once");
  if (options_.exactly_once && context_->batch_id != batch_id)
    throw std::logic_error(
        fmt::format("KafkaSink: batch {} begun after batch {} was prepared", batch_id, context_->batch_id));
  if (in_txn_) drop_producer(true);  // the previous batch failed inside its transaction
  batch_id_ = batch_id;
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
  rows_ += static_cast<std::int64_t>(rows.size());
  if (skip_) return;
  if (failed_) {
    std::lock_guard lock(error_mu_);
    std::rethrow_exception(first_error_);
  }
  try {
    client::ProducerRecordView v;
    for (const Row& r : rows) {
      v.topic = options_.topic ? std::string_view(*options_.topic) : r.topic;
      if (v.topic.empty())
        throw ArrowRecordError(
            "The Kafka message data sent to the producer contains a null topic. Use the "
            "`topic` option for setting a default topic.");
      v.partition = r.partition;
      v.key = r.key;
      v.value = r.value;
      v.headers =
          r.headers ? std::span<const protocol::RecordHeader>(*r.headers) : std::span<const protocol::RecordHeader>();
      send(v);
    }
  } catch (...) {
    if (options_.exactly_once) fail_transaction();
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
  if (skip_) return rows_;
  if (!producer_) throw std::logic_error("KafkaSink: commit without begin_batch");
  if (!options_.exactly_once) {
    producer_->flush();
    std::lock_guard lock(error_mu_);
    if (first_error_) std::rethrow_exception(first_error_);
    return rows_;
  }
  try {
    std::map<client::TopicPartition, client::OffsetAndMetadata> offsets;
    const std::string metadata = std::to_string(batch_id);
    for (const auto& [topic, parts] : context_->end)
      for (const auto& [partition, offset] : parts) offsets[{topic, partition}] = {offset, -1, metadata};
    if (!offsets.empty()) producer_->send_offsets_to_transaction(offsets, {transactional_id_, "", -1, std::nullopt});
    producer_->commit_transaction();
  } catch (...) {
    // Whatever the outcome (a time-out leaves it unknown), the next batch
    // starts with init_transactions and asks the group what was committed.
    fail_transaction();
  }
  in_txn_ = false;
  last_committed_ = batch_id;
  return rows_;
}

void KafkaSink::close() { drop_producer(true); }

}  // namespace kwire::source
