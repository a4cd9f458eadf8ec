// A small command-line parser: positional arguments and --flag / --option VALUE (or --option=VALUE).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace paraproof::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `withValue` lists options that take a value; `flags` those that do not.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& withValue,
       const std::set<std::string>& flags);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const { return values_.count(name) || flags_.count(name); }
  std::optional<std::string> get(const std::string& name) const;
  std::string getOr(const std::string& name, const std::string& fallback) const;
  int getInt(const std::string& name, int fallback, int min, int max) const;
  double getDouble(const std::string& name, double fallback, double min) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
};

}  // namespace paraproof::cli
