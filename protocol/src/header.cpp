#include "kwire/protocol/header.hpp"

namespace kwire::protocol {

void encode_request_header(Writer& w, const RequestHeader& h, std::int16_t header_version) {
  w.i16(h.api_key);
  w.i16(h.api_version);
  w.i32(h.correlation_id);
  w.nullable_string(h.client_id, false);  // never compact, even in v2
  if (header_version >= 2) {
    std::vector<TaggedField> none;
    write_tagged_block(w, none, h.unknown_tagged_fields);
  }
}

void decode_request_header(Reader& r, RequestHeader& h, std::int16_t header_version) {
  h.api_key = r.i16();
  h.api_version = r.i16();
  h.correlation_id = r.i32();
  h.client_id = r.nullable_string(false);
  if (header_version >= 2) {
    for (auto& t : read_tagged_block(r))
      h.unknown_tagged_fields.push_back({t.tag, Bytes(t.data.begin(), t.data.end())});
  }
}

void encode_response_header(Writer& w, const ResponseHeader& h, std::int16_t header_version) {
  w.i32(h.correlation_id);
  if (header_version >= 1) {
    std::vector<TaggedField> none;
    write_tagged_block(w, none, h.unknown_tagged_fields);
  }
}

void decode_response_header(Reader& r, ResponseHeader& h, std::int16_t header_version) {
  h.correlation_id = r.i32();
  if (header_version >= 1) {
    for (auto& t : read_tagged_block(r))
      h.unknown_tagged_fields.push_back({t.tag, Bytes(t.data.begin(), t.data.end())});
  }
}

}  // namespace kwire::protocol
