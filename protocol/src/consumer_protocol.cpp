#include "kwire/protocol/messages/consumer_protocol.hpp"

#include <string>

namespace kwire::protocol {

namespace {

template <class S>
Bytes encode_payload(const S& s, std::int16_t version, const char* what) {
  if (version < S::min_version || version > S::max_version)
    throw ProtocolError(std::string(what) + " version " + std::to_string(version) + " is outside 0-3");
  Bytes out;
  Writer w(out);
  w.i16(version);
  encode_struct(w, s, CodecContext{version, false});
  return out;
}

template <class S>
std::int16_t decode_payload(ByteSpan data, S& out, const char* what) {
  out = S{};
  if (data.empty()) return -1;
  Reader r(data);
  const std::int16_t version = r.i16();
  if (!r.ok()) throw ProtocolError(std::string(what) + ": truncated version");
  if (version < 0) throw ProtocolError(std::string(what) + ": negative version " + std::to_string(version));
  const std::int16_t read_as = version > S::max_version ? S::max_version : version;
  decode_struct(r, out, CodecContext{read_as, false});
  if (!r.ok())
    throw ProtocolError(std::string(what) + " v" + std::to_string(version) + ": " + r.error() + " at byte " +
                        std::to_string(r.error_offset()));
  if (version <= S::max_version && !r.empty())
    throw ProtocolError(std::string(what) + " v" + std::to_string(version) + ": " + std::to_string(r.remaining()) +
                        " bytes after the last field");
  return version;
}

}  // namespace

Bytes encode_consumer_subscription(const ConsumerProtocolSubscription& s, std::int16_t version) {
  return encode_payload(s, version, "ConsumerProtocolSubscription");
}

Bytes encode_consumer_assignment(const ConsumerProtocolAssignment& a, std::int16_t version) {
  return encode_payload(a, version, "ConsumerProtocolAssignment");
}

std::int16_t decode_consumer_subscription(ByteSpan data, ConsumerProtocolSubscription& out) {
  return decode_payload(data, out, "ConsumerProtocolSubscription");
}

std::int16_t decode_consumer_assignment(ByteSpan data, ConsumerProtocolAssignment& out) {
  return decode_payload(data, out, "ConsumerProtocolAssignment");
}

}  // namespace kwire::protocol
