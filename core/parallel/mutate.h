// Random semantic mutations of a (correct) parallel plan, for mutation testing of the verifier.
// A typed list of mutation operators, each a small function over a Plan that picks one random site
// (an op, an attribute, a collective instance, a lineage box, ...) and changes it. Device graphs only: the
// logical graph is the specification. Seeded and reproducible: mutant i of (plan, seed) is always the same,
// whatever the order or the number of threads that build the mutants.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::parallel {

// splitmix64: a portable generator (the <random> distributions differ between standard libraries).
class MutationRng {
 public:
  explicit MutationRng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  size_t below(size_t n);  // uniform in [0, n), n > 0
  bool coin() { return next() & 1; }
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[below(xs.size())];
  }

 private:
  uint64_t s_;
};

struct MutationOperator {
  std::string name;     // e.g. "drop-collective"
  std::string summary;  // one line for --help
  // Mutates one random site of `plan` and describes it ("rank 2 op 'x' (scale): factor 0.5 -> 1");
  // nullopt when the plan has no site for this operator (the plan is then unchanged).
  std::function<std::optional<std::string>(Plan& plan, MutationRng& rng)> apply;
};

const std::vector<MutationOperator>& mutationOperators();

struct Mutant {
  int index = 0;
  std::string mutationOperator;  // the operator's name
  std::string description;       // what was changed, and how
  Plan plan;
};

// Mutant `index` of `correct`: an operator chosen uniformly among those with a site in this plan, then a
// site chosen by the operator. `only` restricts the operators (names); empty: all. Throws
// std::invalid_argument when no operator applies.
Mutant makeMutant(const Plan& correct, uint64_t seed, int index, const std::vector<std::string>& only = {});

}  // namespace paraproof::parallel
