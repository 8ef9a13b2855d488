#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

void write_tagged_block(Writer& w, std::vector<TaggedField>& known, const TaggedFields& unknown) {
  if (known.empty() && unknown.empty()) {
    w.uvarint(0);
    return;
  }
  std::vector<const TaggedField*> all;
  all.reserve(known.size() + unknown.size());
  for (auto& f : known) all.push_back(&f);
  for (auto& f : unknown) all.push_back(&f);
  std::stable_sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->tag < b->tag; });
  w.uvarint(static_cast<std::uint32_t>(all.size()));
  for (auto* f : all) {
    w.uvarint(f->tag);
    w.uvarint(static_cast<std::uint32_t>(f->data.size()));
    w.raw(ByteSpan(f->data));
  }
}

std::vector<RawTag> read_tagged_block(Reader& r) {
  std::vector<RawTag> tags;
  std::uint32_t n = r.uvarint();
  if (!r.ok() || n == 0) return tags;
  if (n > r.remaining() / 2) {
    r.fail("tagged field count exceeds remaining bytes");
    return tags;
  }
  std::int64_t last = -1;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t tag = r.uvarint();
    std::uint32_t size = r.uvarint();
    auto data = r.take(size);
    if (!r.ok()) return {};
    if (static_cast<std::int64_t>(tag) <= last) {
      r.fail("tagged fields not in ascending order");
      return {};
    }
    last = tag;
    tags.push_back({tag, data, false});
  }
  return tags;
}

}  // namespace kwire::protocol
