// kwire.from_avro: a column of Avro values (plain, or Confluent's wire format
// with a registry) decoded into Arrow record batches (source/avro.hpp).
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "common.hpp"
#include "kwire/source/avro.hpp"

namespace kwire::python {

namespace {

// Returns (stream of decoded batches, malformed count, first malformed record).
nb::tuple from_avro(nb::handle data, const nb::dict& options, const std::string& topic) {
  const source::AvroFormatOptions parsed = source::AvroFormatOptions::parse(to_options(options));
  std::optional<source::AvroValueReader> reader;
  {
    nb::gil_scoped_release unlocked;
    reader.emplace(parsed, topic);
  }
  std::vector<source::ArrowBatch> batches;
  for_each_arrow_batch(data, "from_avro", [&](const ArrowSchema& schema, const ArrowArray& batch) {
    reader->append_batch(schema, batch);
    batches.push_back(reader->finish());
    return std::int64_t{0};
  });
  ArrowSchema schema{};
  reader->export_schema(&schema);
  auto stream = std::make_unique<ArrowStreamObject>();
  source::export_stream(&schema, std::move(batches), &stream->stream);
  return nb::make_tuple(nb::cast(stream.release(), nb::rv_policy::take_ownership), reader->malformed(),
                        reader->first_malformed());
}

}  // namespace

void register_avro(nb::module_& m) {
  m.def("from_avro", &from_avro, nb::arg("data"), nb::arg("options"), nb::arg("topic"),
        "Decodes the value column of Kafka record batches as Avro: (stream, malformed rows, first malformed).");
}

}  // namespace kwire::python
