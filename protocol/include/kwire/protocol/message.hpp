// One declaration per message: encode, decode and size all derive from it.
//
// A message (or any struct nested in one) lists its fields once, in wire order,
// in a `fields` member template, stating the versions each field exists in:
//
//   struct FooResponse {
//     static constexpr ApiKey api_key = ApiKey::foo;
//     static constexpr int16_t min_version = 0, max_version = 4;
//     static constexpr int16_t flexible_since = 3;   // KIP-482; use kNeverFlexible if none
//     int32_t throttle_time_ms = 0;
//     std::vector<Topic> topics;
//     int64_t epoch = -1;                            // tagged field 1, v3+
//     TaggedFields unknown_tagged_fields;            // required in every struct
//     template <class V> void fields(V& v) {
//       v.since(1, throttle_time_ms);
//       v(topics);
//       v.tagged(1, 3, epoch, int64_t{-1});
//     }
//     friend bool operator==(const FooResponse&, const FooResponse&) = default;
//   };
//
// Field types map to wire types as follows (compact forms in flexible versions):
//   int8/int16/int32/int64/uint16/uint32/double/bool -> fixed width, big-endian
//   std::string / std::optional<std::string>          -> STRING / NULLABLE_STRING
//   Bytes / std::optional<Bytes>                     -> BYTES / NULLABLE_BYTES
//   Records                                          -> RECORDS (a view, nullable)
//   Uuid                                             -> UUID
//   std::vector<T> / std::optional<std::vector<T>>   -> ARRAY / nullable ARRAY
//   std::optional<S> for a nested struct S          -> int8 marker (-1 null, 1 present), then S
//   a nested struct (has unknown_tagged_fields)      -> its fields inline
// In flexible versions every struct ends with a tagged-field block; tags we do
// not know are kept in `unknown_tagged_fields` and written back unchanged.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kwire/protocol/api_keys.hpp"
#include "kwire/protocol/bytes.hpp"

namespace kwire::protocol {

inline constexpr std::int16_t kNeverFlexible = 0x7fff;

/// An encoding/decoding problem detected by the protocol layer.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TaggedField {
  std::uint32_t tag = 0;
  Bytes data;
  friend bool operator==(const TaggedField&, const TaggedField&) = default;
};
using TaggedFields = std::vector<TaggedField>;

/// The RECORDS wire type: an opaque, nullable byte range holding record batches
/// (or legacy message sets). It does not own memory: when decoded it points into
/// the response frame, which must outlive it.
struct Records {
  std::optional<ByteSpan> data;
  friend bool operator==(const Records& a, const Records& b) {
    if (a.data.has_value() != b.data.has_value()) return false;
    if (!a.data) return true;
    return std::equal(a.data->begin(), a.data->end(), b.data->begin(), b.data->end());
  }
};

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace detail

template <class T>
concept MessageStruct = requires(T& t) {
  { t.unknown_tagged_fields } -> std::convertible_to<TaggedFields&>;
};

struct CodecContext {
  std::int16_t version = 0;
  bool flexible = false;
};

// Visits a field only when the version is in [lo, hi].
template <class Derived>
struct VisitorBase {
  CodecContext ctx;
  std::int16_t version() const { return ctx.version; }
  bool flexible() const { return ctx.flexible; }

  template <class T>
  void since(std::int16_t lo, T& x) {
    if (ctx.version >= lo) static_cast<Derived&> (*this)(x);
  }
  template <class T>
  void until(std::int16_t hi, T& x) {
    if (ctx.version <= hi) static_cast<Derived&> (*this)(x);
  }
  template <class T>
  void range(std::int16_t lo, std::int16_t hi, T& x) {
    if (ctx.version >= lo && ctx.version <= hi) static_cast<Derived&> (*this)(x);
  }
};

// ------------------------------------------------------------------ encode

template <class T>
void encode_value(Writer& w, const T& x, const CodecContext& ctx);

template <MessageStruct S>
void encode_struct(Writer& w, const S& s, const CodecContext& ctx);

struct EncodeVisitor : VisitorBase<EncodeVisitor> {
  Writer* w;
  std::vector<TaggedField> tagged_out;

  template <class T>
  void operator()(T& x) {
    encode_value(*w, x, ctx);
  }
  template <class T>
  void tagged(std::uint32_t tag, std::int16_t since_version, T& x, const T& def = T{}) {
    if (!ctx.flexible || ctx.version < since_version) return;
    if (x == def) return;
    TaggedField f;
    f.tag = tag;
    Writer tw(f.data);
    encode_value(tw, x, ctx);
    tagged_out.push_back(std::move(f));
  }
};

