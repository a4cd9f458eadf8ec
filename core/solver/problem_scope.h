// What both engines need to know about a Problem before deciding it: which nodes matter and which
// obligations are not already identical terms. (No per-problem "logical side" marks: a division guard belongs
// to one obligation, never to the whole problem.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/solver/problem.h"

namespace paraproof::solver {

struct ProblemScope {
  std::vector<sym::ExprId> order;  // nodes reachable from an open obligation, ascending = topological
  std::vector<size_t> open;        // obligations whose two sides are different terms
  std::vector<sym::Fn> functions;  // uninterpreted functions the open obligations use
};

// Iterative (pools can hold a million nodes, recursion would overflow the stack).
ProblemScope scopeOf(const Problem& problem);

// "exp, log" - for messages.
std::string functionNames(const std::vector<sym::Fn>& fns);

}  // namespace paraproof::solver
