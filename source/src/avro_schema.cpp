// Avro schema JSON -> Tree, Spark's type names and the binary encoding of
// field defaults (avro_schema.hpp).
#include "avro_schema.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <simdjson.h>

#include "kwire/source/avro.hpp"

namespace kwire::source::avro_detail {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

[[noreturn]] void fail(const std::string& what) { throw AvroSchemaError("Avro schema: " + what); }

std::optional<Type> primitive(std::string_view n) {
  if (n == "null") return Type::null;
  if (n == "boolean") return Type::boolean;
  if (n == "int") return Type::int_;
  if (n == "long") return Type::long_;
  if (n == "float") return Type::float_;
  if (n == "double") return Type::double_;
  if (n == "bytes") return Type::bytes;
  if (n == "string") return Type::string;
  return std::nullopt;
}

bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!(alpha || (i > 0 && c >= '0' && c <= '9'))) return false;
  }
  return true;
}

std::optional<std::string_view> string_attr(const object& o, std::string_view key) {
  element e;
  if (o.at_key(key).get(e)) return std::nullopt;
  std::string_view s;
  if (e.get_string().get(s)) fail(fmt::format("attribute \"{}\" must be a string", key));
  return s;
}

class Parser {
 public:
  explicit Parser(Tree& tree) : tree_(tree) {}

  const Node* parse(element e, const std::string& ns) {
    if (++depth_ > 256) fail("nested more than 256 levels deep");
    const Node* n = parse_inner(e, ns);
    --depth_;
    measure(n);
    return n;
  }

 private:
  Node* make(Type t) {
    tree_.nodes.push_back(std::make_unique<Node>());
    tree_.nodes.back()->type = t;
    return tree_.nodes.back().get();
  }

  std::string full_name(std::string_view name, std::string_view ns) const {
    if (name.find('.') != std::string_view::npos || ns.empty()) return std::string(name);
    return fmt::format("{}.{}", ns, name);
  }

  const Node* reference(std::string_view name, const std::string& ns) {
    for (const std::string& candidate : {full_name(name, ns), std::string(name)}) {
      if (in_progress_.count(candidate))
        fail(fmt::format("recursive reference to \"{}\": recursive schemas are not supported (as in Spark)", name));
      auto it = named_.find(candidate);
      if (it != named_.end()) return it->second;
    }
    fail(fmt::format("unknown type \"{}\"", name));
  }

  const Node* parse_inner(element e, const std::string& ns) {
    switch (e.type()) {
      case element_type::STRING: {
        const std::string_view s = e.get_string().value_unsafe();
        if (auto p = primitive(s)) return make(*p);
        return reference(s, ns);
      }
      case element_type::ARRAY: return parse_union(e.get_array().value_unsafe(), ns);
      case element_type::OBJECT: return parse_object(e.get_object().value_unsafe(), ns);
      default: fail(fmt::format("a schema must be a string, an object or an array, not {}", simdjson::minify(e)));
    }
  }

  const Node* parse_union(simdjson::dom::array a, const std::string& ns) {
    Node* u = make(Type::union_);
    std::set<std::string> seen;
    for (element b : a) {
      const Node* branch = parse(b, ns);
      if (branch->type == Type::union_) fail("a union cannot directly contain another union");
      const std::string key = branch->name.empty() ? std::to_string(static_cast<int>(branch->type)) : branch->name;
      if (!seen.insert(key).second) fail(fmt::format("union {} has the same type twice", simdjson::minify(a)));
      u->branches.push_back(branch);
    }
    if (u->branches.empty()) fail("a union needs at least one branch");
    return u;
  }

  std::string named_full(const object& o, const std::string& ns, std::string* own_ns) {
    auto name = string_attr(o, "name");
    if (!name) fail(fmt::format("a named type needs a \"name\": {}", simdjson::minify(o)));
    auto explicit_ns = string_attr(o, "namespace");
    const std::string use_ns = explicit_ns ? std::string(*explicit_ns) : ns;
    std::string full = full_name(*name, use_ns);
    const auto dot = full.rfind('.');
    *own_ns = dot == std::string::npos ? std::string() : full.substr(0, dot);
    const std::string_view last = short_name(full);
    if (!valid_name(last)) fail(fmt::format("invalid name \"{}\"", *name));
    if (named_.count(full) || in_progress_.count(full)) fail(fmt::format("the name \"{}\" is defined twice", full));
    return full;
  }

