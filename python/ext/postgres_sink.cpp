// kwire._kwire.PostgresSink: the core's PostgreSQL sink. A streaming query
// hands it the source rows (stream.cpp); they are written as the CLI's
// `--sink postgres` writes them (Kafka columns, or the decoded value columns
// and the chosen Kafka columns).
#include "postgres_sink.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace kwire::python {

PyPostgresSink::PyPostgresSink(const nb::dict& options, std::optional<std::string> value_schema_ddl,
                               std::optional<std::vector<std::string>> kafka_columns) {
  source::PostgresColumns columns;
  if (value_schema_ddl) {
    columns.schema = source::Schema::parse_ddl(*value_schema_ddl);
    columns.kafka_columns.clear();
  }
  if (kafka_columns) {
    std::string list;
    for (const auto& c : *kafka_columns) list += (list.empty() ? "" : ",") + c;
    columns.kafka_columns = source::parse_kafka_columns(list);
  }
  sink_ = std::make_unique<source::PostgresSink>(to_options(options), std::move(columns));
}

PyPostgresSink::~PyPostgresSink() {
  nb::gil_scoped_release release;
  sink_.reset();
}

source::PostgresSink& PyPostgresSink::get() {
  if (!sink_) throw nb::value_error("kwire: the PostgreSQL sink is closed");
  return *sink_;
}

void register_postgres_sink(nb::module_& m) {
  nb::class_<PyPostgresSink>(m, "PostgresSink")
      .def(nb::init<const nb::dict&, std::optional<std::string>, std::optional<std::vector<std::string>>>(),
           nb::arg("options"), nb::arg("value_schema").none() = nb::none(),
           nb::arg("kafka_columns").none() = nb::none())
      .def("close",
           [](PyPostgresSink& s) {
             nb::gil_scoped_release release;
             if (s.sink_) s.sink_->close();
           })
      .def_prop_ro("description", [](PyPostgresSink& s) { return s.get().description(); })
      .def_prop_ro("batches_skipped", [](PyPostgresSink& s) { return s.get().batches_skipped(); })
      .def_prop_ro("last_committed_batch", [](PyPostgresSink& s) { return s.get().last_committed_batch(); });
}

}  // namespace kwire::python
