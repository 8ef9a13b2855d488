// kwire._kwire.StreamingQuery: the C++ streaming query with a sink that
// hands each batch to Python as Arrow record batches (Kafka columns, or the
// decoded value columns with value_format json), on a worker thread so that
// Ctrl-C stops it cleanly.
#include <condition_variable>
#include <filesystem>
#include <mutex>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kafka_sink.hpp"
#include "kwire/source/stream.hpp"
#include "postgres_sink.hpp"

namespace kwire::python {

namespace {

// Builds each batch's record batches and calls
// on_batch(list[ArrowBatch], ArrowSchema, batch_id) -> rows kept at commit,
// with the GIL; the sink is idempotent per batch id when on_batch is.
class PythonSink : public source::Sink {
 public:
  PythonSink(nb::object on_batch, std::optional<source::Schema> value_schema, bool include_headers,
             std::atomic<bool>& abort, PendingError& pending, source::KafkaSink* kafka_sink, bool with_kafka_columns,
             source::Sink* row_sink)
      : on_batch_(std::move(on_batch)),
        kafka_(include_headers),
        abort_(abort),
        pending_(pending),
        kafka_sink_(kafka_sink),
        with_kafka_columns_(with_kafka_columns && value_schema.has_value()),
        row_sink_(row_sink) {
    source::export_kafka_schema(include_headers, &kafka_schema_);
    if (value_schema) {
      decoder_.emplace(*value_schema);
      decoded_.emplace(*value_schema);
      decoded_->export_schema(&schema_);
    } else {
      source::export_kafka_schema(include_headers, &schema_);
    }
  }
  ~PythonSink() override {
    if (schema_.release != nullptr) schema_.release(&schema_);
    if (kafka_schema_.release != nullptr) kafka_schema_.release(&kafka_schema_);
  }

  void prepare_batch(const source::BatchContext& context) override {
    if (kafka_sink_) kafka_sink_->prepare_batch(context);
    if (row_sink_) row_sink_->prepare_batch(context);
  }

  void begin_batch(std::int64_t batch_id) override {
    if (abort_) throw PythonRaised();
    if (kafka_sink_) kafka_sink_->begin_batch(batch_id);
    if (row_sink_) row_sink_->begin_batch(batch_id);
    if (decoded_) decoded_->finish();  // drop what a failed batch left
    kafka_.finish();
    batches_.clear();
    kafka_batches_.clear();
    rows_ = 0;
  }

  void write(std::span<const source::Row> rows) override {
    if (abort_) throw PythonRaised();
    if (row_sink_) row_sink_->write(rows);  // the source rows, as they are
    for (const source::Row& row : rows) {
      if (decoded_) {
        std::optional<std::string_view> text;
        if (row.value) text = row.value_string();
        decoded_->append(decoder_->decode(text));
        // The Kafka columns beside the decoded ones: both batches end at the same row.
        if (with_kafka_columns_) kafka_.append(row);
        if (decoded_->rows() >= source::ArrowSink::kDefaultMaxRows ||
            decoded_->bytes() >= source::ArrowSink::kDefaultMaxBytes ||
            (with_kafka_columns_ && kafka_.bytes() >= source::ArrowSink::kDefaultMaxBytes)) {
          batches_.push_back(decoded_->finish());
          if (with_kafka_columns_) kafka_batches_.push_back(kafka_.finish());
        }
      } else {
        kafka_.append(row);
        if (kafka_.rows() >= source::ArrowSink::kDefaultMaxRows ||
            kafka_.bytes() >= source::ArrowSink::kDefaultMaxBytes) {
          batches_.push_back(kafka_.finish());
        }
      }
    }
    rows_ += static_cast<std::int64_t>(rows.size());
  }

  std::int64_t commit_batch(std::int64_t batch_id) override {
    if (abort_) throw PythonRaised();
    batches_.push_back(decoded_ ? decoded_->finish() : kafka_.finish());
    if (with_kafka_columns_) kafka_batches_.push_back(kafka_.finish());
    std::int64_t kept_rows = rows_;
    {
      nb::gil_scoped_acquire acquire;
      try {
        nb::list list;
        for (source::ArrowBatch& b : batches_) list.append(make_batch_object(schema_, std::move(b)));
        batches_.clear();
        nb::object kafka_list = nb::none();
        if (with_kafka_columns_) {
          nb::list kl;
          for (source::ArrowBatch& b : kafka_batches_) kl.append(make_batch_object(kafka_schema_, std::move(b)));
          kafka_batches_.clear();
          kafka_list = std::move(kl);
        }
        nb::object kept = on_batch_(list, make_schema_object(schema_), batch_id, kafka_list);
        if (!kept.is_none()) kept_rows = nb::cast<std::int64_t>(kept);
      } catch (nb::python_error& e) {
        pending_.capture(std::move(e));
        abort_ = true;
        throw PythonRaised();
      }
    }
    // The Kafka sink's rows were sent by on_batch (KafkaSink.write): its
    // transaction commits here, without the GIL.
    if (kafka_sink_) return kafka_sink_->commit_batch(batch_id);
    if (row_sink_) return row_sink_->commit_batch(batch_id);
    return kept_rows;
  }

  std::string description() const override {
    if (kafka_sink_) return kafka_sink_->description();
    return row_sink_ ? row_sink_->description() : "PythonSink";
  }

