// Request and response headers and size-prefixed frames.
//
// Protocol guide: every request and response is preceded by an int32 size.
// Request header v1 = api_key, api_version, correlation_id, client_id (an
// int16-length nullable string even in v2). v2 adds a tagged-field block and is
// used for flexible request versions. Response header v0 = correlation_id; v1
// adds a tagged-field block for flexible versions, except for ApiVersions whose
// response header is always v0 (so that a client can parse it before it knows
// which versions the broker speaks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct RequestHeader {
  std::int16_t api_key = 0;
  std::int16_t api_version = 0;
  std::int32_t correlation_id = 0;
  std::optional<std::string> client_id;
  TaggedFields unknown_tagged_fields;
  friend bool operator==(const RequestHeader&, const RequestHeader&) = default;
};

struct ResponseHeader {
  std::int32_t correlation_id = 0;
  TaggedFields unknown_tagged_fields;
};

/// Header version (1 or 2) for a request of `key` at a flexible-or-not version.
constexpr std::int16_t request_header_version(bool flexible) { return flexible ? 2 : 1; }
/// Response header version (0 or 1); ApiVersions always uses 0.
constexpr std::int16_t response_header_version(ApiKey key, bool flexible) {
  return (flexible && key != ApiKey::api_versions) ? 1 : 0;
}

void encode_request_header(Writer& w, const RequestHeader& h, std::int16_t header_version);
void decode_request_header(Reader& r, RequestHeader& h, std::int16_t header_version);
void encode_response_header(Writer& w, const ResponseHeader& h, std::int16_t header_version);
void decode_response_header(Reader& r, ResponseHeader& h, std::int16_t header_version);

/// Bytes of the request frame encode_request_frame() writes (size prefix included).
template <Message M>
std::size_t request_frame_size(const M& body, std::int16_t version, std::int32_t correlation_id,
                               const std::optional<std::string>& client_id) {
  auto ctx = context_for<M>(version);
  RequestHeader h{static_cast<std::int16_t>(M::api_key), version, correlation_id, client_id, {}};
  Writer counter;
  encode_request_header(counter, h, request_header_version(ctx.flexible));
  encode_struct(counter, body, ctx);
  return 4 + counter.size();
}

/// A complete request frame (int32 size, header, body) appended to `out`.
template <Message M>
void encode_request_frame(Bytes& out, const M& body, std::int16_t version, std::int32_t correlation_id,
                          const std::optional<std::string>& client_id) {
  auto ctx = context_for<M>(version);
  RequestHeader h{static_cast<std::int16_t>(M::api_key), version, correlation_id, client_id, {}};
  const std::size_t start = out.size();
  Writer w(out);
  w.i32(0);
  encode_request_header(w, h, request_header_version(ctx.flexible));
  encode_struct(w, body, ctx);
  w.patch_i32(start, static_cast<std::int32_t>(out.size() - start - 4));
}

/// encode_request_frame() with the RECORDS bytes left out of `out` (see
/// Writer::leave_out_records): the frame is `out` with each gap's bytes put
/// back at its offset, and its size prefix counts them. For a gather write of
/// a Produce request, whose record batches then go to the socket from their
/// own buffers. `out` must be empty; `gaps` is cleared first.
template <Message M>
void encode_request_frame_gather(Bytes& out, std::vector<Writer::Gap>& gaps, const M& body, std::int16_t version,
                                 std::int32_t correlation_id, const std::optional<std::string>& client_id) {
  auto ctx = context_for<M>(version);
  RequestHeader h{static_cast<std::int16_t>(M::api_key), version, correlation_id, client_id, {}};
  out.clear();
  gaps.clear();
  Writer w(out);
  w.leave_out_records(&gaps);
  w.i32(0);
  encode_request_header(w, h, request_header_version(ctx.flexible));
  encode_struct(w, body, ctx);
  w.patch_i32(0, static_cast<std::int32_t>(w.size() - 4));
}

/// A complete request frame: int32 size, header, body; allocated once, at
/// its exact size (a Produce request may be megabytes).
template <Message M>
Bytes encode_request_frame(const M& body, std::int16_t version, std::int32_t correlation_id,
                           const std::optional<std::string>& client_id) {
  Bytes out;
  out.reserve(request_frame_size(body, version, correlation_id, client_id));
  encode_request_frame(out, body, version, correlation_id, client_id);
  return out;
}

/// A complete response frame (used by tests and fake brokers).
template <Message M>
Bytes encode_response_frame(const M& body, std::int16_t version, std::int32_t correlation_id) {
  auto ctx = context_for<M>(version);
  Bytes out;
  Writer w(out);
  w.i32(0);
  encode_response_header(w, ResponseHeader{correlation_id, {}}, response_header_version(M::api_key, ctx.flexible));
  encode_struct(w, body, ctx);
  w.patch_i32(0, static_cast<std::int32_t>(out.size() - 4));
  return out;
}

/// Decode a response payload (the frame without its int32 size): header, then body.
/// Returns false with the error latched in `r` when the bytes are malformed.
template <Message M>
bool decode_response(Reader& r, M& body, std::int16_t version, ResponseHeader* header = nullptr) {
  ResponseHeader h;
  decode_response_header(r, h, response_header_version(M::api_key, is_flexible<M>(version)));
  decode(r, body, version);
  if (header) *header = std::move(h);
  return r.ok();
}

/// Decode a request payload (the frame without its int32 size): header, then
/// body, the header version following from M and `version` (used by brokers
/// and fake brokers; peek the api key and version first, they are the
/// payload's first four bytes). Returns false with the error latched in `r`.
template <Message M>
bool decode_request(Reader& r, M& body, std::int16_t version, RequestHeader* header = nullptr) {
  RequestHeader h;
  decode_request_header(r, h, request_header_version(is_flexible<M>(version)));
  decode(r, body, version);
  if (header) *header = std::move(h);
  return r.ok();
}

}  // namespace kwire::protocol
