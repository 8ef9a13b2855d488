// kwire.from_protobuf / to_protobuf: a column of Protobuf values (plain, or
// Confluent's wire format with a registry) decoded into Arrow record batches,
// and Arrow rows encoded into them (source/protobuf.hpp).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/source/protobuf.hpp"

namespace kwire::python {

namespace {

class PyProtobufReader {
 public:
  PyProtobufReader(const nb::dict& options, const std::string& topic, std::optional<nb::bytes> descriptor_set)
      : options_(source::ProtobufFormatOptions::parse(to_options(options))) {
    if (descriptor_set) options_.descriptor_set = std::string(descriptor_set->c_str(), descriptor_set->size());
    nb::gil_scoped_release unlocked;
    reader_.emplace(options_, topic);
  }

  // (stream of decoded batches, malformed rows in this call, the first malformed record of this call).
  nb::tuple decode(nb::handle data) {
    const std::int64_t before = reader_->malformed();
    reader_->mark_malformed();
    std::vector<source::ArrowBatch> batches;
    for_each_arrow_batch(data, "from_protobuf", [&](const ArrowSchema& schema, const ArrowArray& batch) {
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

  std::string message_name() const { return reader_->message_name(); }

 private:
  source::ProtobufFormatOptions options_;
  std::optional<source::ProtobufValueReader> reader_;
};

// to_protobuf for a run of batches: the writer message is settled (and registered) once.
class PyProtobufWriter {
 public:
  PyProtobufWriter(const nb::dict& options, const std::string& topic, std::optional<nb::bytes> descriptor_set)
      : options_(source::ProtobufFormatOptions::parse(to_options(options))) {
    if (descriptor_set) options_.descriptor_set = std::string(descriptor_set->c_str(), descriptor_set->size());
    nb::gil_scoped_release unlocked;
    writer_.emplace(options_, topic);
  }

  // A stream of batches with one binary column "value".
  nb::object encode(nb::handle data) {
    std::vector<source::ArrowBatch> batches;
    for_each_arrow_batch(data, "to_protobuf", [&](const ArrowSchema& schema, const ArrowArray& batch) {
      batches.push_back(writer_->encode(schema, batch));
      return std::int64_t{0};
    });
    ArrowSchema schema{};
    source::ProtobufValueWriter::export_schema(&schema);
    auto stream = std::make_unique<ArrowStreamObject>();
    source::export_stream(&schema, std::move(batches), &stream->stream);
    return nb::cast(stream.release(), nb::rv_policy::take_ownership);
  }

  std::string message_name() const { return writer_->message_name(); }
  std::int32_t schema_id() const { return writer_->schema_id(); }

 private:
  source::ProtobufFormatOptions options_;
  std::optional<source::ProtobufValueWriter> writer_;
};

}  // namespace

void register_protobuf(nb::module_& m) {
  nb::class_<PyProtobufWriter>(m, "ProtobufWriter", "Arrow rows -> Protobuf Kafka values (source/protobuf.hpp)")
      .def(nb::init<const nb::dict&, const std::string&, std::optional<nb::bytes>>(), nb::arg("options"),
           nb::arg("topic"), nb::arg("descriptor_set").none() = nb::none())
      .def("encode", &PyProtobufWriter::encode, nb::arg("data"), "A stream of batches with one binary column 'value'")
      .def_prop_ro("message_name", &PyProtobufWriter::message_name)
      .def_prop_ro("schema_id", &PyProtobufWriter::schema_id);
  nb::class_<PyProtobufReader>(m, "ProtobufReader", "Protobuf values of Kafka record batches -> Arrow")
      .def(nb::init<const nb::dict&, const std::string&, std::optional<nb::bytes>>(), nb::arg("options"),
           nb::arg("topic"), nb::arg("descriptor_set").none() = nb::none())
      .def("decode", &PyProtobufReader::decode, nb::arg("data"))
      .def_prop_ro("message_name", &PyProtobufReader::message_name);
}

}  // namespace kwire::python