template <class T>
void encode_value(Writer& w, const T& x, const CodecContext& ctx) {
  const bool c = ctx.flexible;
  if constexpr (std::is_same_v<T, bool>) {
    w.boolean(x);
  } else if constexpr (std::is_same_v<T, std::int8_t>) {
    w.i8(x);
  } else if constexpr (std::is_same_v<T, std::int16_t>) {
    w.i16(x);
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    w.i32(x);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    w.i64(x);
  } else if constexpr (std::is_same_v<T, std::uint16_t>) {
    w.u16(x);
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
    w.u32(x);
  } else if constexpr (std::is_same_v<T, double>) {
    w.f64(x);
  } else if constexpr (std::is_same_v<T, Uuid>) {
    w.uuid(x);
  } else if constexpr (std::is_same_v<T, std::string>) {
    w.string(x, c);
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    w.nullable_string(x, c);
  } else if constexpr (std::is_same_v<T, Bytes>) {
    w.bytes(ByteSpan(x), c);
  } else if constexpr (std::is_same_v<T, std::optional<Bytes>>) {
    if (x) w.bytes(ByteSpan(*x), c);
    else w.nullable_bytes(std::nullopt, c);
  } else if constexpr (std::is_same_v<T, Records>) {
    w.records(x.data, c);
  } else if constexpr (detail::is_vector<T>::value) {
    w.array_length(x.size(), c);
    for (const auto& e : x) encode_value(w, e, ctx);
  } else if constexpr (detail::is_optional<T>::value) {
    if constexpr (MessageStruct<typename T::value_type>) {
      // A nullable struct: an int8 marker, -1 for null or 1 before the fields.
      w.i8(x ? 1 : -1);
      if (x) encode_struct(w, *x, ctx);
    } else if (!x) {
      w.array_length(std::nullopt, c);
    } else {
      encode_value(w, *x, ctx);
    }
  } else if constexpr (MessageStruct<T>) {
    encode_struct(w, x, ctx);
  } else {
    static_assert(sizeof(T) == 0, "unsupported field type");
  }
}

void write_tagged_block(Writer& w, std::vector<TaggedField>& known, const TaggedFields& unknown);

template <MessageStruct S>
void encode_struct(Writer& w, const S& s, const CodecContext& ctx) {
  EncodeVisitor v;
  v.ctx = ctx;
  v.w = &w;
  const_cast<S&>(s).fields(v);
  if (ctx.flexible) write_tagged_block(w, v.tagged_out, s.unknown_tagged_fields);
}

// ------------------------------------------------------------------ decode

template <class T>
void decode_value(Reader& r, T& x, const CodecContext& ctx);

template <MessageStruct S>
void decode_struct(Reader& r, S& s, const CodecContext& ctx);

struct DecodeVisitor : VisitorBase<DecodeVisitor> {
  Reader* r;
  template <class T>
  void operator()(T& x) {
    if (r->ok()) decode_value(*r, x, ctx);
  }
  template <class T>
  void tagged(std::uint32_t, std::int16_t, T&, const T& = T{}) {}  // second pass
};

struct RawTag {
  std::uint32_t tag;
  ByteSpan data;
  bool used = false;
};

// Second pass over a struct's fields: decodes the tagged fields it knows.
struct TagDecodeVisitor : VisitorBase<TagDecodeVisitor> {
  std::vector<RawTag>* tags;
  Reader* outer;
  template <class T>
  void operator()(T&) {}
  template <class T>
  void tagged(std::uint32_t tag, std::int16_t since_version, T& x, const T& = T{}) {
    if (ctx.version < since_version) return;
    for (auto& t : *tags) {
      if (t.tag != tag) continue;
      Reader sub(t.data);
      decode_value(sub, x, ctx);
      if (!sub.ok()) outer->fail("malformed tagged field");
      t.used = true;
    }
  }
};

// Appends up to `count` decoded elements to `v`, stopping at the first error.
// The count comes from the wire and is only checked against the bytes left
// (one per element), while an element may take far more memory than a byte:
// so elements are added as they decode instead of allocating `count` up front.
template <class T>
void decode_elements(Reader& r, std::vector<T>& v, std::size_t count, const CodecContext& ctx) {
  v.reserve(std::min<std::size_t>(count, 16));
  for (std::size_t i = 0; i < count; ++i) {
    decode_value(r, v.emplace_back(), ctx);
    if (!r.ok()) return;
  }
}

