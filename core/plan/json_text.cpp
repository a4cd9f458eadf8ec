#include "core/plan/json_text.h"

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_set>

#include "core/ir/limits.h"
#include "core/plan/diagnostics.h"
#include "core/plan/json_reader.h"

namespace paraproof::planjson {

namespace {

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 1, column 5: REASON".
std::string parseReason(const std::string& what) {
  size_t at = what.find("parse error");
  if (at == std::string::npos) return what;
  size_t colon = what.find(": ", at);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

constexpr size_t kLineWidth = 110;
constexpr size_t kRecordWidth = 180;

int depth(const Json& j) {
  int d = 0;
  if (j.is_structured())
    for (const Json& c : j)
      d = std::max(d, depth(c));
  return j.is_structured() ? d + 1 : 0;
}

// Short values stay on one line, and so do records (an op, a tensor, a lineage entry: shallow values) of
// moderate length, so a plan reads one op per line.
// The length of j.dump(), or more than `limit` once it is known to exceed it: a plan's top levels are
// hundreds of megabytes, so whether a value fits on a line is decided without dumping it.
size_t quotedSize(const std::string& s) {
  const bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 ||
           static_cast<unsigned char>(c) >= 0x7f;
  });
  return plain ? s.size() + 2 : Json(s).dump().size();
}

size_t dumpSizeUpTo(const Json& j, size_t limit) {
  if (j.is_string()) return quotedSize(j.get_ref<const std::string&>());
  if (j.is_number_unsigned()) return std::to_string(j.get<uint64_t>()).size();
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>()).size();
  if (!j.is_structured()) return j.dump().size();
  size_t n = 2;  // the brackets
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it != j.begin()) ++n;                          // ","
    if (j.is_object()) n += quotedSize(it.key()) + 1;  // "key":
    if (n > limit) return n;
    n += dumpSizeUpTo(*it, limit - n);
    if (n > limit) return n;
  }
  return n;
}

void format(const Json& j, int indent, std::string& out) {
  if (!j.is_structured() || j.empty()) {
    out += j.dump();
    return;
  }
  const size_t size = dumpSizeUpTo(j, kRecordWidth);
  if (size + indent <= kLineWidth || (size <= kRecordWidth && depth(j) <= 3)) {
    out += j.dump();
    return;
  }
  std::string pad(indent + 2, ' ');
  bool first = true;
  out += j.is_object() ? "{\n" : "[\n";
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      out += first ? "" : ",\n";
      first = false;
      out += pad + Json(key).dump() + ": ";
      format(value, indent + 2, out);
    }
  } else {
    for (const Json& value : j) {
      out += first ? "" : ",\n";
      first = false;
      out += pad;
      format(value, indent + 2, out);
    }
  }
  out += "\n" + std::string(indent, ' ') + (j.is_object() ? "}" : "]");
}

// Builds the DOM like Json::parse, but stops at the first value past the nesting or string limits, or at a
// key repeated in one object (nlohmann keeps the last silently: two readers could disagree on the plan), and
// names it by JSON pointer. The depth bound also keeps every later recursive walk (dump, copy) shallow.
class BoundedSax {
 public:
  using Dom = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit BoundedSax(Json& root) : dom_(root) {}

