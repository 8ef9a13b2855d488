// Arrow objects handed to Python through the Arrow PyCapsule interface
// (__arrow_c_schema__, __arrow_c_array__, __arrow_c_stream__), and the
// helpers shared by the module's functions.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/source/arrow_records.hpp"

namespace kwire::python {

namespace {

void schema_capsule_destructor(PyObject* capsule) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, "arrow_schema"));
  if (schema == nullptr) {
    PyErr_Clear();
    return;
  }
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

void array_capsule_destructor(PyObject* capsule) {
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(capsule, "arrow_array"));
  if (array == nullptr) {
    PyErr_Clear();
    return;
  }
  if (array->release != nullptr) array->release(array);
  delete array;
}

void stream_capsule_destructor(PyObject* capsule) {
  auto* stream = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, "arrow_array_stream"));
  if (stream == nullptr) {
    PyErr_Clear();
    return;
  }
  if (stream->release != nullptr) stream->release(stream);
  delete stream;
}

nb::object schema_capsule(const ArrowSchema& schema) {
  auto* copy = new ArrowSchema;
  source::copy_schema(schema, copy);
  PyObject* cap = PyCapsule_New(copy, "arrow_schema", schema_capsule_destructor);
  if (cap == nullptr) {
    copy->release(copy);
    delete copy;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

}  // namespace

ArrowBatchObject::~ArrowBatchObject() {
  if (schema.release != nullptr) schema.release(&schema);
}
ArrowSchemaObject::~ArrowSchemaObject() {
  if (schema.release != nullptr) schema.release(&schema);
}
ArrowStreamObject::~ArrowStreamObject() {
  if (stream.release != nullptr) stream.release(&stream);
}

nb::object make_batch_object(const ArrowSchema& schema, source::ArrowBatch batch) {
  auto obj = std::make_unique<ArrowBatchObject>();
  source::copy_schema(schema, &obj->schema);
  obj->batch = std::move(batch);
  return nb::cast(obj.release(), nb::rv_policy::take_ownership);
}

nb::object make_schema_object(const ArrowSchema& schema) {
  auto obj = std::make_unique<ArrowSchemaObject>();
  source::copy_schema(schema, &obj->schema);
  return nb::cast(obj.release(), nb::rv_policy::take_ownership);
}

void PendingError::capture() {
  if (!error_) {
    error_.emplace();
  } else {
    PyErr_Clear();  // keep the first error
  }
}

void PendingError::capture(nb::python_error&& e) {
  if (!error_) error_.emplace(std::move(e));
}

void PendingError::rethrow() {
  if (error_) {
    nb::python_error e = std::move(*error_);
    error_.reset();
    throw e;
  }
}

void check_signals() {
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

void poll_in_slices(std::int64_t timeout_ms, const std::function<bool(std::chrono::milliseconds)>& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    bool got = false;
    {
      nb::gil_scoped_release release;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      got = attempt(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(100)));
    }
    if (got || std::chrono::steady_clock::now() >= deadline) return;
    check_signals();
  }
}

std::map<std::string, std::string> to_options(const nb::dict& options) {
  std::map<std::string, std::string> out;
  for (auto item : options) {
    if (!nb::isinstance<nb::str>(item.first)) {
      throw nb::type_error("kwire: option names must be strings");
    }
    std::string key = nb::cast<std::string>(item.first);
    nb::handle v = item.second;
    std::string value;
    if (nb::isinstance<nb::bool_>(v)) {
      value = nb::cast<bool>(v) ? "true" : "false";
    } else if (nb::isinstance<nb::str>(v)) {
      value = nb::cast<std::string>(v);
    } else if (nb::isinstance<nb::int_>(v) || nb::isinstance<nb::float_>(v)) {
      value = nb::cast<std::string>(nb::str(v));
    } else {
      // None, a list of topics, a dict of offsets...: the text of a Python
      // object is no option value (str(['t']) would name a topic "['t']").
      const std::string type = nb::cast<std::string>(nb::str(v.type().attr("__name__")));
      throw client::ConfigError("kwire: option '" + key + "' must be a str, int, float or bool, got " + type);
    }
    out[key] = value;
  }
  return out;
}

void run_interruptible(const std::function<void()>& work, std::atomic<bool>& abort, PendingError& pending,
                       const std::function<void()>& on_abort) {
  std::exception_ptr failure;
  // The waiting thread wakes when the work is done (not at the next tick of
  // its signal check), so a call returns as soon as its result is ready.
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      finished.notify_one();
    });
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) break;
      }
      if (abort) continue;
      nb::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        pending.capture();
        abort = true;
        if (on_abort) on_abort();
      }
    }
    worker.join();
  }
  pending.rethrow();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const PythonRaised&) {
      throw std::runtime_error("kwire: the query stopped on a Python error that was lost");
    }
  }
}

