// Reading offset ranges with a long-lived consumer, with Spark's reader rules
// for gaps, aged-out records and out-of-range offsets.
#include "kwire/source/range_reader.hpp"

#include <algorithm>
#include <chrono>
#include <set>

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
  if (!props.count("max.poll.records")) props["max.poll.records"] = "100000";
  return props;
}

namespace {

client::TimeoutError no_progress(const client::TopicPartition& tp, std::int64_t offset, std::int64_t timeout_ms) {
  return client::TimeoutError(fmt::format("Cannot fetch record for offset {} in {} milliseconds (partition {})", offset,
                                          timeout_ms, client::to_string(tp)));
}

}  // namespace

RangeReadResult RangeReader::read(const std::vector<OffsetRange>& ranges, Sink& sink) {
  RangeReadResult result;
  if (ranges.empty()) return result;
  // Ranges of one partition are contiguous after splitting; read each
  // partition's [min from, max until) in one pass.
  std::map<client::TopicPartition, std::pair<std::int64_t, std::int64_t>> want;  // next, until
  std::set<client::TopicPartition> done;                                         // read (and paused)
  for (auto& r : ranges) {
    auto tp = r.tp;
    auto it = want.find(tp);
    if (it == want.end()) want[tp] = {r.from_offset, r.until_offset};
    else {
      it->second.first = std::min(it->second.first, r.from_offset);
      it->second.second = std::max(it->second.second, r.until_offset);
    }
  }
  std::vector<client::TopicPartition> tps;
  for (auto& [tp, _] : want) tps.push_back(tp);

  // Move the consumer to this read: the same assignment keeps the fetch
  // session. A partition already at the range's start (the previous batch
  // ended there) is not sought: what was prefetched for it is used, and the
  // leader epoch of its last record stays known, so a log truncated since
  // (an unclean leader election) is detected (KIP-320). Others are sought,
  // which drops answers fetched from other positions.
  auto assigned = consumer_.assignment();
  std::sort(assigned.begin(), assigned.end());
  if (assigned != tps) consumer_.assign(tps);
  // Records past a range's end are not handed out but kept: with
  // maxOffsetsPerTrigger the next batch starts there and uses them.
  for (auto& [tp, w] : want) {
    if (consumer_.known_position(tp) != w.first) consumer_.seek(tp, w.first);
    consumer_.set_position_limit(tp, w.second);
  }
  consumer_.resume(tps);

  // failOnDataLoss=false: one warning per skipped span, printed and kept.
  auto skip_lost = [&](const TopicPartition& tp, std::int64_t from, std::int64_t to, const std::string& detail) {
    auto text = fmt::format(
        "{} {}", data_loss_warning(DataLossError::could_not_read_offset_range(tp, from, to, options_.group_id)),
        detail);
    warn(text);
    result.warnings.push_back(std::move(text));
  };
  auto finish = [&](const client::TopicPartition& tp) {
    done.insert(tp);
    consumer_.pause({tp});
  };
  auto mark_done_if_reached = [&](const client::TopicPartition& tp) {
    if (done.count(tp)) return;
    if (want[tp].first >= want[tp].second || consumer_.position(tp) >= want[tp].second) finish(tp);
  };
  for (auto& tp : tps) mark_done_if_reached(tp);

  const auto poll_timeout = std::chrono::milliseconds(options_.poll_timeout_ms);
  auto last_progress = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  while (done.size() < tps.size()) {
    client::ConsumerRecords recs;
    try {
      recs = consumer_.poll(std::min(poll_timeout, std::chrono::milliseconds(1000)));
    } catch (const client::LogTruncationError& e) {
      // The log was truncated below what was read (KIP-320): Spark's
      // PARTITION_OFFSET_CHANGED. Without failOnDataLoss the read goes on
      // from where it was; the records that replaced the truncated ones below
      // it are not read.
      auto tp = e.partition();
      auto& next = want[tp].first;
      auto loss = DataLossError::partition_offset_changed(tp, e.offset(), e.divergent_offset());
      if (options_.fail_on_data_loss) throw loss;
      auto text = data_loss_warning(loss);
      warn(text);
      result.warnings.push_back(std::move(text));
      result.data_loss += 1;
      consumer_.seek(tp, next);
      last_progress = std::chrono::steady_clock::now();
      continue;
    } catch (const client::OffsetOutOfRangeError& e) {
      auto tp = e.partition();
      // Named references, not a structured binding: the lambda below uses
      // them, which clang before 16 does not allow for bindings.
      auto& next = want[tp].first;
      auto& until = want[tp].second;
      if (options_.fail_on_data_loss)
        throw DataLossError::could_not_read_offset_range(tp, next, until, options_.group_id);
      // Spark's rule: compare the offset with the range the broker still has.
      const auto earliest = consumer_.beginning_offsets({tp})[tp];
      const auto latest = consumer_.end_offsets({tp})[tp];
      const TopicPartition stp{tp.topic, tp.partition};
      auto lost_text = [&](std::int64_t skip_until) {
        return fmt::format(
            "Some data may be lost. Recovering from the earliest offset: {}. The current available offset range is "
            "[{}, {}). Offset {} is out of range, and records in [{}, {}) will be skipped.",
            earliest, earliest, latest, next, next, skip_until);
      };
      if (next >= latest || earliest >= until) {
        // Nothing of [next, until) is left: skip the whole range.
        skip_lost(stp, next, until, lost_text(until));
        result.offset_out_of_range += until - next;
        result.data_loss += 1;  // Spark counts each out-of-range skip as a data-loss event too
        next = until;
        finish(tp);
        last_progress = std::chrono::steady_clock::now();
      } else if (next < earliest) {
        // The head of the range aged out: continue from the earliest offset.
        skip_lost(stp, next, earliest, lost_text(earliest));
        result.offset_out_of_range += earliest - next;
        result.data_loss += 1;
        next = earliest;
        consumer_.seek(tp, earliest);
        last_progress = std::chrono::steady_clock::now();
      } else {
        // The offset is inside [earliest, latest) again (the log changed
        // between the fetch and the listing): fetch it again, bounded by the
        // poll timeout.
        consumer_.seek(tp, next);
        if (std::chrono::steady_clock::now() - last_progress > poll_timeout)
          throw no_progress(tp, next, options_.poll_timeout_ms);
      }
      continue;
    }
    rows.clear();
    rows.reserve(recs.size());
    // A poll hands out each partition's records together: look the
    // partition up once per run, not once per record.
    auto it = want.end();
    const std::string* run_topic = nullptr;
    std::int32_t run_partition = -1;
    for (auto& r : recs) {
      if (r.topic != run_topic || r.partition != run_partition) {
        run_topic = r.topic;
        run_partition = r.partition;
        it = want.find(client::TopicPartition{*r.topic, r.partition});
      }
      if (it == want.end()) continue;
      const client::TopicPartition& tp = it->first;
      auto& [next, until] = it->second;
      if (r.offset < next || next >= until) continue;
      if (r.offset > next && is_lost_gap(next, consumer_.beginning_offsets({tp})[tp])) {
        // Records aged out while the range was being read. With the gap
        // reaching `until` the rest of the range is gone.
        const std::int64_t gap_end = std::min(r.offset, until);
        const TopicPartition stp{tp.topic, tp.partition};
        if (options_.fail_on_data_loss)
          throw DataLossError::could_not_read_offset_range(stp, next, gap_end, options_.group_id);
        skip_lost(stp, next, gap_end, fmt::format("Skip missing records in [{}, {}).", next, gap_end));
        result.data_loss += 1;
        next = gap_end;
      }
      if (r.offset >= until) {
        next = std::max(next, until);
        continue;
      }
      Row row;
      row.key = r.key;
      row.value = r.value;
      row.topic = *r.topic;
      row.partition = r.partition;
      row.offset = r.offset;
      row.timestamp = r.timestamp;
      row.timestamp_type = r.timestamp_type;
      row.headers = options_.include_headers && r.headers && !r.headers->empty() ? r.headers : nullptr;
      rows.push_back(row);
      next = r.offset + 1;
    }
    if (!rows.empty()) {
      sink.write(rows);
      result.rows += static_cast<std::int64_t>(rows.size());
      last_progress = std::chrono::steady_clock::now();
    }
    for (auto& tp : tps) {
      if (done.count(tp)) continue;
      auto pos = consumer_.position(tp);
      if (pos > want[tp].first && pos <= want[tp].second) {
        want[tp].first = std::max(want[tp].first, pos);
        last_progress = std::chrono::steady_clock::now();
      }
      mark_done_if_reached(tp);
    }
    if (done.size() < tps.size() && std::chrono::steady_clock::now() - last_progress > poll_timeout) {
      for (auto& tp : tps)
        if (!done.count(tp)) throw no_progress(tp, want[tp].first, options_.poll_timeout_ms);
    }
  }
  return result;
}

}  // namespace kwire::source