  bool null() { return dom_.null() && done(); }
  bool boolean(bool v) { return dom_.boolean(v) && done(); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v) && done(); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v) && done(); }
  bool number_float(Json::number_float_t v, const std::string& s) {
    return dom_.number_float(v, s) && done();
  }
  bool string(std::string& v) {
    if (static_cast<int64_t>(v.size()) > limits::kMaxStringBytes)
      return stop(pointer(), "string of " + std::to_string(v.size()) + " bytes exceeds the limit of " +
                                 std::to_string(limits::kMaxStringBytes));
    return dom_.string(v) && done();
  }
  bool binary(Json::binary_t& v) { return dom_.binary(v) && done(); }
  bool start_object(std::size_t n) { return open(false) && dom_.start_object(n); }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (static_cast<int64_t>(k.size()) > limits::kMaxStringBytes)
      return stop(pointer(), "object key of " + std::to_string(k.size()) + " bytes exceeds the limit of " +
                                 std::to_string(limits::kMaxStringBytes));
    f.key = k;
    if (!f.insertKey(k)) return stop(pointer(), "duplicate key '" + k + "' in one object");
    return dom_.key(k);
  }
  bool end_object() { return close() && dom_.end_object() && done(); }
  bool start_array(std::size_t n) { return open(true) && dom_.start_array(n); }
  bool end_array() { return close() && dom_.end_array() && done(); }
  template <class E>
  bool parse_error(std::size_t pos, const std::string& token, const E& e) {
    // A number too large for a double ("1e705") is reported as out_of_range, not as a parse error: it is
    // bad input all the same, named by its place (never an exception the loader's callers do not expect).
    if constexpr (!std::is_same_v<E, Json::parse_error>)
      return stop(pointer(), "number '" + token + "' is out of range (byte " + std::to_string(pos) + ")");
    else
      return dom_.parse_error(pos, token, e);  // throws
  }

  const std::optional<std::pair<std::string, std::string>>& failure() const { return failure_; }

 private:
  struct Frame {
    bool array = false;
    size_t count = 0;  // array elements completed
    std::string key;   // object: the current key
    // Keys seen: a short list (most objects have a few), a hash set once an object is large (lineage maps).
    std::vector<std::string> few;
    std::unordered_set<std::string> many;
    bool insertKey(const std::string& k) {
      if (many.empty()) {
        if (std::find(few.begin(), few.end(), k) != few.end()) return false;
        few.push_back(k);
        if (few.size() > 16)
          many.insert(std::make_move_iterator(few.begin()), std::make_move_iterator(few.end()));
        return true;
      }
      return many.insert(k).second;
    }
  };

  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames_)
      p += f.array ? "/" + std::to_string(f.count) : "/" + escapeToken(f.key);
    return p;
  }
  bool stop(std::string ptr, std::string message) {
    failure_.emplace(std::move(ptr), std::move(message));
    return false;
  }
  // A value finished: the enclosing array moves to its next element.
  bool done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    return true;
  }
  bool open(bool array) {
    if (static_cast<int>(frames_.size()) >= limits::kMaxJsonDepth)
      return stop(pointer(), "JSON nesting deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels");
    frames_.emplace_back();
    frames_.back().array = array;
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  Dom dom_;
  std::vector<Frame> frames_;
  std::optional<std::pair<std::string, std::string>> failure_;
};

}  // namespace

Json parseJsonText(const std::string& text, const std::string& source) {
  try {
    Json j;
    BoundedSax sax(j);
    if (!Json::sax_parse(text, &sax)) {
      const auto& [ptr, message] = *sax.failure();
      throw PlanError({Diagnostic{place(source, ptr), message}});
    }
    return j;
  } catch (const Json::parse_error& e) {
    // Line and column of the last character read, counted as nlohmann does.
    size_t end = std::min(e.byte, text.size());
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + end, '\n'));
    size_t lastNewline = text.rfind('\n', end == 0 ? 0 : end - 1);
    size_t column = (lastNewline == std::string::npos || end == 0) ? end : end - lastNewline - 1;
    std::string where = source + ":" + std::to_string(line) + ":" + std::to_string(column);
    throw PlanError({Diagnostic{where, "malformed JSON at line " + std::to_string(line) + ", column " +
                                           std::to_string(column) + " (byte " + std::to_string(e.byte) +
                                           "): " + parseReason(e.what())}});
  }
}

std::string formatJson(const Json& j) {
  std::string out;
  format(j, 0, out);
  out += "\n";
  return out;
}

void formatJsonAt(const Json& j, int indent, std::string& out) {
  format(j, indent, out);
}

}  // namespace paraproof::planjson