  std::vector<std::string> aliases(const object& o, const std::string& ns) {
    std::vector<std::string> out;
    element e;
    if (o.at_key("aliases").get(e)) return out;
    simdjson::dom::array a;
    if (e.get_array().get(a)) fail("\"aliases\" must be an array of strings");
    for (element x : a) {
      std::string_view s;
      if (x.get_string().get(s)) fail("\"aliases\" must be an array of strings");
      out.push_back(ns.empty() ? std::string(s) : full_name(s, ns));
    }
    return out;
  }

  void logical(Node* n, const object& o) {
    auto lt = string_attr(o, "logicalType");
    if (!lt) return;
    const Type t = n->type;
    if (*lt == "decimal" && (t == Type::bytes || t == Type::fixed)) {
      std::int64_t p = 0, s = 0;
      element e;
      if (o.at_key("precision").get(e) || e.get_int64().get(p) || p <= 0) return;
      if (!o.at_key("scale").get(e) && (e.get_int64().get(s) || s < 0)) return;
      if (s > p) return;
      if (t == Type::fixed) {
        // The largest precision the fixed size can hold.
        const double max_digits = std::floor(std::log10(2.0) * static_cast<double>(8 * n->size - 1));
        if (static_cast<double>(p) > max_digits) return;
      }
      n->logical = Logical::decimal;
      n->precision = static_cast<int>(p);
      n->scale = static_cast<int>(s);
    } else if (*lt == "uuid" && t == Type::string) {
      n->logical = Logical::uuid;
    } else if (*lt == "date" && t == Type::int_) {
      n->logical = Logical::date;
    } else if (*lt == "time-millis" && t == Type::int_) {
      n->logical = Logical::time_millis;
    } else if (t == Type::long_) {
      if (*lt == "time-micros") n->logical = Logical::time_micros;
      else if (*lt == "timestamp-millis") n->logical = Logical::timestamp_millis;
      else if (*lt == "timestamp-micros") n->logical = Logical::timestamp_micros;
      else if (*lt == "local-timestamp-millis") n->logical = Logical::local_timestamp_millis;
      else if (*lt == "local-timestamp-micros") n->logical = Logical::local_timestamp_micros;
    }
  }

  const Node* parse_object(const object& o, const std::string& ns) {
    element te;
    if (o.at_key("type").get(te)) fail(fmt::format("missing \"type\" in {}", simdjson::minify(o)));
    std::string_view tname;
    if (te.get_string().get(tname)) {
      // {"type": {...}} or {"type": [...]}: the inner schema.
      return parse(te, ns);
    }
    if (auto p = primitive(tname)) {
      Node* n = make(*p);
      logical(n, o);
      return n;
    }
    if (tname == "record" || tname == "error") return parse_record(o, ns);
    if (tname == "enum") return parse_enum(o, ns);
    if (tname == "fixed") return parse_fixed(o, ns);
    if (tname == "array" || tname == "map") {
      Node* n = make(tname == "array" ? Type::array : Type::map);
      element inner;
      if (o.at_key(tname == "array" ? "items" : "values").get(inner))
        fail(fmt::format("{} needs \"{}\"", tname, tname == "array" ? "items" : "values"));
      n->items = parse(inner, ns);
      return n;
    }
    return reference(tname, ns);
  }

