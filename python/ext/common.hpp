// Shared pieces of the extension module: Arrow objects handed to Python,
// error translation, interruptible waits.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kwire/source/arrow.hpp"

namespace kwire::python {

namespace nb = nanobind;

/// A Python exception that was raised while C++ code ran (a callback, or
/// KeyboardInterrupt): thrown through the C++ query, turned back into the
/// stored Python error once the GIL is held again.
struct PythonRaised : std::exception {
  const char* what() const noexcept override { return "a Python exception interrupted the query"; }
};

/// Holds the first Python error raised during a C++ call (GIL required to
/// store or drop it).
class PendingError {
 public:
  /// Takes the current Python error (PyErr_Occurred must be set).
  void capture();
  void capture(nb::python_error&& e);
  bool has() const noexcept { return error_.has_value(); }
  /// Raises the stored error, if any.
  void rethrow();

 private:
  std::optional<nb::python_error> error_;
};

/// A record batch exported through the C Data Interface, handed to Python
/// once: __arrow_c_array__ returns (schema capsule, array capsule).
struct ArrowBatchObject {
  ArrowSchema schema{};
  source::ArrowBatch batch;
  ArrowBatchObject() { schema.release = nullptr; }
  ~ArrowBatchObject();
  ArrowBatchObject(const ArrowBatchObject&) = delete;
  ArrowBatchObject& operator=(const ArrowBatchObject&) = delete;
};

/// A schema: __arrow_c_schema__.
struct ArrowSchemaObject {
  ArrowSchema schema{};
  ArrowSchemaObject() { schema.release = nullptr; }
  ~ArrowSchemaObject();
  ArrowSchemaObject(const ArrowSchemaObject&) = delete;
  ArrowSchemaObject& operator=(const ArrowSchemaObject&) = delete;
};

/// A stream of record batches: __arrow_c_stream__ (once).
struct ArrowStreamObject {
  ArrowArrayStream stream{};
  ArrowStreamObject() { stream.release = nullptr; }
  ~ArrowStreamObject();
  ArrowStreamObject(const ArrowStreamObject&) = delete;
  ArrowStreamObject& operator=(const ArrowStreamObject&) = delete;
};

/// A new ArrowBatchObject for `batch` with the schema `schema` (copied).
nb::object make_batch_object(const ArrowSchema& schema, source::ArrowBatch batch);
nb::object make_schema_object(const ArrowSchema& schema);

/// dict[str, str | int | float | bool] -> option map (values as Spark's
/// .option() turns them into strings: True -> "true").
std::map<std::string, std::string> to_options(const nb::dict& options);

/// Runs `work` on a worker thread with the GIL released while the calling
/// thread waits, checking for signals every 50 ms. On KeyboardInterrupt (or
/// any Python signal handler's exception) `abort` is set and `on_abort`
/// called, the worker is waited for, and the Python error raised. A Python
/// error recorded in `pending` by the worker is raised likewise; other C++
/// exceptions of the worker are rethrown (and translated).
void run_interruptible(const std::function<void()>& work, std::atomic<bool>& abort, PendingError& pending,
                       const std::function<void()>& on_abort = {});

/// Raises KeyboardInterrupt (or a signal handler's error) if a signal
/// arrived; GIL required.
void check_signals();

/// A poll that Ctrl-C can stop: calls `attempt(slice)` with the GIL
/// released, in slices of at most 100 ms, checking for signals in between,
/// until it returns true or `timeout_ms` has passed. GIL required.
void poll_in_slices(std::int64_t timeout_ms, const std::function<bool(std::chrono::milliseconds)>& attempt);

/// Calls `fn(schema, batch)` for every record batch of `data` (anything with
/// __arrow_c_stream__ or __arrow_c_array__: a pyarrow Table, RecordBatch,
/// RecordBatchReader, a polars DataFrame...), with the GIL released, and
/// returns the sum of what `fn` returns. TypeError naming `caller` for other
/// objects; source::ArrowRecordError when the stream fails.
std::int64_t for_each_arrow_batch(nb::handle data, const char* caller,
                                  const std::function<std::int64_t(const ArrowSchema&, const ArrowArray&)>& fn);

void register_errors(nb::module_& m);
void register_arrow_objects(nb::module_& m);
void register_consumer(nb::module_& m);
void register_share_consumer(nb::module_& m);
void register_stream(nb::module_& m);
void register_producer(nb::module_& m);
void register_kafka_sink(nb::module_& m);
void register_postgres_sink(nb::module_& m);
void register_planning(nb::module_& m);
void register_data_source(nb::module_& m);
void register_warnings(nb::module_& m);
void register_avro(nb::module_& m);
void register_protobuf(nb::module_& m);
void register_part_files(nb::module_& m);

}  // namespace kwire::python
