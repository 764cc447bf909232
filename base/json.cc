// base/json.cc: json::Parse as a SAX handler over nlohmann's parser, which
// lets the checks nlohmann lacks (duplicate keys, depth, non-finite
// numbers) stop the parse at the first offence instead of after building
// the whole value.
#include "base/json.h"

#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace crawld::json {

namespace {

// Builds the value from SAX events. Members are appended to the object's
// vector directly: ordered_json's own insertion searches the object first
// (linear), which would make a hostile object of n keys cost n^2; the
// per-object key set below makes duplicate detection linear instead.
class Builder final : public nlohmann::json_sax<Json> {
 public:
  explicit Builder(const Limits& limits) : limits_(limits) {}

  bool null() override { return Put(Json(nullptr)); }
  bool boolean(bool b) override { return Put(Json(b)); }
  bool number_integer(number_integer_t v) override { return Put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Put(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override {
    // nlohmann reads "1e400" as infinity; RFC 8259 section 9 lets a parser
    // limit the range, and a non-finite double could not be written back.
    if (!std::isfinite(v)) {
      return Fail(Status::InvalidArgument("JSON: number out of range"));
    }
    return Put(Json(v));
  }
  bool string(string_t& s) override { return Put(Json(std::move(s))); }
  bool binary(binary_t&) override {
    return Fail(Status::InvalidArgument("JSON: binary value"));  // not JSON
  }
  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool key(string_t& k) override {
    if (!stack_.back().keys.insert(k).second) {
      // Shown in an error reply: cut, since a key can be a megabyte.
      const std::string shown = k.size() > 64 ? k.substr(0, 64) + "..." : k;
      return Fail(
          Status::InvalidArgument("JSON: duplicate key " + Dump(Json(shown))));
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // what() is "[json.exception.parse_error.101] parse error at line 1,
    // column 5: syntax error while parsing value - invalid literal; last
    // read: '...'". Keep the reason; the last token can be the whole input.
    std::string why = ex.what();
    if (size_t col = why.find("column "); col != std::string::npos) {
      if (size_t colon = why.find(": ", col); colon != std::string::npos) {
        why.erase(0, colon + 2);
      }
    }
    if (size_t last = why.find("; last read"); last != std::string::npos) {
      why.erase(last);
    }
    const size_t byte = position > 0 ? position - 1 : 0;
    return Fail(Status::InvalidArgument("JSON: " + why + " at byte " +
                                        std::to_string(byte)));
  }

  Result<Json> Take() {
    if (!error_.ok()) return error_;
    return std::move(root_);
  }

 private:
  struct Frame {
    Json* value;
    std::unordered_set<std::string> keys;
  };

  bool Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    return false;
  }

  // Adds v to the open container (or as the root); returns where it went.
  Json* Add(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back().value;
    if (top.is_array()) {
      auto& items = top.get_ref<Json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    // The base vector's emplace_back: see the class comment.
    auto& members = top.get_ref<Json::object_t&>();
    members.emplace_back(std::move(key_), std::move(v));
    return &members.back().second;
  }

  bool Put(Json v) {
    Add(std::move(v));
    return true;
  }

  // Pointers in stack_ stay valid: only the innermost open container grows,
  // and it never holds an open one.
  bool Open(Json container) {
    if (stack_.size() + 1 > static_cast<size_t>(limits_.max_depth)) {
      return Fail(Status::ResourceExhausted("JSON nested deeper than " +
                                            std::to_string(limits_.max_depth)));
    }
    stack_.push_back({Add(std::move(container)), {}});
    return true;
  }

  Limits limits_;
  Json root_;
  std::vector<Frame> stack_;
  std::string key_;
  Status error_;
};

}  // namespace

Result<Json> Parse(std::string_view text, const Limits& limits) {
  if (text.size() > limits.max_bytes) {
    return Status::ResourceExhausted(
        "JSON text larger than " + std::to_string(limits.max_bytes) + " bytes");
  }
  // nlohmann skips a UTF-8 byte order mark; RFC 8259 section 8.1 says a
  // parser may refuse it, and crawld's parser always has.
  if (text.starts_with("\xEF\xBB\xBF")) {
    return Status::InvalidArgument("JSON: byte order mark at byte 0");
  }
  Builder builder(limits);
  try {
    const bool ok =
        Json::sax_parse(text.data(), text.data() + text.size(), &builder);
    Result<Json> out = builder.Take();
    if (!ok && out.ok()) return Status::InvalidArgument("JSON: invalid text");
    return out;
  } catch (const std::exception& e) {
    // Only allocation failure is expected; no exception leaves base/.
    return Status::ResourceExhausted(std::string("JSON: ") + e.what());
  }
}

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void AppendQuoted(std::string* out, std::string_view s) {
  out->append(Dump(Json(s)));
}

const Json* Find(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  for (const auto& [k, v] : object.get_ref<const Json::object_t&>()) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace crawld::json