  const Node* parse_record(const object& o, const std::string& ns) {
    Node* n = make(Type::record);
    std::string own_ns;
    n->name = named_full(o, ns, &own_ns);
    n->aliases = aliases(o, own_ns);
    in_progress_.insert(n->name);
    element fe;
    simdjson::dom::array fields;
    if (o.at_key("fields").get(fe) || fe.get_array().get(fields))
      fail(fmt::format("record \"{}\" needs a \"fields\" array", n->name));
    std::set<std::string, std::less<>> names;
    for (element f : fields) {
      object fo;
      if (f.get_object().get(fo)) fail(fmt::format("record \"{}\": a field must be an object", n->name));
      Field field;
      auto fname = string_attr(fo, "name");
      if (!fname || !valid_name(*fname)) fail(fmt::format("record \"{}\": a field has no valid \"name\"", n->name));
      field.name = std::string(*fname);
      if (!names.insert(field.name).second)
        fail(fmt::format("record \"{}\" has the field \"{}\" twice", n->name, field.name));
      element ft;
      if (fo.at_key("type").get(ft)) fail(fmt::format("field \"{}.{}\" has no \"type\"", n->name, field.name));
      field.type = parse(ft, own_ns);
      element de;
      if (!fo.at_key("default").get(de)) field.default_json = simdjson::minify(de);
      element ae;
      if (!fo.at_key("aliases").get(ae)) {
        simdjson::dom::array aa;
        if (ae.get_array().get(aa))
          fail(fmt::format("field \"{}.{}\": \"aliases\" must be an array", n->name, field.name));
        for (element x : aa) {
          std::string_view s;
          if (x.get_string().get(s)) fail(fmt::format("field \"{}.{}\": aliases must be strings", n->name, field.name));
          field.aliases.emplace_back(s);
        }
      }
      n->fields.push_back(std::move(field));
    }
    in_progress_.erase(n->name);
    named_[n->name] = n;
    // Defaults are checked once the record is complete (they may use it).
    for (const Field& f : n->fields) {
      if (f.default_json) {
        try {
          (void)encode_default(*f.type, *f.default_json);
        } catch (const AvroSchemaError& e) {
          fail(fmt::format("field \"{}.{}\": default {} does not fit its type ({})", n->name, f.name, *f.default_json,
                           e.what()));
        }
      }
    }
    return n;
  }

  const Node* parse_enum(const object& o, const std::string& ns) {
    Node* n = make(Type::enumeration);
    std::string own_ns;
    n->name = named_full(o, ns, &own_ns);
    n->aliases = aliases(o, own_ns);
    element se;
    simdjson::dom::array syms;
    if (o.at_key("symbols").get(se) || se.get_array().get(syms))
      fail(fmt::format("enum \"{}\" needs a \"symbols\" array", n->name));
    std::set<std::string, std::less<>> seen;
    for (element s : syms) {
      std::string_view v;
      if (s.get_string().get(v) || !valid_name(v)) fail(fmt::format("enum \"{}\" has an invalid symbol", n->name));
      if (!seen.insert(std::string(v)).second) fail(fmt::format("enum \"{}\" has the symbol \"{}\" twice", n->name, v));
      n->symbols.emplace_back(v);
    }
    if (auto d = string_attr(o, "default")) {
      if (!seen.count(std::string(*d))) fail(fmt::format("enum \"{}\": default \"{}\" is not a symbol", n->name, *d));
      n->enum_default = std::string(*d);
    }
    named_[n->name] = n;
    return n;
  }

  const Node* parse_fixed(const object& o, const std::string& ns) {
    Node* n = make(Type::fixed);
    std::string own_ns;
    n->name = named_full(o, ns, &own_ns);
    n->aliases = aliases(o, own_ns);
    element se;
    std::int64_t size = -1;
    if (o.at_key("size").get(se) || se.get_int64().get(size) || size < 0 || size > (1 << 30))
      fail(fmt::format("fixed \"{}\" needs a \"size\" from 0 to 2^30", n->name));
    n->size = size;
    logical(n, o);
    named_[n->name] = n;
    return n;
  }

  // A new node's size once expanded (bounded by kMaxExpandedTypes) and the
  // fewest bytes its values take; its children are measured already (a
  // reference names a finished type, so it is measured too).
  void measure(const Node* n) {
    if (measured_.count(n)) return;
    std::int64_t types = 1, min_bytes = 1;
    switch (n->type) {
      case Type::null: min_bytes = 0; break;
      case Type::float_: min_bytes = 4; break;
      case Type::double_: min_bytes = 8; break;
      case Type::fixed: min_bytes = n->size; break;
      case Type::record:
        min_bytes = 0;
        for (const Field& f : n->fields) {
          types += f.type->types;
          min_bytes += f.type->min_bytes;
        }
        break;
      case Type::array: types += n->items->types; break;
      case Type::map: types += 2 + n->items->types; break;  // entries and keys
      case Type::union_:
        for (const Node* b : n->branches) types += b->types;
        break;
      default: break;
    }
    if (types > kMaxExpandedTypes)
      fail(fmt::format("{} stands for more than {} types once its named types are expanded at each use",
                       n->name.empty() ? std::string("the schema") : "\"" + n->name + "\"", kMaxExpandedTypes));
    measured_.insert(n);
    // The node is one of tree_.nodes (not const); parse() hands it out as const.
    Node* owned = const_cast<Node*>(n);
    owned->types = types;
    owned->min_bytes = min_bytes;
  }

