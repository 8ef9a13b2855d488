// C++ exceptions of the core -> the Python exceptions of kwire.errors.
#include <string>

#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/client/records.hpp"
#include "kwire/client/sasl.hpp"
#include "kwire/client/schema_registry.hpp"
#include "kwire/client/share_consumer.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/batch.hpp"
#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::python {

namespace {

// Raises kwire.errors.<name>(message[, condition]) with the given attributes.
void raise(const char* name, const char* message, const char* condition = nullptr,
           std::initializer_list<std::pair<const char*, nb::object>> attrs = {}) {
  nb::object cls = nb::module_::import_("kwire.errors").attr(name);
  nb::object exc = condition ? cls(message, condition) : cls(message);
  for (const auto& attr : attrs) nb::setattr(exc, attr.first, attr.second);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const nb::builtin_exception&) {
    throw;  // nanobind's own (TypeError, ValueError, ...)
  } catch (const source::DataLossError& e) {
    const std::string condition = "KAFKA_DATA_LOSS." + std::string(source::data_loss_name(e.kind()));
    raise("KafkaDataLossError", e.what(), condition.c_str(),
          {{"topic", nb::cast(e.topic())},
           {"partition", nb::cast(e.partition())},
           {"start_offset", nb::cast(e.start_offset())},
           {"end_offset", nb::cast(e.end_offset())}});
  } catch (const source::BatchOffsetError& e) {
    raise("OffsetError", e.what(), "RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET");
  } catch (const client::LogTruncationError& e) {
    raise("LogTruncationError", e.what(), nullptr,
          {{"topic", nb::cast(e.partition().topic)},
           {"partition", nb::cast(e.partition().partition)},
           {"offset", nb::cast(e.offset())},
           {"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::OffsetOutOfRangeError& e) {
    raise("OffsetOutOfRangeError", e.what(), nullptr,
          {{"topic", nb::cast(e.partition().topic)},
           {"partition", nb::cast(e.partition().partition)},
           {"offset", nb::cast(e.offset())},
           {"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::AuthenticationError& e) {
    raise("AuthenticationError", e.what());
  } catch (const client::ProducerFencedError& e) {
    raise("ProducerFencedError", e.what(), nullptr, {{"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::TransactionAbortableError& e) {
    raise("TransactionAbortableError", e.what(), nullptr, {{"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::ProducerFatalError& e) {
    raise("ProducerFatalError", e.what(), nullptr, {{"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::TransactionStateError& e) {
    raise("TransactionStateError", e.what());
  } catch (const client::TransactionAbortedError& e) {
    raise("TransactionAbortedError", e.what());
  } catch (const client::ShareAcknowledgementModeError& e) {
    raise("ShareAcknowledgementModeError", e.what());
  } catch (const client::KafkaError& e) {
    raise("KafkaError", e.what(), nullptr, {{"code", nb::cast(static_cast<int>(e.code()))}});
  } catch (const client::ConfigError& e) {
    raise("ConfigError", e.what());
  } catch (const client::SchemaRegistryError& e) {
    raise("SchemaRegistryError", e.what(), nullptr,
          {{"http_status", nb::int_(e.http_status())}, {"error_code", nb::int_(e.error_code())}});
  } catch (const source::AvroDecodeError& e) {
    raise("MalformedRecordError", e.what(), nullptr,
          {{"topic", nb::str(e.topic().c_str())},
           {"partition", nb::int_(e.partition())},
           {"offset", nb::int_(e.offset())}});
  } catch (const client::TimeoutError& e) {
    raise("KafkaTimeoutError", e.what());
  } catch (const client::ConnectionError& e) {
    raise("KafkaConnectionError", e.what());
  } catch (const client::CorruptBatchError& e) {
    raise("CorruptBatchError", e.what());
  } catch (const checkpoint::CheckpointError& e) {
    raise("CheckpointError", e.what());
  } catch (const std::invalid_argument& e) {  // SourceOptionError, SchemaError, bad arguments
    // Spark's option errors start with their condition: "[NAME] text".
    const std::string what = e.what();
    std::string condition;
    if (what.size() > 2 && what[0] == '[') {
      const auto end = what.find(']');
      if (end != std::string::npos) condition = what.substr(1, end - 1);
    }
    raise("ConfigError", e.what(), condition.empty() ? nullptr : condition.c_str());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    raise("KwireError", e.what());
  }
}

}  // namespace

void register_errors(nb::module_&) { nb::register_exception_translator(translate); }

}  // namespace kwire::python
