// kwire._kwire.Producer and Admin: the client's producer and the topic calls
// of its KafkaClient, for writing test data and small jobs.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <future>
#include <memory>

#include "common.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/arrow_records.hpp"

namespace kwire::python {

namespace {

std::optional<protocol::Bytes> to_bytes(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (nb::isinstance<nb::str>(h)) {
    std::string s = nb::cast<std::string>(h);
    return protocol::Bytes(s.begin(), s.end());
  }
  if (nb::isinstance<nb::bytes>(h)) {
    nb::bytes b = nb::borrow<nb::bytes>(h);
    const auto* p = static_cast<const std::uint8_t*>(b.data());
    return protocol::Bytes(p, p + b.size());
  }
  throw nb::type_error("kwire: keys, values and header values must be bytes, str or None");
}

class PyProducer {
 public:
  explicit PyProducer(const nb::dict& properties)
      : producer_(std::make_shared<client::Producer>(to_options(properties))) {}
  PyProducer(const PyProducer&) = delete;
  PyProducer& operator=(const PyProducer&) = delete;

  client::Producer& get() {
    if (!producer_) throw client::ClientError("the producer is closed");
    return *producer_;
  }

  void send(const std::string& topic, nb::handle value, nb::handle key, std::optional<std::int32_t> partition,
            nb::handle headers, std::optional<std::int64_t> timestamp) {
    client::ProducerMessage msg;
    msg.topic = topic;
    msg.partition = partition;
    msg.key = to_bytes(key);
    msg.value = to_bytes(value);
    msg.timestamp = timestamp.value_or(-1);
    if (!headers.is_none()) {
      auto add = [&](nb::handle key, nb::handle value) {
        std::string k;
        if (nb::isinstance<nb::str>(key)) k = nb::cast<std::string>(key);
        else if (nb::isinstance<nb::bytes>(key)) {
          nb::bytes b = nb::borrow<nb::bytes>(key);
          k.assign(static_cast<const char*>(b.data()), b.size());
        } else {
          throw nb::type_error("kwire: a header key must be str or bytes");
        }
        msg.headers.push_back(protocol::RecordHeader{std::move(k), to_bytes(value)});
      };
      if (nb::isinstance<nb::dict>(headers)) {
        for (auto [k, v] : nb::borrow<nb::dict>(headers)) add(k, v);
      } else {
        for (nb::handle item : headers) {
          if (!nb::isinstance<nb::tuple>(item) || nb::len(item) != 2)
            throw nb::type_error("kwire: headers are (key, value) pairs or a dict");
          nb::tuple t = nb::borrow<nb::tuple>(item);
          add(t[0], t[1]);
        }
      }
    }
    client::Producer& p = get();
    nb::gil_scoped_release release;
    p.send(std::move(msg));
  }

  void flush() {
    interruptible([](client::Producer& p) { p.flush(); });
  }

  // Sends what is buffered and waits for it, aborts an unfinished
  // transaction (as Java's close); never raises: delivery errors go to
  // flush(), the next call of which no longer comes.
  void close() {
    if (!producer_) return;
    nb::gil_scoped_release release;
    background_.clear();  // waits for calls a KeyboardInterrupt left running
    producer_->close();
    producer_.reset();
  }

  // A call that may wait long (flush, the transaction calls) runs on a
  // thread of its own while this one checks for signals every 100 ms:
  // Ctrl-C raises KeyboardInterrupt at once, as it does for Java's
  // InterruptException. The call itself goes on in the background (its
  // outcome is what a later call sees; close() waits for it).
  template <class F>
  void interruptible(F&& f) {
    get();  // raises when closed
    std::shared_ptr<client::Producer> p = producer_;
    auto done = std::async(std::launch::async, [p, f = std::forward<F>(f)]() mutable { f(*p); });
    for (;;) {
      {
        nb::gil_scoped_release release;
        if (done.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) break;
      }
      if (PyErr_CheckSignals() != 0) {
        background_.push_back(std::move(done));
        throw nb::python_error();
      }
    }
    done.get();  // its error, if any
  }

  // ---- transactions ----

  void send_offsets(const std::map<std::pair<std::string, std::int32_t>, std::int64_t>& offsets,
                    const std::string& group_id, const std::string& member_id, std::int32_t generation,
                    std::optional<std::string> group_instance_id) {
    std::map<client::TopicPartition, client::OffsetAndMetadata> o;
    for (const auto& [tp, off] : offsets) o[client::TopicPartition{tp.first, tp.second}].offset = off;
    client::ConsumerGroupMetadata g{group_id, member_id, generation, std::move(group_instance_id)};
    // By value: an interrupted call goes on after this frame is gone.
    interruptible([o = std::move(o), g = std::move(g)](client::Producer& p) { p.send_offsets_to_transaction(o, g); });
  }

  // Every row of an Arrow table, record batch or stream (anything with
  // __arrow_c_stream__ or __arrow_c_array__), with Spark's Kafka sink columns.
  std::int64_t produce_arrow(nb::handle data, std::optional<std::string> topic) {
    client::Producer& p = get();
    auto send = [&p](const client::ProducerRecordView& v) { p.send(v); };
    return for_each_arrow_batch(data, "produce_arrow", [&](const ArrowSchema& schema, const ArrowArray& batch) {
      return source::ArrowRecordReader(schema, topic).for_each(batch, send);
    });
  }