template <class T>
void decode_value(Reader& r, T& x, const CodecContext& ctx) {
  const bool c = ctx.flexible;
  if constexpr (std::is_same_v<T, bool>) {
    x = r.boolean();
  } else if constexpr (std::is_same_v<T, std::int8_t>) {
    x = r.i8();
  } else if constexpr (std::is_same_v<T, std::int16_t>) {
    x = r.i16();
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    x = r.i32();
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    x = r.i64();
  } else if constexpr (std::is_same_v<T, std::uint16_t>) {
    x = r.u16();
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
    x = r.u32();
  } else if constexpr (std::is_same_v<T, double>) {
    x = r.f64();
  } else if constexpr (std::is_same_v<T, Uuid>) {
    x = r.uuid();
  } else if constexpr (std::is_same_v<T, std::string>) {
    x = r.string(c);
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    x = r.nullable_string(c);
  } else if constexpr (std::is_same_v<T, Bytes>) {
    x = r.bytes(c);
  } else if constexpr (std::is_same_v<T, std::optional<Bytes>>) {
    x = r.nullable_bytes(c);
  } else if constexpr (std::is_same_v<T, Records>) {
    x.data = r.nullable_bytes_view(c);
  } else if constexpr (detail::is_vector<T>::value) {
    auto n = r.array_length(c);
    x.clear();
    if (!n) {
      if (r.ok() && !c) {
        // classic null array where a value is required: treat as empty
      }
      return;
    }
    decode_elements(r, x, *n, ctx);
  } else if constexpr (detail::is_optional<T>::value) {
    using V = typename T::value_type;
    if constexpr (MessageStruct<V>) {
      const std::int8_t marker = r.i8();  // Kafka reads any value >= 0 as present
      if (!r.ok()) return;
      if (marker < 0) {
        x.reset();
        return;
      }
      x.emplace();
      decode_struct(r, *x, ctx);
    } else {
      static_assert(detail::is_vector<V>::value, "only arrays, structs, strings and bytes may be nullable");
      auto n = r.array_length(c);
      if (!n) {
        x.reset();
        return;
      }
      x.emplace();
      decode_elements(r, *x, *n, ctx);
    }
  } else if constexpr (MessageStruct<T>) {
    decode_struct(r, x, ctx);
  } else {
    static_assert(sizeof(T) == 0, "unsupported field type");
  }
}

std::vector<RawTag> read_tagged_block(Reader& r);

template <MessageStruct S>
void decode_struct(Reader& r, S& s, const CodecContext& ctx) {
  DecodeVisitor v;
  v.ctx = ctx;
  v.r = &r;
  s.fields(v);
  if (!ctx.flexible || !r.ok()) return;
  auto tags = read_tagged_block(r);
  if (!r.ok() || tags.empty()) return;
  TagDecodeVisitor tv;
  tv.ctx = ctx;
  tv.tags = &tags;
  tv.outer = &r;
  s.fields(tv);
  s.unknown_tagged_fields.clear();
  for (auto& t : tags)
    if (!t.used) s.unknown_tagged_fields.push_back({t.tag, Bytes(t.data.begin(), t.data.end())});
}

// ------------------------------------------------------------- top level

template <class M>
concept Message = MessageStruct<M> && requires {
  { M::api_key } -> std::convertible_to<ApiKey>;
  { M::min_version } -> std::convertible_to<std::int16_t>;
  { M::max_version } -> std::convertible_to<std::int16_t>;
  { M::flexible_since } -> std::convertible_to<std::int16_t>;
};

template <Message M>
constexpr bool is_flexible(std::int16_t version) {
  return version >= M::flexible_since;
}

template <Message M>
CodecContext context_for(std::int16_t version) {
  if (version < M::min_version || version > M::max_version)
    throw ProtocolError("version " + std::to_string(version) + " of " + std::string(api_name(M::api_key)) +
                        " is outside the declared range " + std::to_string(M::min_version) + "-" +
                        std::to_string(M::max_version));
  return CodecContext{version, is_flexible<M>(version)};
}

/// Append the body of `m` at `version`. Throws ProtocolError for an undeclared version.
template <Message M>
void encode(Writer& w, const M& m, std::int16_t version) {
  encode_struct(w, m, context_for<M>(version));
}
template <Message M>
Bytes encode(const M& m, std::int16_t version) {
  Bytes out;
  Writer w(out);
  encode(w, m, version);
  return out;
}
/// Encoded size of the body in bytes, computed by the encoder without writing.
template <Message M>
std::size_t encoded_size(const M& m, std::int16_t version) {
  Writer w;
  encode(w, m, version);
  return w.size();
}
/// Decode the body of `m` at `version`. Errors are latched in `r`.
template <Message M>
void decode(Reader& r, M& m, std::int16_t version) {
  CodecContext ctx;
  try {
    ctx = context_for<M>(version);
  } catch (const ProtocolError&) {
    r.fail("unsupported message version");
    return;
  }
  decode_struct(r, m, ctx);
}

}  // namespace kwire::protocol