  Tree& tree_;
  int depth_ = 0;
  std::set<const Node*> measured_;
  std::map<std::string, const Node*, std::less<>> named_;
  std::set<std::string, std::less<>> in_progress_;
};

// ---- default values ----

void put_long(std::string& out, std::int64_t v) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

void encode(const Node& n, element e, std::string& out);

// Bytes and fixed defaults are strings whose code points 0-255 are the bytes.
std::string latin1_bytes(element e) {
  std::string_view s;
  if (e.get_string().get(s)) fail("expected a string");
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c & 0xe0) == 0xc0 && i + 1 < s.size() && c <= 0xc3) {
      out.push_back(static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f)));
    } else {
      fail("a bytes default may only hold code points up to U+00FF");
    }
  }
  return out;
}

bool fits(const Node& n, element e) {
  try {
    std::string scratch;
    encode(n, e, scratch);
    return true;
  } catch (const AvroSchemaError&) {
    return false;
  }
}

void encode(const Node& n, element e, std::string& out) {
  switch (n.type) {
    case Type::null:
      if (!e.is_null()) fail("expected null");
      return;
    case Type::boolean: {
      bool b = false;
      if (e.get_bool().get(b)) fail("expected true or false");
      out.push_back(b ? 1 : 0);
      return;
    }
    case Type::int_:
    case Type::long_: {
      std::int64_t v = 0;
      if (e.get_int64().get(v)) fail("expected an integer");
      if (n.type == Type::int_ && (v < INT32_MIN || v > INT32_MAX)) fail("integer out of int range");
      put_long(out, v);
      return;
    }
    case Type::float_: {
      double d = 0;
      if (e.get_double().get(d)) fail("expected a number");
      const float f = static_cast<float>(d);
      char b[4];
      std::memcpy(b, &f, 4);
      out.append(b, 4);
      return;
    }
    case Type::double_: {
      double d = 0;
      if (e.get_double().get(d)) fail("expected a number");
      char b[8];
      std::memcpy(b, &d, 8);
      out.append(b, 8);
      return;
    }
    case Type::bytes:
    case Type::string: {
      std::string bytes;
      if (n.type == Type::bytes) {
        bytes = latin1_bytes(e);
      } else {
        std::string_view s;
        if (e.get_string().get(s)) fail("expected a string");
        bytes = std::string(s);
      }
      put_long(out, static_cast<std::int64_t>(bytes.size()));
      out += bytes;
      return;
    }
    case Type::fixed: {
      const std::string bytes = latin1_bytes(e);
      if (static_cast<std::int64_t>(bytes.size()) != n.size) fail("fixed default of the wrong size");
      out += bytes;
      return;
    }
    case Type::enumeration: {
      std::string_view s;
      if (e.get_string().get(s)) fail("expected a symbol");
      for (std::size_t i = 0; i < n.symbols.size(); ++i) {
        if (n.symbols[i] == s) {
          put_long(out, static_cast<std::int64_t>(i));
          return;
        }
      }
      fail(fmt::format("\"{}\" is not a symbol", s));
    }
    case Type::record: {
      object o;
      if (e.get_object().get(o)) fail("expected an object");
      for (const Field& f : n.fields) {
        element v;
        if (!o.at_key(f.name).get(v)) {
          encode(*f.type, v, out);
        } else if (f.default_json) {
          out += encode_default(*f.type, *f.default_json);
        } else {
          fail(fmt::format("field \"{}\" missing", f.name));
        }
      }
      return;
    }
    case Type::array: {
      simdjson::dom::array a;
      if (e.get_array().get(a)) fail("expected an array");
      if (a.size() > 0) {
        put_long(out, static_cast<std::int64_t>(a.size()));
        for (element x : a) encode(*n.items, x, out);
      }
      out.push_back(0);
      return;
    }
    case Type::map: {
      object o;
      if (e.get_object().get(o)) fail("expected an object");
      if (o.size() > 0) {
        put_long(out, static_cast<std::int64_t>(o.size()));
        for (auto [k, v] : o) {
          put_long(out, static_cast<std::int64_t>(k.size()));
          out += k;
          encode(*n.items, v, out);
        }
      }
      out.push_back(0);
      return;
    }
    case Type::union_: {
      // The first branch (Avro 1.11); any branch the value fits (Avro 1.12).
      for (std::size_t i = 0; i < n.branches.size(); ++i) {
        if (fits(*n.branches[i], e)) {
          put_long(out, static_cast<std::int64_t>(i));
          encode(*n.branches[i], e, out);
          return;
        }
      }
      fail("fits no branch of the union");
    }
  }
}

}  // namespace

