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

// The obligations whose logical side may be undefined (it divides by something other than a nonzero
// constant), as `open`, and the nodes their logical sides reach: what a check of their definedness guards
// needs (every obligation, including those whose two sides are the same term).
ProblemScope guardScopeOf(const Problem& problem);

// "exp, log" - for messages.
std::string functionNames(const std::vector<sym::Fn>& fns);

}  // namespace paraproof::solver
