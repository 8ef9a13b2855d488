// Reading offset ranges with a long-lived consumer, with Spark's reader rules
// for gaps, aged-out records and out-of-range offsets.
#include "kwire/source/range_reader.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/protocol/bytes.hpp"
#include "kwire/source/options.hpp"
#include "stream_util.hpp"

namespace kwire::source {

using detail::warn;

RangeReaderOptions RangeReaderOptions::from(const SourceOptions& options,
                                            std::optional<std::string> generated_group_id) {
  RangeReaderOptions o;
  o.fail_on_data_loss = options.fail_on_data_loss;
  o.poll_timeout_ms = options.poll_timeout_ms;
  o.include_headers = options.include_headers;
  auto g = options.kafka_params.find("group.id");
  if (g != options.kafka_params.end()) o.group_id = g->second;
  else o.group_id = std::move(generated_group_id);
  return o;
}

std::int32_t java_string_hash(std::string_view text) {
  // Decode UTF-8 into UTF-16 code units; a malformed byte counts as U+FFFD.
  std::uint32_t h = 0;
  auto add = [&h](std::uint32_t unit) { h = 31u * h + unit; };
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = 0xFFFD;
    std::size_t len = 1;
    if (b < 0x80) {
      cp = b;
    } else if ((b >> 5) == 0x6 || (b >> 4) == 0xE || (b >> 3) == 0x1E) {
      len = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : 4;
      cp = b & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
      bool ok = i + len <= text.size();
      for (std::size_t k = 1; ok && k < len; ++k) {
        const auto c = static_cast<unsigned char>(text[i + k]);
        if ((c >> 6) != 0x2) ok = false;
        else cp = (cp << 6) | (c & 0x3Fu);
      }
      if (!ok) cp = 0xFFFD, len = 1;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xD800 + (cp >> 10));
      add(0xDC00 + (cp & 0x3FF));
    } else {
      add(cp);
    }
    i += len;
  }
  return static_cast<std::int32_t>(h);
}

std::string executor_group_id(const SourceOptions& options, std::optional<std::string_view> metadata_path) {
  auto g = options.kafka_params.find("group.id");
  if (g != options.kafka_params.end()) return g->second;
  const std::string uuid = protocol::Uuid::random().to_string();
  if (metadata_path)
    return fmt::format("{}-{}-{}-executor", options.group_id_prefix, uuid, java_string_hash(*metadata_path));
  return fmt::format("{}-{}-executor", options.group_id_prefix, uuid);
}

std::map<std::string, std::string> RangeReader::consumer_properties(std::map<std::string, std::string> props) {
  props["auto.offset.reset"] = "none";
  // A polled record is held as about 250 bytes of views (the decoded
  // record, the poll's entry, the sink's row) besides its bytes, for up to
  // three polls at a time (a sink that writes behind holds two). 20,000 keeps
  // that near 15 MB, and a poll still fills every formatting thread.
  if (!props.count("max.poll.records")) props["max.poll.records"] = "20000";
  return props;
}

namespace {

client::TimeoutError no_progress(const client::TopicPartition& tp, std::int64_t offset, std::int64_t timeout_ms) {
  return client::TimeoutError(fmt::format("Cannot fetch record for offset {} in {} milliseconds (partition {})", offset,
                                          timeout_ms, client::to_string(tp)));
}

// One partition's share of a read: [from, until), read through the
// consumer's position (the Fetcher's, the one cursor) under a position limit
// at `until`. `expected` is only the gap check's reference within a poll: the
// position before the poll, then each record's offset + 1.
struct Cursor {
  client::TopicPartition tp;
  std::int64_t from = 0;
  std::int64_t until = 0;
  std::int64_t expected = 0;
  bool done = false;
  // The Fetch answer (fetch offset, log end) last checked with a ListOffsets
  // for an end past the log: checked again only with a newer answer.
  std::pair<std::int64_t, std::int64_t> checked_answer{-1, -1};
};

}  // namespace

