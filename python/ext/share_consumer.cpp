// kwire._kwire.ShareConsumer: the client's share-group consumer (KIP-932),
// whose polls return Arrow record batches with Spark's Kafka columns, and the
// delivery counts beside them (the Python layer adds them as a column).
//
// Acknowledgement outcomes are queued by the client's offsets callback (it
// runs inside poll / commit / close, on the calling thread but with the GIL
// released, so it touches no Python object) and taken by the Python layer
// with take_acknowledgement_commits(), which gives them to the application's
// callback once the GIL is held again.
#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <tuple>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "kwire/client/share_consumer.hpp"
#include "kwire/protocol/errors.hpp"

namespace kwire::python {

namespace {

using client::AcknowledgeType;
using client::ShareRecord;
using client::TopicPartition;

AcknowledgeType ack_type(const std::string& name) {
  if (auto type = client::parse_acknowledge_type(name)) return *type;
  throw nb::value_error(
      ("kwire: acknowledge type must be 'accept', 'release', 'reject' or 'renew', not '" + name + "'").c_str());
}

// {(topic, partition): None | error name} of acknowledgement outcomes.
nb::dict results_dict(const client::AcknowledgementResults& results) {
  nb::dict out;
  for (const auto& [tp, code] : results) {
    nb::object v = nb::none();
    if (code == -1) v = nb::str("REQUEST_LOST");
    else if (code != 0) v = nb::str(std::string(protocol::error_name(code)).c_str());
    out[nb::make_tuple(tp.topic, tp.partition)] = v;
  }
  return out;
}

class PyShareConsumer {
 public:
  PyShareConsumer(const nb::dict& properties, bool include_headers)
      : consumer_(std::make_unique<client::ShareConsumer>(to_options(properties))), builder_(include_headers) {
    source::export_kafka_schema(include_headers, &schema_);
    consumer_->set_acknowledgement_offsets_callback([this](const client::AcknowledgementCommit& commit) {
      std::lock_guard lock(commits_mu_);
      if (collect_) commits_.push_back(commit);
    });
  }
  ~PyShareConsumer() {
    if (schema_.release != nullptr) schema_.release(&schema_);
  }

  client::ShareConsumer& get() {
    if (!consumer_) throw nb::value_error("kwire: the share consumer is closed");
    return *consumer_;
  }

  void close(std::int64_t timeout_ms) {
    if (!consumer_) return;
    {
      nb::gil_scoped_release release;
      consumer_->close(std::chrono::milliseconds(std::max<std::int64_t>(timeout_ms, 0)));
    }
    consumer_.reset();
  }

  // Polls (Ctrl-C can stop it) until records arrive or `timeout_ms` has
  // passed. Returns the batch and the delivery counts (int16, native order,
  // one per row) as bytes.
  nb::tuple poll(std::int64_t timeout_ms) {
    if (timeout_ms < 0) throw nb::value_error("kwire: poll timeout_ms must be >= 0");
    client::ShareConsumer& c = get();
    source::ArrowBatch batch;
    std::vector<std::int16_t> counts;
    poll_in_slices(timeout_ms, [&](std::chrono::milliseconds slice) {
      std::vector<ShareRecord> records = c.poll(slice);
      if (records.empty()) return false;
      counts.reserve(records.size());
      for (const ShareRecord& r : records) {
        builder_.append(client::consumer_record_view(r));
        counts.push_back(r.delivery_count);
      }
      batch = builder_.finish();
      last_ = std::move(records);  // kept for a renewal, which hands the record out again
      return true;
    });
    if (batch.array().release == nullptr) batch = builder_.finish();  // empty batch
    nb::bytes count_bytes(reinterpret_cast<const char*>(counts.data()), counts.size() * sizeof(std::int16_t));
    return nb::make_tuple(make_batch_object(schema_, std::move(batch)), count_bytes);
  }

  // Acknowledges the records named by (topic, partition, offset), in order;
  // the first that the last poll did not hand out (or that is acknowledged
  // already) raises ShareAcknowledgementModeError, and those before it stay
  // acknowledged.
  void acknowledge(const std::vector<std::tuple<std::string, std::int32_t, std::int64_t>>& records,
                   const std::string& type) {
    const AcknowledgeType t = ack_type(type);
    client::ShareConsumer& c = get();
    ShareRecord r;
    for (const auto& [topic, partition, offset] : records) {
      const ShareRecord* full = nullptr;
      if (t == AcknowledgeType::renew)  // the consumer keeps a copy to hand out again
        for (const ShareRecord& k : last_)
          if (k.offset == offset && k.partition == partition && k.topic == topic) {
            full = &k;
            break;
          }
      if (full) {
        c.acknowledge(*full, t);
        continue;
      }
      r.topic = topic;
      r.partition = partition;
      r.offset = offset;
      c.acknowledge(r, t);
    }
  }

