#include "core/plan/diagnostics.h"

namespace paraproof {

namespace {
std::string joinAll(const std::vector<Diagnostic>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "\n" : "") + d[i].str();
  return s;
}
}  // namespace

PlanError::PlanError(std::vector<Diagnostic> diags)
    : std::runtime_error(joinAll(diags)), diags_(std::move(diags)) {}

}  // namespace paraproof
