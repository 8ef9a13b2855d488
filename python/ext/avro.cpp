// kwire.from_avro: a column of Avro values (plain, or Confluent's wire format
// with a registry) decoded into Arrow record batches (source/avro.hpp).
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "common.hpp"
#include "kwire/source/avro.hpp"

namespace kwire::python {

namespace {

// One reader for a run: schemas by id are fetched once, the reader schema once.
class PyAvroReader {
 public:
  PyAvroReader(const nb::dict& options, const std::string& topic)
      : options_(source::AvroFormatOptions::parse(to_options(options))) {
    nb::gil_scoped_release unlocked;
    reader_.emplace(options_, topic);
  }

  // (stream of decoded batches, malformed rows in this call, first malformed record of this call).
  nb::tuple decode(nb::handle data) {
    const std::int64_t before = reader_->malformed();
    reader_->mark_malformed();
    std::vector<source::ArrowBatch> batches;
    for_each_arrow_batch(data, "from_avro", [&](const ArrowSchema& schema, const ArrowArray& batch) {
      reader_->append_batch(schema, batch);
      batches.push_back(reader_->finish());
      return std::int64_t{0};
    });
    ArrowSchema schema{};
    reader_->export_schema(&schema);
    auto stream = std::make_unique<ArrowStreamObject>();
    source::export_stream(&schema, std::move(batches), &stream->stream);
    return nb::make_tuple(nb::cast(stream.release(), nb::rv_policy::take_ownership), reader_->malformed() - before,
                          reader_->first_malformed());
  }

  std::string reader_schema() const { return reader_->reader_schema(); }

 private:
  source::AvroFormatOptions options_;
  std::optional<source::AvroValueReader> reader_;
};

// to_avro for a run of batches: the writer schema is settled (and registered) once.
class PyAvroWriter {
 public:
  PyAvroWriter(const nb::dict& options, const std::string& topic)
      : options_(source::AvroFormatOptions::parse(to_options(options))) {
    nb::gil_scoped_release unlocked;
    writer_.emplace(options_, topic);
  }

  // A stream of batches with one binary column "value".
  nb::object encode(nb::handle data) {
    std::vector<source::ArrowBatch> batches;
    for_each_arrow_batch(data, "to_avro", [&](const ArrowSchema& schema, const ArrowArray& batch) {
      batches.push_back(writer_->encode(schema, batch));
      return std::int64_t{0};
    });
    ArrowSchema schema{};
    source::AvroEncoder::export_schema(&schema);
    auto stream = std::make_unique<ArrowStreamObject>();
    source::export_stream(&schema, std::move(batches), &stream->stream);
    return nb::cast(stream.release(), nb::rv_policy::take_ownership);
  }

  std::string writer_schema() const { return writer_->writer_schema(); }
  std::int32_t schema_id() const { return writer_->schema_id(); }

 private:
  source::AvroFormatOptions options_;
  std::optional<source::AvroValueWriter> writer_;
};

}  // namespace

void register_avro(nb::module_& m) {
  nb::class_<PyAvroWriter>(m, "AvroWriter", "Arrow rows -> Avro Kafka values (source/avro.hpp)")
      .def(nb::init<const nb::dict&, const std::string&>(), nb::arg("options"), nb::arg("topic"))
      .def("encode", &PyAvroWriter::encode, nb::arg("data"), "A stream of batches with one binary column 'value'")
      .def_prop_ro("writer_schema", &PyAvroWriter::writer_schema)
      .def_prop_ro("schema_id", &PyAvroWriter::schema_id);
  nb::class_<PyAvroReader>(m, "AvroReader", "Avro values of Kafka record batches -> Arrow (source/avro.hpp)")
      .def(nb::init<const nb::dict&, const std::string&>(), nb::arg("options"), nb::arg("topic"))
      .def("decode", &PyAvroReader::decode, nb::arg("data"),
           "(stream of decoded batches, malformed rows, the first malformed record of this call)")
      .def_prop_ro("reader_schema", &PyAvroReader::reader_schema);
}

}  // namespace kwire::python