 private:
  std::shared_ptr<client::Producer> producer_;
  std::vector<std::future<void>> background_;  // calls interrupted in Python, still running
};

class PyAdmin {
 public:
  explicit PyAdmin(const nb::dict& properties)
      : client_(std::make_unique<client::KafkaClient>(to_options(properties))) {}

  void create_topics(const std::vector<std::pair<std::string, std::int32_t>>& topics, bool if_not_exists,
                     const std::map<std::string, std::string>& configs) {
    std::vector<client::NewTopic> list;
    for (const auto& t : topics) list.push_back(client::NewTopic{t.first, t.second, 1, configs});
    nb::gil_scoped_release release;
    client_->create_topics(list, if_not_exists);
  }

  void delete_topics(const std::vector<std::string>& topics) {
    nb::gil_scoped_release release;
    client_->delete_topics(topics);
  }

  nb::dict delete_records(const std::vector<std::tuple<std::string, std::int32_t, std::int64_t>>& before) {
    std::map<client::TopicPartition, std::int64_t> query;
    for (const auto& t : before) query[client::TopicPartition{std::get<0>(t), std::get<1>(t)}] = std::get<2>(t);
    std::map<client::TopicPartition, std::int64_t> low;
    {
      nb::gil_scoped_release release;
      low = client_->delete_records(query);
    }
    nb::dict out;
    for (const auto& item : low) out[nb::make_tuple(item.first.topic, item.first.partition)] = item.second;
    return out;
  }

  // IncrementalAlterConfigs of one resource: `configs` maps a key to its new
  // value, or to None to remove it (back to the default). Raises KafkaError
  // with the broker's message when the broker refuses.
  void alter_configs(const std::string& kind, const std::string& name,
                     const std::map<std::string, std::optional<std::string>>& configs) {
    auto parsed = client::parse_config_resource_kind(kind);
    if (!parsed)
      throw nb::value_error(
          ("kwire: resource type must be topic, broker, broker-logger, client-metrics or group, not '" + kind + "'")
              .c_str());
    std::vector<client::ConfigChange> changes;
    for (const auto& [key, value] : configs)
      changes.push_back({key, value ? client::ConfigChange::Op::set : client::ConfigChange::Op::remove, value});
    client::ResourceResult result;
    {
      nb::gil_scoped_release release;
      client::Admin admin(*client_);
      result = admin.alter_configs({*parsed, name}, changes);
    }
    if (result.error_code != 0)
      throw client::KafkaError(result.error_code,
                               "IncrementalAlterConfigs of " + kind + " '" + name +
                                   "': " + std::string(protocol::error_name(result.error_code)) +
                                   (result.error_message.empty() ? "" : ": " + result.error_message));
  }

  void close() {
    nb::gil_scoped_release release;
    client_.reset();
  }

 private:
  std::unique_ptr<client::KafkaClient> client_;
};

}  // namespace

void register_producer(nb::module_& m) {
  nb::class_<PyProducer>(m, "Producer")
      .def(nb::init<const nb::dict&>(), nb::arg("properties"))
      .def("send", &PyProducer::send, nb::arg("topic"), nb::arg("value").none() = nb::none(),
           nb::arg("key").none() = nb::none(), nb::arg("partition").none() = nb::none(),
           nb::arg("headers").none() = nb::none(), nb::arg("timestamp").none() = nb::none())
      .def("flush", &PyProducer::flush)
      .def("close", &PyProducer::close)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyProducer& self, nb::args) { self.close(); })
      .def("produce_arrow", &PyProducer::produce_arrow, nb::arg("data"), nb::arg("topic").none() = nb::none())
      .def("init_transactions", [](PyProducer& self) { self.interruptible([](auto& p) { p.init_transactions(); }); })
      .def("begin_transaction", [](PyProducer& self) { self.interruptible([](auto& p) { p.begin_transaction(); }); })
      .def("commit_transaction", [](PyProducer& self) { self.interruptible([](auto& p) { p.commit_transaction(); }); })
      .def("abort_transaction", [](PyProducer& self) { self.interruptible([](auto& p) { p.abort_transaction(); }); })
      .def("send_offsets_to_transaction", &PyProducer::send_offsets, nb::arg("offsets"), nb::arg("group_id"),
           nb::arg("member_id") = "", nb::arg("generation") = -1, nb::arg("group_instance_id").none() = nb::none())
      .def_prop_ro("transactions_v2", [](PyProducer& self) { return self.get().transactions_v2(); });
  nb::class_<PyAdmin>(m, "Admin")
      .def(nb::init<const nb::dict&>(), nb::arg("properties"))
      .def("create_topics", &PyAdmin::create_topics, nb::arg("topics"), nb::arg("if_not_exists") = false,
           nb::arg("configs") = std::map<std::string, std::string>())
      .def("delete_topics", &PyAdmin::delete_topics, nb::arg("topics"))
      .def("delete_records", &PyAdmin::delete_records, nb::arg("before"))
      .def("alter_configs", &PyAdmin::alter_configs, nb::arg("resource_type"), nb::arg("name"), nb::arg("configs"))
      .def("close", &PyAdmin::close);
}

}  // namespace kwire::python
