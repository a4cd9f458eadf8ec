// Errors about bad input: each names the place (file, JSON pointer, or device/op/tensor) and what is wrong.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace paraproof {

struct Diagnostic {
  std::string where;    // e.g. "plan.json:/devices/1/ops/3/attrs/group" or "device 3, op ar.7"
  std::string message;  // e.g. "rank 5 is not a device of the plan"
  std::string str() const { return where.empty() ? message : where + ": " + message; }
};

// Thrown when a plan cannot be loaded or is invalid; carries every diagnostic found.
class PlanError : public std::runtime_error {
 public:
  explicit PlanError(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace paraproof
