// kwire._kwire.KafkaSink: the core's Kafka sink (Spark's contract, kwire's
// exactly-once mode) fed with Arrow data; a streaming query drives its
// batches (stream.cpp), a batch write calls begin / write / commit itself.
#include <memory>

#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kafka_sink.hpp"

namespace kwire::python {

PyKafkaSink::PyKafkaSink(const nb::dict& options) {
  auto opts = to_options(options);
  sink_ = std::make_unique<source::KafkaSink>(opts);
}

PyKafkaSink::~PyKafkaSink() {
  nb::gil_scoped_release release;
  sink_.reset();
}

source::KafkaSink& PyKafkaSink::get() {
  if (!sink_) throw nb::value_error("kwire: the Kafka sink is closed");
  return *sink_;
}

void register_kafka_sink(nb::module_& m) {
  nb::class_<PyKafkaSink>(m, "KafkaSink")
      .def(nb::init<const nb::dict&>(), nb::arg("options"))
      .def(
          "begin_batch",
          [](PyKafkaSink& s, std::int64_t batch_id) {
            auto& sink = s.get();
            nb::gil_scoped_release release;
            sink.begin_batch(batch_id);
          },
          nb::arg("batch_id"))
      .def(
          "write",
          [](PyKafkaSink& s, nb::handle data) {
            auto& sink = s.get();
            return for_each_arrow_batch(data, "KafkaSink.write",
                                        [&](const ArrowSchema& schema, const ArrowArray& batch) {
                                          sink.write_arrow(schema, batch);
                                          return batch.length;
                                        });
          },
          nb::arg("data"))
      .def(
          "commit_batch",
          [](PyKafkaSink& s, std::int64_t batch_id) {
            auto& sink = s.get();
            nb::gil_scoped_release release;
            return sink.commit_batch(batch_id);
          },
          nb::arg("batch_id"))
      .def("close",
           [](PyKafkaSink& s) {
             nb::gil_scoped_release release;
             if (s.sink_) s.sink_->close();
           })
      .def_prop_ro("description", [](PyKafkaSink& s) { return s.get().description(); })
      .def_prop_ro("transactional_id", [](PyKafkaSink& s) { return s.get().transactional_id(); })
      .def_prop_ro("last_committed_batch", [](PyKafkaSink& s) { return s.get().last_committed_batch(); })
      .def_prop_ro("batches_skipped", [](PyKafkaSink& s) { return s.get().batches_skipped(); });
}

}  // namespace kwire::python
