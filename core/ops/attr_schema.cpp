#include "core/ops/attr_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/ir/limits.h"

namespace paraproof::ops {

namespace {

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string quoted(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", " : "") + ("'" + names[i] + "'");
  return s;
}

bool isInt(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

// Magnitude within the attribute bound (an unsigned value above int64 is above it too).
bool intInBounds(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(limits::kMaxAttrInteger);
  double d = v.get<double>();
  return std::abs(d) <= static_cast<double>(limits::kMaxAttrInteger);
}

std::string intProblem(const Json& v, const AttrSpec& a) {
  if (!isInt(v)) return "an integer";
  if (!intInBounds(v)) return "an integer of magnitude at most " + std::to_string(limits::kMaxAttrInteger);
  if (a.min && v.get<double>() < static_cast<double>(*a.min))
    return "an integer >= " + std::to_string(*a.min);
  return "";
}

// Empty when `v` fits `a`; otherwise what it must be.
std::string typeProblem(const Json& v, const AttrSpec& a) {
  switch (a.type) {
    case AttrType::Int:
    case AttrType::Dim:
      return intProblem(v, a);
    case AttrType::Number:
      return v.is_number() && std::isfinite(v.get<double>()) ? "" : "a finite number";
    case AttrType::Bool:
      return v.is_boolean() ? "" : "true or false";
    case AttrType::String:
      return v.is_string() ? "" : "a string";
    case AttrType::Choice:
      if (v.is_string() &&
          std::find(a.choices.begin(), a.choices.end(), v.get<std::string>()) != a.choices.end())
        return "";
      return "one of " + attrTypeText(a).substr(std::string("one of ").size());
    case AttrType::DType:
      return v.is_string() && parseDType(v.get<std::string>())
                 ? ""
                 : "a dtype (f32, bf16, f16, f64, i64, i32, bool)";
    case AttrType::IntList:
    case AttrType::Shape:
    case AttrType::RankList: {
      const char* what = a.type == AttrType::Shape      ? "a list of non-negative extents"
                         : a.type == AttrType::RankList ? "a non-empty list of distinct ranks (integers >= 0)"
                                                        : "a list of integers";
      if (!v.is_array()) return what;
      std::set<double> seen;
      for (const Json& e : v) {
        if (!isInt(e)) return what;
        if (!intInBounds(e))
          return std::string(what) + " of magnitude at most " + std::to_string(limits::kMaxAttrInteger);
        double d = e.get<double>();
        if (a.type != AttrType::IntList && d < 0) return what;
        if (a.type == AttrType::RankList && !seen.insert(d).second) return what;
      }
      if (a.type == AttrType::RankList && v.empty()) return what;
      return "";
    }
  }
  return "";
}

}  // namespace

const char* attrTypeName(AttrType t) {
  switch (t) {
    case AttrType::Int:
      return "integer";
    case AttrType::Number:
      return "number";
    case AttrType::Bool:
      return "bool";
    case AttrType::String:
      return "string";
    case AttrType::Choice:
      return "choice";
    case AttrType::IntList:
      return "list of integers";
    case AttrType::Shape:
      return "shape";
    case AttrType::DType:
      return "dtype";
    case AttrType::Dim:
      return "axis";
    case AttrType::RankList:
      return "list of ranks";
  }
  return "?";
}

std::string attrTypeText(const AttrSpec& a) {
  if (a.type == AttrType::Choice) {
    std::string s = "one of ";
    for (size_t i = 0; i < a.choices.size(); ++i)
      s += (i ? ", " : "") + ("\"" + a.choices[i] + "\"");
    return s;
  }
  std::string s = attrTypeName(a.type);
  if (a.min) s += " >= " + std::to_string(*a.min);
  return s;
}

std::string closestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t bestD = std::string::npos;
  for (const std::string& c : candidates) {
    size_t d = editDistance(word, c);
    // A plural, a case slip or one or two typos; not an unrelated short name.
    size_t allowed = std::max<size_t>(1, std::min<size_t>(2, std::max(word.size(), c.size()) / 3));
    // Or a long shared stem ("reduction" for "reduce").
    size_t common = 0;
    while (common < word.size() && common < c.size() &&
           std::tolower(static_cast<unsigned char>(word[common])) ==
               std::tolower(static_cast<unsigned char>(c[common])))
      ++common;
    bool prefix = common >= 4 && 2 * common >= std::min(word.size(), c.size()) + 2;
    if ((d <= allowed || prefix) && d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

std::vector<AttrProblem> checkAttrs(const OpDef& def, const Json& attrs) {
  std::vector<AttrProblem> out;
  std::vector<std::string> names;
  for (const AttrSpec& a : def.attrs)
    names.push_back(a.name);
  if (attrs.is_object())
    for (const auto& [key, value] : attrs.items()) {
      const AttrSpec* spec = def.findAttr(key);
      if (!spec) {
        std::string msg = "unknown attribute '" + key + "' for " + def.name;
        if (std::string near = closestName(key, names); !near.empty())
          msg += " (did you mean '" + near + "'?)";
        msg += names.empty() ? "; " + def.name + " takes no attributes"
                             : "; " + def.name + " takes " + quoted(names);
        out.push_back({key, msg});
        continue;
      }
      if (value.is_null()) {
        out.push_back({key, "attribute '" + key + "' of " + def.name + " must be " + attrTypeText(*spec) +
                                ", got null (omit an optional attribute instead)"});
        continue;
      }
      if (std::string must = typeProblem(value, *spec); !must.empty()) {
        std::string got = value.dump();
        if (got.size() > 60) got = got.substr(0, 57) + "...";
        out.push_back({key, "attribute '" + key + "' of " + def.name + " must be " + must + ", got " + got});
      }
    }
  for (const AttrSpec& a : def.attrs)
    if (a.required && !(attrs.is_object() && attrs.contains(a.name)))
      out.push_back({"", "missing attribute '" + a.name + "' of " + def.name + " (" + attrTypeText(a) + ": " +
                             a.doc + ")"});
  return out;
}

}  // namespace paraproof::ops
