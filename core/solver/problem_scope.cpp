#include "core/solver/problem_scope.h"

#include <algorithm>

namespace paraproof::solver {

namespace {
// Marks with `bit` every node reachable from `roots`.
void mark(const sym::ExprPool& pool, const std::vector<sym::ExprId>& roots, uint8_t bit,
          std::vector<uint8_t>& marks) {
  std::vector<sym::ExprId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    sym::ExprId e = stack.back();
    stack.pop_back();
    if (marks[e] & bit) continue;
    marks[e] |= bit;
    for (sym::ExprId a : pool.node(e).args)
      if (!(marks[a] & bit)) stack.push_back(a);
  }
}
}  // namespace

ProblemScope scopeOf(const Problem& problem) {
  const sym::ExprPool& pool = problem.pool;
  ProblemScope scope;
  std::vector<sym::ExprId> roots;
  for (size_t i = 0; i < problem.obligations.size(); ++i) {
    const Obligation& ob = problem.obligations[i];
    if (ob.expected == ob.actual) continue;
    scope.open.push_back(i);
    roots.push_back(ob.expected);
    roots.push_back(ob.actual);
  }
  constexpr uint8_t kAny = 1;
  std::vector<uint8_t> marks(pool.size(), 0);
  mark(pool, roots, kAny, marks);
  bool used[16] = {};
  for (sym::ExprId e = 0; e < pool.size(); ++e) {
    if (!(marks[e] & kAny)) continue;
    scope.order.push_back(e);
    const sym::Node& n = pool.node(e);
    if (n.kind == sym::Kind::Apply) used[static_cast<int>(n.fn)] = true;
  }
  for (int f = 0; f < 16; ++f)
    if (used[f]) scope.functions.push_back(static_cast<sym::Fn>(f));
  return scope;
}

ProblemScope guardScopeOf(const Problem& problem) {
  const sym::ExprPool& pool = problem.pool;
  // partial[e]: a division by a non-constant (or by zero) lies below e. Ids ascend topologically.
  std::vector<uint8_t> marks(pool.size(), 0), partial(pool.size(), 0);
  std::vector<sym::ExprId> roots;
  for (const Obligation& ob : problem.obligations)
    roots.push_back(ob.expected);
  constexpr uint8_t kAny = 1;
  mark(pool, roots, kAny, marks);
  for (sym::ExprId e = 0; e < pool.size(); ++e) {
    if (!marks[e]) continue;
    const sym::Node& n = pool.node(e);
    partial[e] = n.kind == sym::Kind::Div && !(pool.isConst(n.args[1]) && !pool.isConst(n.args[1], 0.0));
    for (sym::ExprId a : n.args)
      partial[e] |= partial[a];
  }
  ProblemScope scope;
  roots.clear();
  for (size_t i = 0; i < problem.obligations.size(); ++i)
    if (partial[problem.obligations[i].expected]) {
      scope.open.push_back(i);
      roots.push_back(problem.obligations[i].expected);
    }
  std::vector<uint8_t> reach(pool.size(), 0);
  mark(pool, roots, kAny, reach);
  bool used[16] = {};
  for (sym::ExprId e = 0; e < pool.size(); ++e) {
    if (!reach[e]) continue;
    scope.order.push_back(e);
    if (pool.node(e).kind == sym::Kind::Apply) used[static_cast<int>(pool.node(e).fn)] = true;
  }
  for (int f = 0; f < 16; ++f)
    if (used[f]) scope.functions.push_back(static_cast<sym::Fn>(f));
  return scope;
}

std::string functionNames(const std::vector<sym::Fn>& fns) {
  std::string s;
  for (sym::Fn f : fns)
    s += (s.empty() ? "" : ", ") + std::string(sym::fnName(f));
  return s;
}

}  // namespace paraproof::solver