std::string_view short_name(std::string_view full_name) {
  const auto dot = full_name.rfind('.');
  return dot == std::string_view::npos ? full_name : full_name.substr(dot + 1);
}

std::shared_ptr<const Tree> parse_schema(std::string_view json) {
  auto tree = std::make_shared<Tree>();
  tree->json = std::string(json);
  simdjson::dom::parser parser;
  element doc;
  if (auto err = parser.parse(tree->json).get(doc))
    fail(fmt::format("invalid JSON ({})", simdjson::error_message(err)));
  Parser p(*tree);
  tree->root = p.parse(doc, "");
  return tree;
}

std::string encode_default(const Node& node, std::string_view json) {
  simdjson::dom::parser parser;
  element doc;
  if (parser.parse(json.data(), json.size()).get(doc)) fail("invalid default JSON");
  std::string out;
  encode(node, doc, out);
  return out;
}

std::string spark_type(const Node& n) {
  switch (n.type) {
    case Type::null: return "VOID";
    case Type::boolean: return "BOOLEAN";
    case Type::int_: return n.logical == Logical::date ? "DATE" : "INT";
    case Type::long_:
      if (n.logical == Logical::timestamp_millis || n.logical == Logical::timestamp_micros) return "TIMESTAMP";
      if (n.logical == Logical::local_timestamp_millis || n.logical == Logical::local_timestamp_micros)
        return "TIMESTAMP_NTZ";
      return "BIGINT";
    case Type::float_: return "FLOAT";
    case Type::double_: return "DOUBLE";
    case Type::bytes:
    case Type::fixed:
      return n.logical == Logical::decimal ? fmt::format("DECIMAL({},{})", n.precision, n.scale) : "BINARY";
    case Type::string:
    case Type::enumeration: return "STRING";
    case Type::record: {
      std::string s = "STRUCT<";
      for (std::size_t i = 0; i < n.fields.size(); ++i) {
        if (i) s += ", ";
        s += n.fields[i].name + ": " + spark_type(*n.fields[i].type);
      }
      return s + ">";
    }
    case Type::array: return "ARRAY<" + spark_type(*n.items) + ">";
    case Type::map: return "MAP<STRING, " + spark_type(*n.items) + ">";
    case Type::union_: {
      std::vector<const Node*> non_null;
      for (const Node* b : n.branches)
        if (b->type != Type::null) non_null.push_back(b);
      if (non_null.empty()) return "VOID";
      if (non_null.size() == 1) return spark_type(*non_null[0]);
      if (non_null.size() == 2) {
        const Type a = non_null[0]->type, b = non_null[1]->type;
        if ((a == Type::int_ && b == Type::long_) || (a == Type::long_ && b == Type::int_)) return "BIGINT";
        if ((a == Type::float_ && b == Type::double_) || (a == Type::double_ && b == Type::float_)) return "DOUBLE";
      }
      std::string s = "STRUCT<";
      for (std::size_t i = 0; i < non_null.size(); ++i) {
        if (i) s += ", ";
        s += fmt::format("member{}: {}", i, spark_type(*non_null[i]));
      }
      return s + ">";
    }
  }
  return "VOID";
}

}  // namespace kwire::source::avro_detail
