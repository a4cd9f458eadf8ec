#include "app/cli/args.h"

#include <cctype>

namespace paraproof::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& withValue,
           const std::set<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    // "-o" is the short form of option "o"; anything else not starting with "--" is positional.
    const bool shortOption = a.size() == 2 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1]));
    if (!shortOption && (a.rfind("--", 0) != 0 || a == "--")) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(shortOption ? 1 : 2), value;
    bool inlineValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    if (withValue.count(name)) {
      if (!inlineValue) {
        if (i + 1 >= argv.size()) throw UsageError("option " + a + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    } else if (flags.count(name) && !inlineValue) {
      flags_.insert(name);
    } else {
      throw UsageError("unknown option " + a);
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::getOr(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

int Args::getInt(const std::string& name, int fallback, int min, int max) const {
  auto v = get(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    int x = std::stoi(*v, &used);
    if (used != v->size() || x < min || x > max) throw std::invalid_argument("range");
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " must be an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + *v + "'");
  }
}

double Args::getDouble(const std::string& name, double fallback, double min) const {
  auto v = get(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    double x = std::stod(*v, &used);
    if (used != v->size() || !(x >= min)) throw std::invalid_argument("range");
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " must be a number >= " + std::to_string(min) + ", got '" + *v + "'");
  }
}

}  // namespace paraproof::cli
