#include "core/solver/concrete_check.h"

#include <cmath>

#include "core/solver/engine.h"

namespace paraproof::solver {

std::vector<Mismatch> concreteMismatches(const Problem& problem, const std::vector<double>& vars) {
  std::vector<double> v = evaluateReal(problem.pool, vars);
  std::vector<Mismatch> out;
  for (size_t i = 0; i < problem.obligations.size(); ++i) {
    const Obligation& ob = problem.obligations[i];
    double e = v[ob.expected], a = v[ob.actual];
    if (!std::isfinite(e) || nearlyEqual(e, a)) continue;
    out.push_back({i, e, a});
  }
  return out;
}

}  // namespace paraproof::solver
