// kwire.from_protobuf: a column of Protobuf values (plain, or Confluent's wire
// format with a registry) decoded into Arrow record batches
// (source/protobuf.hpp).
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

}  // namespace

void register_protobuf(nb::module_& m) {
  nb::class_<PyProtobufReader>(m, "ProtobufReader", "Protobuf values of Kafka record batches -> Arrow")
      .def(nb::init<const nb::dict&, const std::string&, std::optional<nb::bytes>>(), nb::arg("options"),
           nb::arg("topic"), nb::arg("descriptor_set").none() = nb::none())
      .def("decode", &PyProtobufReader::decode, nb::arg("data"))
      .def_prop_ro("message_name", &PyProtobufReader::message_name);
}

}  // namespace kwire::python