RangeReadResult RangeReader::read(const std::vector<OffsetRange>& ranges, Sink& sink) {
  RangeReadResult result;
  if (ranges.empty()) return result;
  // Each partition is read in one pass over its span.
  std::vector<Cursor> cursors;
  for (const OffsetRange& s : partition_spans(ranges))
    cursors.push_back(Cursor{s.tp, s.from_offset, s.until_offset, s.from_offset, false, {-1, -1}});
  std::vector<client::TopicPartition> tps;
  for (auto& c : cursors) tps.push_back(c.tp);

  // Move the consumer to this read: the same assignment keeps the fetch
  // session. A partition already at the range's start (the previous batch
  // ended there) is not sought: what was prefetched for it is used, and the
  // leader epoch of its last record stays known, so a log truncated since
  // (an unclean leader election) is detected (KIP-320). Others are sought,
  // which drops answers fetched from other positions. The position limit at
  // each range's end is what stops the partition there: records past it are
  // kept for the next read (maxOffsetsPerTrigger batches start there).
  auto assigned = consumer_.assignment();
  std::sort(assigned.begin(), assigned.end());
  if (assigned != tps) consumer_.assign(tps);
  for (auto& c : cursors) {
    if (consumer_.known_position(c.tp) != c.from) consumer_.seek(c.tp, c.from);
    consumer_.set_position_limit(c.tp, c.until);
  }
  consumer_.resume(tps);

  const bool read_committed = consumer_.client().config().isolation_level == 1;
  std::size_t open = cursors.size();
  auto position = [&](const Cursor& c) { return consumer_.known_position(c.tp).value_or(c.from); };
  auto finish = [&](Cursor& c) {
    c.done = true;
    --open;
    consumer_.pause({c.tp});
  };
  auto finish_if_reached = [&](Cursor& c) {
    if (!c.done && (c.from >= c.until || position(c) >= c.until)) finish(c);
  };
  for (auto& c : cursors) finish_if_reached(c);

  // failOnDataLoss=false: one warning per skipped span, printed and kept.
  auto skip_lost = [&](const TopicPartition& tp, std::int64_t from, std::int64_t to, const std::string& detail) {
    auto text = fmt::format(
        "{} {}", data_loss_warning(DataLossError::could_not_read_offset_range(tp, from, to, options_.group_id)),
        detail);
    warn(text);
    result.warnings.push_back(std::move(text));
  };
  const auto poll_timeout = std::chrono::milliseconds(options_.poll_timeout_ms);
  auto last_progress = std::chrono::steady_clock::now();
  // Spark's rule for an offset the broker does not have (KafkaDataConsumer:
  // OffsetOutOfRange, or an empty poll at or past the latest offset): compare
  // [next, until) with the range the broker has, [earliest, latest).
  auto out_of_range = [&](Cursor& c, std::int64_t next, std::int64_t earliest, std::int64_t latest) {
    const TopicPartition stp{c.tp.topic, c.tp.partition};
    if (options_.fail_on_data_loss)
      throw DataLossError::could_not_read_offset_range(stp, next, c.until, options_.group_id);
    auto lost_text = [&](std::int64_t skip_until) {
      return fmt::format(
          "Some data may be lost. Recovering from the earliest offset: {}. The current available offset range is "
          "[{}, {}). Offset {} is out of range, and records in [{}, {}) will be skipped.",
          earliest, earliest, latest, next, next, skip_until);
    };
    if (next >= latest || earliest >= c.until) {
      // Nothing of [next, until) is there: skip the whole range.
      skip_lost(stp, next, c.until, lost_text(c.until));
      result.offset_out_of_range += c.until - next;
      result.data_loss += 1;  // Spark counts each out-of-range skip as a data-loss event too
      finish(c);
      last_progress = std::chrono::steady_clock::now();
    } else if (next < earliest) {
      // The head of the range aged out: continue from the earliest offset.
      skip_lost(stp, next, earliest, lost_text(earliest));
      result.offset_out_of_range += earliest - next;
      result.data_loss += 1;
      consumer_.seek(c.tp, earliest);
      last_progress = std::chrono::steady_clock::now();
    } else {
      // The offset is inside [earliest, latest) again (the log changed
      // between the fetch and the listing): fetch it again, bounded by the
      // poll timeout.
      consumer_.seek(c.tp, next);
      if (std::chrono::steady_clock::now() - last_progress > poll_timeout)
        throw no_progress(c.tp, next, options_.poll_timeout_ms);
    }
  };
  auto cursor_of = [&](const client::TopicPartition& tp) -> Cursor& {
    auto it =
        std::lower_bound(cursors.begin(), cursors.end(), tp, [](const Cursor& c, const auto& t) { return c.tp < t; });
    // The consumer is assigned exactly these partitions.
    if (it == cursors.end() || !(it->tp == tp))
      throw std::logic_error(fmt::format("records of unassigned partition {}", client::to_string(tp)));
    return *it;
  };

  // A sink that writes behind reads a write's rows (and the polled records
  // they point into) until its kWritesBehind-th write after it returns:
  // one set more than that takes turns, and the sink is done with all
  // before they go.
  struct Held {
    client::ConsumerRecords recs;
    std::vector<Row> rows;
  };
  const bool behind = sink.writes_behind();
  Held held[Sink::kWritesBehind + 1];
  std::size_t turn = 0;
  struct Release {
    Sink& sink;
    ~Release() { sink.release_rows(); }
  } release{sink};
  while (open > 0) {
    auto& [recs, rows] = held[turn];
    for (auto& c : cursors)
      if (!c.done) c.expected = position(c);
    try {
      recs = consumer_.poll(std::min(poll_timeout, std::chrono::milliseconds(1000)));
    } catch (const client::LogTruncationError& e) {
      // The log was truncated below what was read (KIP-320): Spark's
      // PARTITION_OFFSET_CHANGED. Without failOnDataLoss the read goes on
      // from where it was; the records that replaced the truncated ones below
      // it are not read.
      auto loss = DataLossError::partition_offset_changed(e.partition(), e.offset(), e.divergent_offset());
      if (options_.fail_on_data_loss) throw loss;
      auto text = data_loss_warning(loss);
      warn(text);
      result.warnings.push_back(std::move(text));
      result.data_loss += 1;
      auto& c = cursor_of(e.partition());
      consumer_.seek(c.tp, position(c));
      last_progress = std::chrono::steady_clock::now();
      continue;
    } catch (const client::OffsetOutOfRangeError& e) {
      // The Fetch answer has no log range with the error: list it.
      auto& c = cursor_of(e.partition());
      const auto next = position(c);
      if (options_.fail_on_data_loss)
        throw DataLossError::could_not_read_offset_range(TopicPartition{c.tp.topic, c.tp.partition}, next, c.until,
                                                         options_.group_id);
      out_of_range(c, next, consumer_.beginning_offsets({c.tp})[c.tp], consumer_.end_offsets({c.tp})[c.tp]);
      continue;
    }
    rows.clear();
    rows.reserve(recs.size());
    // A poll hands out each partition's records together: look the
    // partition up once per run, not once per record.
    Cursor* c = nullptr;
    const std::string* run_topic = nullptr;
    std::int32_t run_partition = -1;
    for (auto& r : recs) {
      if (r.topic != run_topic || r.partition != run_partition) {
        run_topic = r.topic;
        run_partition = r.partition;
        c = &cursor_of(client::TopicPartition{*r.topic, r.partition});
      }
      if (r.offset != c->expected) {
        // A gap: offsets the log does not show. Lost (aged out while the
        // range was read) when the log now starts past the first of them;
        // otherwise never visible (compaction, transaction markers, aborted
        // records), skipped silently. The log start offset comes with every
        // Fetch answer (v5+); only without it is the broker asked.
        std::int64_t log_start = -1;
        if (auto info = consumer_.last_fetch_info(c->tp)) log_start = info->log_start_offset;
        if (log_start < 0) log_start = consumer_.beginning_offsets({c->tp})[c->tp];
        if (is_lost_gap(c->expected, log_start)) {
          const TopicPartition stp{c->tp.topic, c->tp.partition};
          if (options_.fail_on_data_loss)
            throw DataLossError::could_not_read_offset_range(stp, c->expected, r.offset, options_.group_id);
          skip_lost(stp, c->expected, r.offset,
                    fmt::format("Skip missing records in [{}, {}).", c->expected, r.offset));
          result.data_loss += 1;
        }
      }
      c->expected = r.offset + 1;
      Row& row = rows.emplace_back();
      row.key = r.key;
      row.value = r.value;
      row.topic = *r.topic;
      row.partition = r.partition;
      row.offset = r.offset;
      row.timestamp = r.timestamp;
      row.timestamp_type = r.timestamp_type;
      row.headers = options_.include_headers && r.headers && !r.headers->empty() ? r.headers : nullptr;
    }
    if (!rows.empty()) {
      sink.write(rows);
      result.rows += static_cast<std::int64_t>(rows.size());
      last_progress = std::chrono::steady_clock::now();
      if (behind) turn = (turn + 1) % std::size(held);
    }
    for (auto& cur : cursors) {
      if (cur.done) continue;
      const auto pos = position(cur);
      if (pos >= cur.until) {
        finish(cur);
        last_progress = std::chrono::steady_clock::now();
        continue;
      }
      // The range goes on past where the log ended when the last Fetch
      // answer was made (its high watermark, or last stable offset under
      // read_committed, at or below the position): the rest of the range is
      // past the latest offset, which Spark finds after an empty poll and
      // handles as out of range; kwire needs no poll timeout to see it. The
      // answer may come from a follower whose high watermark lags, or the
      // log may have grown since, so one ListOffsets confirms it (once per
      // answer) before anything is skipped.
      auto info = consumer_.last_fetch_info(cur.tp);
      if (!info || info->fetch_offset > pos) continue;
      const std::int64_t end =
          read_committed && info->last_stable_offset >= 0 ? info->last_stable_offset : info->high_watermark;
      if (end < 0 || pos < end) continue;
      const std::pair<std::int64_t, std::int64_t> answer{info->fetch_offset, end};
      if (cur.checked_answer == answer) continue;
      cur.checked_answer = answer;
      const auto latest = consumer_.end_offsets({cur.tp})[cur.tp];
      if (pos < latest) continue;
      std::int64_t earliest = info->log_start_offset;
      if (earliest < 0) earliest = consumer_.beginning_offsets({cur.tp})[cur.tp];
      out_of_range(cur, pos, earliest, latest);
    }
    if (open > 0 && std::chrono::steady_clock::now() - last_progress > poll_timeout) {
      for (auto& cur : cursors)
        if (!cur.done) throw no_progress(cur.tp, position(cur), options_.poll_timeout_ms);
    }
  }
  return result;
}

}  // namespace kwire::source