void register_arrow_objects(nb::module_& m) {
  nb::class_<ArrowBatchObject>(m, "ArrowBatch",
                               "A record batch, exported once through the Arrow PyCapsule interface "
                               "(pyarrow.record_batch(obj), polars.DataFrame(obj))")
      .def(
          "__arrow_c_array__",
          [](ArrowBatchObject& self, nb::handle /*requested_schema*/) {
            if (self.batch.array().release == nullptr) {
              throw nb::value_error("kwire: this record batch was already exported");
            }
            nb::object schema = schema_capsule(self.schema);
            auto* array = new ArrowArray;
            self.batch.move_to(array);
            PyObject* cap = PyCapsule_New(array, "arrow_array", array_capsule_destructor);
            if (cap == nullptr) {
              array->release(array);
              delete array;
              throw nb::python_error();
            }
            return nb::make_tuple(schema, nb::steal(cap));
          },
          nb::arg("requested_schema") = nb::none())
      .def("__arrow_c_schema__", [](ArrowBatchObject& self) { return schema_capsule(self.schema); })
      .def_prop_ro("num_rows", [](const ArrowBatchObject& self) { return self.batch.rows(); });

  nb::class_<ArrowSchemaObject>(m, "ArrowSchema", "A schema (Arrow PyCapsule interface: __arrow_c_schema__)")
      .def("__arrow_c_schema__", [](ArrowSchemaObject& self) { return schema_capsule(self.schema); });

  nb::class_<ArrowStreamObject>(m, "ArrowStream",
                                "A stream of record batches, exported once through the Arrow PyCapsule "
                                "interface (pyarrow.table(obj), polars.DataFrame(obj), duckdb)")
      .def(
          "__arrow_c_stream__",
          [](ArrowStreamObject& self, nb::handle /*requested_schema*/) {
            if (self.stream.release == nullptr) throw nb::value_error("kwire: this stream was already exported");
            auto* stream = new ArrowArrayStream(self.stream);
            self.stream.release = nullptr;
            PyObject* cap = PyCapsule_New(stream, "arrow_array_stream", stream_capsule_destructor);
            if (cap == nullptr) {
              stream->release(stream);
              delete stream;
              throw nb::python_error();
            }
            return nb::steal(cap);
          },
          nb::arg("requested_schema") = nb::none());
}

}  // namespace kwire::python

namespace kwire::python {

namespace {
template <class T>
struct Released {  // calls T's release callback, if any, at scope exit
  T* p;
  ~Released() {
    if (p->release) p->release(p);
  }
};
}  // namespace

std::int64_t for_each_arrow_batch(nb::handle data, const char* caller,
                                  const std::function<std::int64_t(const ArrowSchema&, const ArrowArray&)>& fn) {
  if (nb::hasattr(data, "__arrow_c_stream__")) {
    nb::object cap = data.attr("__arrow_c_stream__")();
    auto* src = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(cap.ptr(), "arrow_array_stream"));
    if (!src) throw nb::python_error();
    ArrowArrayStream stream = *src;  // moved out of the capsule
    src->release = nullptr;
    Released<ArrowArrayStream> release_stream{&stream};
    nb::gil_scoped_release unlocked;
    auto failed = [&](const char* what) {
      const char* last = stream.get_last_error(&stream);
      return source::ArrowRecordError(std::string(what) + (last ? last : "?"));
    };
    ArrowSchema schema{};
    if (stream.get_schema(&stream, &schema) != 0) throw failed("reading the Arrow stream's schema failed: ");
    Released<ArrowSchema> release_schema{&schema};
    std::int64_t total = 0;
    for (;;) {
      ArrowArray batch{};
      if (stream.get_next(&stream, &batch) != 0) throw failed("reading the Arrow stream failed: ");
      if (!batch.release) break;  // end of stream
      Released<ArrowArray> release_batch{&batch};
      total += fn(schema, batch);
    }
    return total;
  }
  if (nb::hasattr(data, "__arrow_c_array__")) {
    nb::tuple caps = nb::cast<nb::tuple>(data.attr("__arrow_c_array__")());
    auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(caps[0].ptr(), "arrow_schema"));
    auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(caps[1].ptr(), "arrow_array"));
    if (!schema || !array) throw nb::python_error();
    nb::gil_scoped_release unlocked;
    return fn(*schema, *array);  // the capsules release both
  }
  throw nb::type_error(
      (std::string("kwire: ") + caller +
       " takes an Arrow table, record batch or stream (an object with __arrow_c_stream__ or __arrow_c_array__, e.g. "
       "pyarrow.Table)")
          .c_str());
}

}  // namespace kwire::python