  nb::dict commit_sync(std::int64_t timeout_ms) {
    client::ShareConsumer& c = get();
    client::AcknowledgementResults results;
    {
      nb::gil_scoped_release release;
      results = c.commit_sync(std::chrono::milliseconds(std::max<std::int64_t>(timeout_ms, 0)));
    }
    return results_dict(results);
  }

  nb::object schema() const { return make_schema_object(schema_); }

  // Whether outcomes are queued (only while the application has a callback);
  // turning it off drops those queued.
  void collect_acknowledgement_commits(bool on) {
    std::lock_guard lock(commits_mu_);
    collect_ = on;
    if (!on) commits_.clear();
  }

  // The outcomes queued since the last call, oldest first, as (topic,
  // partition, offsets, error code, error name): code 0 and name None when
  // acknowledged, -1 and "REQUEST_LOST" when the request was lost.
  nb::list take_acknowledgement_commits() {
    std::deque<client::AcknowledgementCommit> taken;
    {
      std::lock_guard lock(commits_mu_);
      taken.swap(commits_);
    }
    nb::list out;
    for (const auto& c : taken) {
      nb::object name = nb::none();
      if (c.error_code == -1) name = nb::str("REQUEST_LOST");
      else if (c.error_code != 0) name = nb::str(std::string(protocol::error_name(c.error_code)).c_str());
      out.append(nb::make_tuple(c.partition.topic, c.partition.partition, nb::cast(c.offsets),
                                static_cast<int>(c.error_code), name));
    }
    return out;
  }

 private:
  std::mutex commits_mu_;  // close() may run on another thread than poll()
  std::deque<client::AcknowledgementCommit> commits_;
  bool collect_ = false;
  std::unique_ptr<client::ShareConsumer> consumer_;
  std::vector<ShareRecord> last_;  // the last poll's records
  source::KafkaBatchBuilder builder_;
  ArrowSchema schema_{};
};

}  // namespace

void register_share_consumer(nb::module_& m) {
  nb::class_<PyShareConsumer>(m, "ShareConsumer")
      .def(nb::init<const nb::dict&, bool>(), nb::arg("properties"), nb::arg("include_headers") = false)
      .def("close", &PyShareConsumer::close, nb::arg("timeout_ms") = 30000)
      .def("subscribe",
           [](PyShareConsumer& self, const std::vector<std::string>& topics) {
             client::ShareConsumer& c = self.get();
             nb::gil_scoped_release release;
             c.subscribe(topics);
           })
      .def("unsubscribe",
           [](PyShareConsumer& self) {
             client::ShareConsumer& c = self.get();
             nb::gil_scoped_release release;
             c.unsubscribe();
           })
      .def("poll", &PyShareConsumer::poll, nb::arg("timeout_ms"))
      .def("acknowledge", &PyShareConsumer::acknowledge, nb::arg("records"), nb::arg("type"))
      .def("commit_sync", &PyShareConsumer::commit_sync, nb::arg("timeout_ms"))
      .def("commit_async",
           [](PyShareConsumer& self) {
             client::ShareConsumer& c = self.get();
             nb::gil_scoped_release release;
             c.commit_async();
           })
      .def("assignment",
           [](PyShareConsumer& self) {
             std::vector<std::pair<std::string, std::int32_t>> out;
             for (const TopicPartition& tp : self.get().assignment()) out.emplace_back(tp.topic, tp.partition);
             return out;
           })
      .def("acquisition_lock_ms", [](PyShareConsumer& self) { return self.get().acquisition_lock_ms(); })
      .def("member_id", [](PyShareConsumer& self) { return self.get().member_id(); })
      .def("schema", &PyShareConsumer::schema)
      .def("collect_acknowledgement_commits", &PyShareConsumer::collect_acknowledgement_commits, nb::arg("on"))
      .def("take_acknowledgement_commits", &PyShareConsumer::take_acknowledgement_commits);
}

}  // namespace kwire::python
