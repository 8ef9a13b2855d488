// kwire._kwire.Consumer: the client's Consumer, polls returning Arrow record
// batches with Spark's Kafka schema.
#include <algorithm>
#include <chrono>
#include <tuple>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "kwire/client/consumer.hpp"

namespace kwire::python {

namespace {

using client::TopicPartition;
using PartitionList = std::vector<std::pair<std::string, std::int32_t>>;

std::vector<TopicPartition> to_tps(const PartitionList& list) {
  std::vector<TopicPartition> out;
  out.reserve(list.size());
  for (const auto& item : list) out.push_back(TopicPartition{item.first, item.second});
  return out;
}

nb::dict offsets_dict(const std::map<TopicPartition, std::int64_t>& offsets) {
  nb::dict out;
  for (const auto& item : offsets) out[nb::make_tuple(item.first.topic, item.first.partition)] = item.second;
  return out;
}

class PyConsumer {
 public:
  PyConsumer(const nb::dict& properties, bool include_headers)
      : consumer_(std::make_unique<client::Consumer>(to_options(properties))), builder_(include_headers) {
    source::export_kafka_schema(include_headers, &schema_);
  }
  ~PyConsumer() {
    if (schema_.release != nullptr) schema_.release(&schema_);
  }

  client::Consumer& get() {
    if (!consumer_) throw nb::value_error("kwire: the consumer is closed");
    return *consumer_;
  }

  void close() {
    nb::gil_scoped_release release;
    consumer_.reset();
  }

  // Polls (Ctrl-C can stop it) until records arrive or `timeout_ms` has passed.
  nb::object poll(std::int64_t timeout_ms) {
    if (timeout_ms < 0) throw nb::value_error("kwire: poll timeout_ms must be >= 0");
    client::Consumer& c = get();
    source::ArrowBatch batch;
    poll_in_slices(timeout_ms, [&](std::chrono::milliseconds slice) {
      client::ConsumerRecords records = c.poll(slice);
      if (records.empty()) return false;
      for (const client::ConsumerRecord& r : records) builder_.append(r);
      batch = builder_.finish();
      return true;
    });
    if (batch.array().release == nullptr) batch = builder_.finish();  // empty batch
    return make_batch_object(schema_, std::move(batch));
  }

  nb::object schema() const { return make_schema_object(schema_); }

 private:
  std::unique_ptr<client::Consumer> consumer_;
  source::KafkaBatchBuilder builder_;
  ArrowSchema schema_{};
};

}  // namespace

void register_consumer(nb::module_& m) {
  nb::class_<PyConsumer>(m, "Consumer")
      .def(nb::init<const nb::dict&, bool>(), nb::arg("properties"), nb::arg("include_headers") = false)
      .def("close", &PyConsumer::close)
      .def("assign",
           [](PyConsumer& self, const PartitionList& partitions) {
             auto tps = to_tps(partitions);
             client::Consumer& c = self.get();
             nb::gil_scoped_release release;
             c.assign(tps);
           })
      .def("assignment",
           [](PyConsumer& self) {
             PartitionList out;
             for (const TopicPartition& tp : self.get().assignment()) out.emplace_back(tp.topic, tp.partition);
             return out;
           })
      .def("seek",
           [](PyConsumer& self, const std::string& topic, std::int32_t partition, std::int64_t offset) {
             client::Consumer& c = self.get();
             nb::gil_scoped_release release;
             c.seek(TopicPartition{topic, partition}, offset);
           })
      .def("seek_to_beginning",
           [](PyConsumer& self, const PartitionList& partitions) {
             auto tps = to_tps(partitions);
             client::Consumer& c = self.get();
             nb::gil_scoped_release release;
             c.seek_to_beginning(tps);
           })
      .def("seek_to_end",
           [](PyConsumer& self, const PartitionList& partitions) {
             auto tps = to_tps(partitions);
             client::Consumer& c = self.get();
             nb::gil_scoped_release release;
             c.seek_to_end(tps);
           })
      .def("position",
           [](PyConsumer& self, const std::string& topic, std::int32_t partition) {
             client::Consumer& c = self.get();
             nb::gil_scoped_release release;
             return c.position(TopicPartition{topic, partition});
           })
      .def("pause", [](PyConsumer& self, const PartitionList& partitions) { self.get().pause(to_tps(partitions)); })
      .def("resume", [](PyConsumer& self, const PartitionList& partitions) { self.get().resume(to_tps(partitions)); })
      .def("poll", &PyConsumer::poll, nb::arg("timeout_ms"))
      .def("schema", &PyConsumer::schema)
      .def("beginning_offsets",
           [](PyConsumer& self, const PartitionList& partitions) {
             auto tps = to_tps(partitions);
             client::Consumer& c = self.get();
             std::map<TopicPartition, std::int64_t> out;
             {
               nb::gil_scoped_release release;
               out = c.beginning_offsets(tps);
             }
             return offsets_dict(out);
           })
      .def("end_offsets",
           [](PyConsumer& self, const PartitionList& partitions) {
             auto tps = to_tps(partitions);
             client::Consumer& c = self.get();
             std::map<TopicPartition, std::int64_t> out;
             {
               nb::gil_scoped_release release;
               out = c.end_offsets(tps);
             }
             return offsets_dict(out);
           })
      .def("offsets_for_times",
           [](PyConsumer& self, const std::vector<std::tuple<std::string, std::int32_t, std::int64_t>>& timestamps) {
             std::map<TopicPartition, std::int64_t> query;
             for (const auto& t : timestamps) query[TopicPartition{std::get<0>(t), std::get<1>(t)}] = std::get<2>(t);
             client::Consumer& c = self.get();
             std::map<TopicPartition, std::optional<client::ListedOffset>> found;
             {
               nb::gil_scoped_release release;
               found = c.offsets_for_times(query);
             }
             nb::dict out;
             for (const auto& item : found) {
               nb::object value = nb::none();
               if (item.second) value = nb::make_tuple(item.second->offset, item.second->timestamp);
               out[nb::make_tuple(item.first.topic, item.first.partition)] = value;
             }
             return out;
           });
}

}  // namespace kwire::python
