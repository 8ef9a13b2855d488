// Writes the library-generated part of the seed corpora (fuzz/corpus/<target>/):
// every message filled with sample values and encoded at its first, first
// flexible and last version; record batches in every codec; legacy message
// sets; compressed payloads. Run by scripts/fuzz --regen-seeds; every
// timestamp is fixed, so the output is deterministic.
//
//   fuzz_make_seeds <corpus dir>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>

#include "kwire/protocol/compression.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace fs = std::filesystem;
using namespace kwire::protocol;

namespace {

fs::path g_root;

void put(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
[[maybe_unused]] void put(const std::string& target, const std::string& name, const std::string& text) {
  put(target, name, Bytes(text.begin(), text.end()));
}

Bytes sample_batch() {
  ProducerRecord a;
  a.key = Bytes{'k'};
  a.value = Bytes{'{', '}'};
  a.timestamp = 1714557600000;
  a.headers.push_back({"h", Bytes{'v'}});
  ProducerRecord b;
  b.value = Bytes{'x', 'y'};
  b.timestamp = 1714557600001;
  ProducerRecord recs[] = {a, b};
  Bytes out;
  encode_record_batch(recs, BatchOptions{}, out);
  return out;
}

// Gives every field a non-default value and every array two elements, so
// that the encoding exercises each field that exists at a version.
struct FillVisitor : VisitorBase<FillVisitor> {
  int depth = 0;
  template <class T>
  void operator()(T& x) {
    fill(x);
  }
  template <class T>
  void tagged(std::uint32_t, std::int16_t, T& x, const T& = T{}) {
    fill(x);
  }
  // Fields are filled whatever their version range; encode picks.
  template <class T>
  void since(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void until(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void range(std::int16_t, std::int16_t, T& x) {
    fill(x);
  }

  template <class T>
  void fill(T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      x = true;
    } else if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(3);
    } else if constexpr (std::is_same_v<T, double>) {
      x = 1.5;
    } else if constexpr (std::is_same_v<T, Uuid>) {
      for (std::size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = static_cast<std::uint8_t>(i + 1);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::optional<std::string>>) {
      x = std::string("topic");
    } else if constexpr (std::is_same_v<T, Bytes> || std::is_same_v<T, std::optional<Bytes>>) {
      x = Bytes{1, 2, 3};
    } else if constexpr (std::is_same_v<T, Records>) {
      static const Bytes batch = sample_batch();
      x.data = ByteSpan(batch);
    } else if constexpr (detail::is_vector<T>::value) {
      x.resize(depth < 3 ? 2 : 1);
      for (auto& e : x) fill(e);
    } else if constexpr (detail::is_optional<T>::value) {
      x.emplace();
      fill(*x);
    } else if constexpr (MessageStruct<T>) {
      ++depth;
      x.fields(*this);
      --depth;
    }
  }
};

template <class M>
void message_seeds(const char* target, std::size_t api_index, const char* side) {
  M filled;
  FillVisitor v;
  filled.fields(v);
  const M empty{};
  std::int16_t versions[] = {
      M::min_version, std::clamp<std::int16_t>(M::flexible_since, M::min_version, M::max_version), M::max_version};
  for (std::int16_t version : versions) {
    int variant = 0;
    for (const M* m : {static_cast<const M*>(&filled), &empty}) {
      Bytes seed;
      Writer w(seed);
      w.u16(static_cast<std::uint16_t>(api_index));
      w.u16(static_cast<std::uint16_t>(version - M::min_version));
      encode(w, *m, version);
      put(target,
          std::string(api_name(M::api_key)) + "-" + side + "-v" + std::to_string(version) + (variant++ ? "-empty" : ""),
          seed);
    }
  }
}

template <class... Pairs, std::size_t... I>
void all_messages(std::index_sequence<I...>, const char* target = "fuzz_response") {
  using List = std::tuple<Pairs...>;
  ((message_seeds<typename std::tuple_element_t<I, List>::first_type>(target, I, "request"),
    message_seeds<typename std::tuple_element_t<I, List>::second_type>(target, I, "response")),
   ...);
}

// fuzz_group_messages: its API list, then the consumer protocol payloads at
// every version (selectors 12 and 13, just past the APIs).
void group_seeds() {
  all_messages<std::pair<FindCoordinatorRequest, FindCoordinatorResponse>,
               std::pair<JoinGroupRequest, JoinGroupResponse>, std::pair<SyncGroupRequest, SyncGroupResponse>,
               std::pair<HeartbeatRequest, HeartbeatResponse>, std::pair<LeaveGroupRequest, LeaveGroupResponse>,
               std::pair<OffsetCommitRequest, OffsetCommitResponse>, std::pair<OffsetFetchRequest, OffsetFetchResponse>,
               std::pair<OffsetDeleteRequest, OffsetDeleteResponse>, std::pair<ListGroupsRequest, ListGroupsResponse>,
               std::pair<DescribeGroupsRequest, DescribeGroupsResponse>,
               std::pair<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>,
               std::pair<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>>(std::make_index_sequence<12>{},
                                                                                       "fuzz_group_messages");
  ConsumerProtocolSubscription sub;
  FillVisitor fs;
  sub.fields(fs);
  ConsumerProtocolAssignment asg;
  FillVisitor fa;
  asg.fields(fa);
  for (std::int16_t v = 0; v <= 3; ++v) {
    Bytes s{0, 12, 0, 0};
    Bytes e = encode_consumer_subscription(sub, v);
    s.insert(s.end(), e.begin(), e.end());
    put("fuzz_group_messages", "subscription-v" + std::to_string(v), s);
    Bytes a{0, 13, 0, 0};
    Bytes ea = encode_consumer_assignment(asg, v);
    a.insert(a.end(), ea.begin(), ea.end());
    put("fuzz_group_messages", "assignment-v" + std::to_string(v), a);
  }
}

// fuzz_admin_messages: its API list.
void admin_seeds() {
  all_messages<std::pair<DescribeClusterRequest, DescribeClusterResponse>,
               std::pair<DescribeConfigsRequest, DescribeConfigsResponse>,
               std::pair<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>,
               std::pair<ListConfigResourcesRequest, ListConfigResourcesResponse>,
               std::pair<DeleteGroupsRequest, DeleteGroupsResponse>,
               std::pair<DescribeAclsRequest, DescribeAclsResponse>, std::pair<CreateAclsRequest, CreateAclsResponse>,
               std::pair<DeleteAclsRequest, DeleteAclsResponse>, std::pair<ElectLeadersRequest, ElectLeadersResponse>,
               std::pair<DescribeLogDirsRequest, DescribeLogDirsResponse>>(std::make_index_sequence<10>{},
                                                                           "fuzz_admin_messages");
}

// fuzz_share_messages: its API list.
void share_seeds() {
  all_messages<std::pair<ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse>,
               std::pair<ShareGroupDescribeRequest, ShareGroupDescribeResponse>,
               std::pair<ShareFetchRequest, ShareFetchResponse>,
               std::pair<ShareAcknowledgeRequest, ShareAcknowledgeResponse>,
               std::pair<DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse>,
               std::pair<AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse>,
               std::pair<DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse>>(
      std::make_index_sequence<7>{}, "fuzz_share_messages");
}

// fuzz_txn_messages: its API list.
void txn_seeds() {
  all_messages<std::pair<InitProducerIdRequest, InitProducerIdResponse>,
               std::pair<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse>,
               std::pair<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse>, std::pair<EndTxnRequest, EndTxnResponse>,
               std::pair<TxnOffsetCommitRequest, TxnOffsetCommitResponse>,
               std::pair<DescribeProducersRequest, DescribeProducersResponse>,
               std::pair<DescribeTransactionsRequest, DescribeTransactionsResponse>,
               std::pair<ListTransactionsRequest, ListTransactionsResponse>>(std::make_index_sequence<8>{},
                                                                             "fuzz_txn_messages");
}

// Record-batch seeds start with the fuzz_record_batch prefix: flags 0 (no
// aborted list, CRC-valid bytes) and a fetch offset byte of 2 (offset 0).
Bytes record_prefix() { return Bytes{0x00, 0x02}; }

void record_seeds() {
  const char* names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
  for (int c = 0; c <= 4; ++c) {
    ProducerRecord a;
    a.key = Bytes{'k', '1'};
    a.value = Bytes(40, 'v');
    a.timestamp = 1714557600000;
    a.headers.push_back({"trace", std::nullopt});
    ProducerRecord b;
    b.value = std::nullopt;  // tombstone
    b.timestamp = 1714557600005;
    ProducerRecord recs[] = {a, b};
    BatchOptions opt;
    opt.compression = static_cast<Compression>(c);
    opt.base_offset = 5;
    Bytes batch = record_prefix();
    encode_record_batch(recs, opt, batch);
    put("fuzz_record_batch", std::string("batch-") + names[c], batch);

    // A transactional batch whose producer is on the aborted list
    // (READ_COMMITTED drops it): flags 1 = one aborted entry, producer id
    // byte 8 (id 7), first offset 13 - 8 = 5, fetch offset byte 2.
    Bytes txn{0x01, 0x08, 0x00, 0x0d, 0x02};
    BatchOptions t = opt;
    t.producer_id = 7;
    t.producer_epoch = 0;
    t.base_sequence = 0;
    t.transactional = true;
    encode_record_batch(recs, t, txn);
    put("fuzz_record_batch", std::string("txn-") + names[c], txn);

    // Legacy magic 0/1 sets: plain messages and a compressed wrapper.
    for (std::int8_t magic = 0; magic <= 1; ++magic) {
      Bytes set = record_prefix();
      encode_legacy_message(set, 0, magic, 0, 1714557600000, Bytes{'k'}, Bytes{'v', '0'});
      if (c != 0) {
        Bytes inner;
        for (int i = 0; i < 3; ++i)
          encode_legacy_message(inner, magic == 1 ? i : 1 + i, magic, 0, 1714557600000 + i, std::nullopt,
                                Bytes{'v', static_cast<std::uint8_t>('1' + i)});
        Bytes packed;
        compress(static_cast<Compression>(c), ByteSpan(inner), packed);
        encode_legacy_message(set, 3, magic, static_cast<std::int8_t>(c), 1714557600000, std::nullopt, packed);
      }
      put("fuzz_record_batch", std::string("legacy-v") + std::to_string(magic) + "-" + names[c], set);
    }

    // fuzz_decompress: selector (cap index 5 = 1 MiB, codec) + a compressed payload.
    std::string text;
    for (int i = 0; i < 20; ++i) text += "{\"user\":\"u" + std::to_string(i) + "\",\"amount\":1.5}\n";
    Bytes packed;
    compress(static_cast<Compression>(c), ByteSpan(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
             packed);
    Bytes seed{static_cast<std::uint8_t>((5 << 4) | c)};
    seed.insert(seed.end(), packed.begin(), packed.end());
    put("fuzz_decompress", std::string("codec-") + names[c], seed);
    if (c == 3) {
      // Kafka's pre-KIP-57 LZ4 header checksum (covers the magic number too).
      Bytes old = packed;
      std::size_t end = 6 + ((old[4] & 0x08) ? 8 : 0) + ((old[4] & 0x01) ? 4 : 0);
      old[end] = lz4_header_checksum(ByteSpan(old).subspan(0, end));
      Bytes legacy{static_cast<std::uint8_t>((5 << 4) | 5)};
      legacy.insert(legacy.end(), old.begin(), old.end());
      put("fuzz_decompress", "lz4-kafka-legacy-header", legacy);
    }
  }
}

// fuzz_avro: a schema's JSON, a 0x00 byte, then a value in Avro's binary
// encoding (fuzz/fuzz_avro.cpp).
struct AvroValue {
  Bytes b;
  AvroValue& l(std::int64_t v) {  // int, long, enum, union index, count: zigzag varint
    std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
    for (; z >= 0x80; z >>= 7) b.push_back(static_cast<std::uint8_t>((z & 0x7f) | 0x80));
    b.push_back(static_cast<std::uint8_t>(z));
    return *this;
  }
  AvroValue& s(const std::string& v) {  // string, bytes
    l(static_cast<std::int64_t>(v.size()));
    return raw(v);
  }
  AvroValue& raw(const std::string& v) {  // fixed, float, double (little-endian)
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
};

void avro_seed(const std::string& name, const std::string& schema, const AvroValue& value) {
  Bytes seed(schema.begin(), schema.end());
  seed.push_back(0);
  seed.insert(seed.end(), value.b.begin(), value.b.end());
  put("fuzz_avro", name, seed);
}

void avro_seeds() {
  const std::string everything =
      R"({"type":"record","name":"E","namespace":"n","fields":[)"
      R"({"name":"b","type":"boolean"},{"name":"i","type":"int"},)"
      R"({"name":"l","type":"long"},{"name":"f","type":"float"},)"
      R"({"name":"d","type":"double"},{"name":"by","type":"bytes"},)"
      R"({"name":"s","type":"string"},)"
      R"({"name":"e","type":{"type":"enum","name":"C","symbols":["R","G"]}},)"
      R"({"name":"fx","type":{"type":"fixed","name":"F","size":2}},)"
      R"({"name":"a","type":{"type":"array","items":"int"}},)"
      R"({"name":"m","type":{"type":"map","values":["null","string"]}},)"
      R"({"name":"il","type":["int","long"]},)"
      R"({"name":"u","type":["null","int","string","C"]},)"
      R"({"name":"p","type":{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}},)"
      R"({"name":"op","type":["null","P"]}]})";
  AvroValue v;
  v.raw(std::string(1, '\x01')).l(-3).l(1714557600000).raw(std::string("\x00\x00\xc0\x3f", 4));
  v.raw(std::string("\x00\x00\x00\x00\x00\x00\x04\xc0", 8)).s(std::string("\x00\xff", 2)).s("h\xc3\xa9");
  v.l(1).raw("ab").l(2).l(1).l(-1).l(0).l(-2).l(8).s("k").l(1).s("v").s("n").l(0).l(0);
  v.l(1).l(1LL << 40).l(3).l(1).l(7).l(1).l(-7);
  avro_seed("record-everything", everything, v);
  AvroValue truncated = v;
  truncated.b.resize(truncated.b.size() / 2);
  avro_seed("record-truncated", everything, truncated);

  const std::string logical =
      R"({"type":"record","name":"L","fields":[)"
      R"({"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},)"
      R"({"name":"fd","type":{"type":"fixed","name":"D","size":17,"logicalType":"decimal","precision":38}},)"
      R"({"name":"day","type":{"type":"int","logicalType":"date"}},)"
      R"({"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},)"
      R"({"name":"lt","type":{"type":"long","logicalType":"local-timestamp-micros"}},)"
      R"({"name":"id","type":{"type":"string","logicalType":"uuid"}}]})";
  AvroValue lv;
  lv.s("\x30\x39")
      .raw(std::string(17, '\xff'))
      .l(19000)
      .l(1714557600000)
      .l(-1)
      .s("123e4567-e89b-12d3-a456-426614174000");
  avro_seed("record-logical", logical, lv);

  // Defaults, aliases and a named type used twice (resolved against itself).
  const std::string defaults = R"({"type":"record","name":"D","fields":[)"
                               R"({"name":"a","type":"int","aliases":["b"]},{"name":"b","type":"string"},)"
                               R"({"name":"r","type":{"type":"record","name":"R","fields":[)"
                               R"({"name":"x","type":"int","default":1}]},"default":{}},)"
                               R"({"name":"r2","type":"R","default":{"x":2}},)"
                               R"({"name":"e","type":{"type":"enum","name":"S","symbols":["A","B"],"default":"A"}}]})";
  avro_seed("record-defaults", defaults, AvroValue().l(5).s("x").l(6).l(-6).l(1));

  // Two records of one unqualified name: each value in its own member.
  avro_seed("union-same-short-names",
            R"([{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":"int"}]},)"
            R"({"type":"record","name":"R","namespace":"b","fields":[{"name":"y","type":"string"}]}])",
            AvroValue().l(1).s("hi"));
  avro_seed("array-of-nullable-long", R"({"type":"array","items":["null","long"]})",
            AvroValue().l(-3).l(4).l(0).l(1).l(9).l(1).l(-9).l(0));
  avro_seed("map-of-arrays", R"({"type":"map","values":{"type":"array","items":"string"}})",
            AvroValue().l(1).s("k").l(2).s("a").s("").l(0).l(0));
  avro_seed("array-of-empty-records", R"({"type":"array","items":{"type":"record","name":"Z","fields":[]}})",
            AvroValue().l(1000).l(0));
  avro_seed("union-bad-index", R"(["null","string","int"])", AvroValue().l(7));
  avro_seed("long-over-ten-bytes", R"("long")", AvroValue().raw(std::string(11, '\xff')));
  avro_seed("schema-only", R"({"type":"fixed","name":"F","size":4})", AvroValue());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  all_messages<std::pair<ProduceRequest, ProduceResponse>, std::pair<FetchRequest, FetchResponse>,
               std::pair<ListOffsetsRequest, ListOffsetsResponse>, std::pair<MetadataRequest, MetadataResponse>,
               std::pair<ApiVersionsRequest, ApiVersionsResponse>, std::pair<CreateTopicsRequest, CreateTopicsResponse>,
               std::pair<DeleteTopicsRequest, DeleteTopicsResponse>,
               std::pair<DeleteRecordsRequest, DeleteRecordsResponse>,
               std::pair<CreatePartitionsRequest, CreatePartitionsResponse>,
               std::pair<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>>(std::make_index_sequence<10>{});
  group_seeds();
  admin_seeds();
  share_seeds();
  txn_seeds();
  record_seeds();
  avro_seeds();
  return 0;
}
