// Engine timings on synthetic stage problems: matmul chains (reassociation, needs polynomial reasoning)
// and row-sharded softmax (max over shards, uninterpreted exp). Prints the median of 5 runs per engine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/solver/engine.h"
#include "core/solver/z3_engine.h"

using namespace paraproof;

namespace {

using Matrix = std::vector<std::vector<sym::ExprId>>;

void expect(solver::Problem& p, sym::ExprId expected, sym::ExprId actual) {
  solver::Obligation ob;
  ob.expected = expected;
  ob.actual = actual;
  p.obligations.push_back(ob);
}

Matrix inputs(sym::ExprPool& e, const std::string& name, int rows, int cols) {
  Matrix m(rows, std::vector<sym::ExprId>(cols));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      m[i][j] = e.var({name + "[" + std::to_string(i) + "," + std::to_string(j) + "]", sym::Sort::Real});
  return m;
}

Matrix matmul(sym::ExprPool& e, const Matrix& a, const Matrix& b) {
  Matrix c(a.size(), std::vector<sym::ExprId>(b[0].size()));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < b[0].size(); ++j) {
      std::vector<sym::ExprId> terms;
      for (size_t k = 0; k < b.size(); ++k)
        terms.push_back(e.mul(a[i][k], b[k][j]));
      c[i][j] = e.add(terms);
    }
  return c;
}

// ((M1 M2) M3 ...) against (M1 (M2 (M3 ...))): every element is an identity only after distribution.
// `bug`: the parallel side reads one wrong element of M1.
solver::Problem matmulChain(int n, int length, bool bug) {
  solver::Problem p;
  std::vector<Matrix> ms;
  for (int k = 0; k < length; ++k)
    ms.push_back(inputs(p.pool, "m" + std::to_string(k), n, n));
  Matrix left = ms[0];
  for (int k = 1; k < length; ++k)
    left = matmul(p.pool, left, ms[k]);
  Matrix first = ms[0];
  if (bug) std::swap(first[0][0], first[0][1]);
  Matrix right = ms[length - 1];
  for (int k = length - 2; k >= 1; --k)
    right = matmul(p.pool, ms[k], right);
  right = matmul(p.pool, first, right);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      expect(p, left[i][j], right[i][j]);
  return p;
}

sym::ExprId maxOf(sym::ExprPool& e, const std::vector<sym::ExprId>& xs, size_t from, size_t to) {
  sym::ExprId m = xs[from];
  for (size_t i = from + 1; i < to; ++i)
    m = e.max(m, xs[i]);
  return m;
}

// Softmax over `rows` rows of width n; the plan splits each row in two halves (sequence/vocab parallel):
// local maxima, a global max of the maxima, local sums of exp, an all-reduced sum.
solver::Problem softmaxRows(int rows, int n, bool bug) {
  solver::Problem p;
  sym::ExprPool& e = p.pool;
  Matrix x = inputs(e, "x", rows, n);
  for (int r = 0; r < rows; ++r) {
    const auto& row = x[r];
    auto m = maxOf(e, row, 0, n);
    std::vector<sym::ExprId> ex;
    for (int i = 0; i < n; ++i)
      ex.push_back(e.apply(sym::Fn::Exp, {e.sub(row[i], m)}));
    auto total = e.add(ex);
    size_t half = n / 2;
    auto globalMax = e.max(maxOf(e, row, 0, half), maxOf(e, row, half, n));
    std::vector<sym::ExprId> px, s0, s1;
    for (int i = 0; i < n; ++i) {
      px.push_back(e.apply(sym::Fn::Exp, {e.sub(row[i], globalMax)}));
      (static_cast<size_t>(i) < half ? s0 : s1).push_back(px.back());
    }
    if (bug) s1.pop_back();  // a shard drops its last element from the partial sum
    auto allReduced = e.add(e.add(s0), e.add(s1));
    for (int i = 0; i < n; ++i)
      expect(p, e.div(ex[i], total), e.div(px[i], allReduced));
  }
  return p;
}

struct EngineMaker {
  std::string name;
  std::function<std::unique_ptr<solver::Engine>()> make;
};

double medianMillis(const EngineMaker& em, const solver::Problem& p, std::string& verdict) {
  std::vector<double> ms;
  for (int run = 0; run < 5; ++run) {
    auto engine = em.make();
    auto t0 = std::chrono::steady_clock::now();
    auto r = engine->check(p, {10, nullptr});  // a 10 s cap per run keeps the table finite
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    verdict = solver::statusName(r.status);
    if (r.status == solver::Status::Inconclusive) verdict += " (" + r.reason.substr(0, 40) + ")";
  }
  std::sort(ms.begin(), ms.end());
  return ms[2];
}

}  // namespace

int main(int argc, char** argv) {
  // --quick: small sizes only; any other argument: only problems whose name contains it.
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::string only = argc > 1 && !quick ? argv[1] : "";
  using S = solver::Z3Options::Strategy;
  auto z3 = [](S s, size_t chunk) {
    return [s, chunk] {
      solver::Z3Options o;
      o.strategy = s;
      o.chunk = chunk;
      return solver::makeZ3Engine(o);
    };
  };
  std::vector<EngineMaker> engines = {
      {"z3 presimplify (default)", z3(S::Presimplify, 512)},
      {"z3 plain solver", z3(S::Solver, 512)},
      {"z3 simplify(som)+smt", z3(S::SimplifyThenSmt, 512)},
      {"z3 plain, chunk 1", z3(S::Solver, 1)},
      {"z3 presimplify, chunk 1", z3(S::Presimplify, 1)},
      {"random field (2 trials)", [] { return solver::makeFieldEngine(2); }},
  };
  struct Case {
    std::string name;
    std::function<solver::Problem()> make;
  };
  std::vector<Case> cases;
  for (int n : quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 6, 8}) {
    for (bool bug : {false, true})
      cases.push_back({"matmul chain 3x " + std::to_string(n) + "x" + std::to_string(n) + (bug ? " bug" : ""),
                       [n, bug] { return matmulChain(n, 3, bug); }});
  }
  for (int n : quick ? std::vector<int>{4} : std::vector<int>{4, 8, 16})
    for (bool bug : {false, true})
      cases.push_back({"softmax 4 rows x " + std::to_string(n) + (bug ? " bug" : ""),
                       [n, bug] { return softmaxRows(4, n, bug); }});
  std::printf(
      "| problem | nodes | obligations | engine | verdict | median ms |\n|---|---|---|---|---|---|\n");
  for (const auto& c : cases) {
    if (c.name.find(only) == std::string::npos) continue;
    solver::Problem p = c.make();
    for (const auto& em : engines) {
      std::string verdict;
      double ms = medianMillis(em, p, verdict);
      std::printf("| %s | %zu | %zu | %s | %s | %.2f |\n", c.name.c_str(), p.pool.size(),
                  p.obligations.size(), em.name.c_str(), verdict.c_str(), ms);
      std::fflush(stdout);
    }
  }
}
