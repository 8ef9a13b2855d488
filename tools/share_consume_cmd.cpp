// kwire consume --share GROUP TOPIC... (see admin_cmd.hpp): a member of a
// share group that writes each record it acquires (kcat's formats, or --json
// with a deliveryCount field) and acknowledges it once written: --ack's type
// (accept by default); a record that cannot be written is released (or, with
// --reject-on-error, rejected). -c N stops after N records, -e after a poll
// that returned none once partitions were assigned.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "admin_cmd.hpp"
#include "kwire/client/records.hpp"
#include "kwire/client/share_consumer.hpp"

namespace kwire::tools {

using namespace kwire::client;

namespace {

AcknowledgeType ack_type(const std::string& name) {
  // A renewal is no end for a record the command has written out.
  if (auto type = parse_acknowledge_type(name); type && *type != AcknowledgeType::renew) return *type;
  throw std::invalid_argument(fmt::format("--ack must be accept, release or reject, not '{}'", name));
}

}  // namespace

int cmd_consume_share(const CommonOptions& common, const ConsumeArgs& args, const ShareConsumeArgs& share) {
  if (args.topics.empty()) throw std::invalid_argument("--share GROUP needs at least one TOPIC");
  const AcknowledgeType written = ack_type(share.ack);
  const AcknowledgeType failed = share.reject_on_error ? AcknowledgeType::reject : AcknowledgeType::release;
  print_config_warnings(common);
  auto props = common.client_properties();
  props["group.id"] = *share.group;
  props["share.acknowledgement.mode"] = "explicit";
  ShareConsumer consumer(props);
  std::int64_t failures = 0;
  consumer.set_acknowledgement_commit_callback([&](const AcknowledgementResults& results) {
    for (auto& [tp, code] : results)
      if (code != 0) ++failures;
  });
  consumer.subscribe(args.topics);
  std::optional<RecordFormat> format;
  if (args.format) format.emplace(*args.format);
  std::int64_t printed = 0;
  bool output_ok = true;
  while (!args.count || printed < *args.count) {
    auto records = consumer.poll(std::chrono::milliseconds(1000));
    // -e: done once a poll with partitions assigned brings nothing.
    if (records.empty() && args.exit_at_end && !consumer.assignment().empty()) break;
    for (auto& r : records) {
      if (!output_ok || (args.count && printed >= *args.count)) {
        consumer.acknowledge(r, AcknowledgeType::release);  // not written: give it back
        continue;
      }
      std::string out;
      const ConsumerRecord view = consumer_record_view(r);
      if (args.json) {
        out = record_json(view);
        const auto brace = out.rfind('}');
        out.insert(brace, fmt::format(",\"deliveryCount\":{}", r.delivery_count));
      } else if (format) {
        format->append(out, view);
      } else {
        out.assign(view.value_view());
        out += '\n';
      }
      output_ok = std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0;
      consumer.acknowledge(r, output_ok ? written : failed);
      if (output_ok) ++printed;
    }
    if (!records.empty()) consumer.commit_async();
    if (!output_ok) break;
  }
  consumer.commit_sync();
  consumer.close();
  if (!output_ok) throw std::runtime_error(fmt::format("writing the records failed: {}", std::strerror(errno)));
  if (failures)
    std::fprintf(stderr, "kwire: %lld acknowledgement%s failed (the records come back after their lock)\n",
                 static_cast<long long>(failures), failures == 1 ? "" : "s");
  return 0;
}

}  // namespace kwire::tools