 private:
  nb::object on_batch_;
  std::optional<source::JsonValueDecoder> decoder_;
  std::optional<source::DecodedBatchBuilder> decoded_;
  source::KafkaBatchBuilder kafka_;
  ArrowSchema schema_{};
  ArrowSchema kafka_schema_{};
  std::vector<source::ArrowBatch> batches_;
  std::vector<source::ArrowBatch> kafka_batches_;  // with_kafka_columns_: the Kafka columns of the same rows
  std::int64_t rows_ = 0;
  std::atomic<bool>& abort_;
  PendingError& pending_;
  source::KafkaSink* kafka_sink_;  // the query's KafkaSink (held by PyStreamingQuery::kafka_sink_obj_), or null
  bool with_kafka_columns_;        // value_format json: also hand over the Kafka columns of each row
  source::Sink* row_sink_;         // a sink written from the source rows (PostgresSink), or null
};

class PyStreamingQuery {
 public:
  PyStreamingQuery(const nb::dict& options, const std::string& checkpoint, const std::string& trigger,
                   std::optional<std::string> value_schema_ddl, nb::object on_batch, nb::object kafka_sink,
                   bool with_kafka_columns, nb::object row_sink)
      : kafka_sink_obj_(std::move(kafka_sink)), row_sink_obj_(std::move(row_sink)) {
    auto opts = to_options(options);
    std::optional<source::Schema> schema;
    if (value_schema_ddl) schema = source::Schema::parse_ddl(*value_schema_ddl);
    source::Trigger t = source::Trigger::parse(trigger);
    // includeHeaders as the query parses it (the Kafka columns only).
    const bool headers = source::parse_source_options(opts, source::QueryMode::streaming).include_headers;
    source::KafkaSink* kafka_sink_ptr = nullptr;
    if (!kafka_sink_obj_.is_none()) kafka_sink_ptr = &nb::cast<PyKafkaSink&>(kafka_sink_obj_).get();
    source::Sink* row_sink_ptr = nullptr;
    if (!row_sink_obj_.is_none()) row_sink_ptr = &nb::cast<PyPostgresSink&>(row_sink_obj_).get();
    sink_ = std::make_unique<PythonSink>(std::move(on_batch), schema, headers, abort_, pending_, kafka_sink_ptr,
                                         with_kafka_columns, row_sink_ptr);
    nb::gil_scoped_release release;
    query_ = std::make_unique<source::StreamingQuery>(opts, std::filesystem::path(checkpoint), *sink_, t);
  }

  ~PyStreamingQuery() {
    nb::gil_scoped_release release;
    query_.reset();
  }

  source::StreamingQuery& query() {
    if (!query_) throw nb::value_error("kwire: the streaming query is closed");
    return *query_;
  }

  // Releases the checkpoint (its writer lock) and the Kafka clients. From
  // another thread while run() is in progress: asks it to stop and waits
  // until it returned (after the current batch), so that nothing the run
  // uses (the query, its sink's producer) goes away under it.
  void close() {
    nb::gil_scoped_release release;
    std::unique_lock lock(run_mu_);
    if (running_ && query_) query_->stop();
    run_cv_.wait(lock, [&] { return !running_; });
    query_.reset();
  }

  void run(std::optional<std::int64_t> max_batches, nb::object on_progress) {
    {
      std::lock_guard lock(run_mu_);
      query();
      if (running_) throw nb::value_error("kwire: the streaming query is already running in another thread");
      running_ = true;
    }
    struct Done {
      PyStreamingQuery& q;
      ~Done() {
        std::lock_guard lock(q.run_mu_);
        q.running_ = false;
        q.run_cv_.notify_all();
      }
    } done{*this};
    abort_ = false;
    const std::string description = query_->description();
    auto progress = [&](const source::BatchProgress& p) {
      if (on_progress.is_none()) return;
      const std::string json = p.to_json(description);
      nb::gil_scoped_acquire acquire;
      try {
        on_progress(json);
      } catch (nb::python_error& e) {
        pending_.capture(std::move(e));
        abort_ = true;
        throw PythonRaised();
      }
    };
    run_interruptible([&] { query_->run(progress, max_batches); }, abort_, pending_, [&] { query_->stop(); });
  }

  void stop() {
    std::lock_guard lock(run_mu_);
    if (query_) query_->stop();
  }
  std::int64_t next_batch_id() { return query().next_batch_id(); }
  std::string progress_log_path() { return query().progress_log_path().string(); }
  std::string description() { return query().description(); }

 private:
  std::atomic<bool> abort_{false};
  PendingError pending_;
  nb::object kafka_sink_obj_;         // a kwire._kwire.KafkaSink, or None
  nb::object row_sink_obj_;           // a kwire._kwire.PostgresSink, or None
  std::unique_ptr<PythonSink> sink_;  // declared before query_: outlives it
  std::unique_ptr<source::StreamingQuery> query_;
  std::mutex run_mu_;  // running_ and the query's life against close() from another thread
  std::condition_variable run_cv_;
  bool running_ = false;
};

}  // namespace

void register_stream(nb::module_& m) {
  nb::class_<PyStreamingQuery>(m, "StreamingQuery")
      .def(nb::init<const nb::dict&, const std::string&, const std::string&, std::optional<std::string>, nb::object,
                    nb::object, bool, nb::object>(),
           nb::arg("options"), nb::arg("checkpoint"), nb::arg("trigger"), nb::arg("value_schema").none(),
           nb::arg("on_batch"), nb::arg("kafka_sink").none() = nb::none(), nb::arg("with_kafka_columns") = false,
           nb::arg("row_sink").none() = nb::none())
      .def("run", &PyStreamingQuery::run, nb::arg("max_batches").none() = nb::none(),
           nb::arg("on_progress") = nb::none())
      .def("stop", &PyStreamingQuery::stop)
      .def("close", &PyStreamingQuery::close)
      .def_prop_ro("next_batch_id", &PyStreamingQuery::next_batch_id)
      .def_prop_ro("progress_log_path", &PyStreamingQuery::progress_log_path)
      .def_prop_ro("description", &PyStreamingQuery::description);
}

}  // namespace kwire::python
