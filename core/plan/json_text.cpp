#include "core/plan/json_text.h"

#include <algorithm>

#include "core/plan/diagnostics.h"

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
void format(const Json& j, int indent, std::string& out) {
  std::string compact = j.dump();
  if (!j.is_structured() || j.empty() || compact.size() + indent <= kLineWidth ||
      (compact.size() <= kRecordWidth && depth(j) <= 3)) {
    out += compact;
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

}  // namespace

Json parseJsonText(const std::string& text, const std::string& source) {
  try {
    return Json::parse(text);
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

}  // namespace paraproof::planjson
