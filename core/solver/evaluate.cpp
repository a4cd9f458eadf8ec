#include <algorithm>
#include <cmath>

#include "core/solver/engine.h"

namespace paraproof::solver {

const char* statusName(Status s) {
  switch (s) {
    case Status::Verified:
      return "verified";
    case Status::Failed:
      return "failed";
    case Status::Inconclusive:
      return "inconclusive";
  }
  return "?";
}

double applyFunction(sym::Fn f, const std::vector<double>& a) {
  switch (f) {
    case sym::Fn::Exp:
      return std::exp(a[0]);
    case sym::Fn::Log:
      return std::log(a[0]);
    case sym::Fn::Sqrt:
      return std::sqrt(a[0]);
    case sym::Fn::Sigmoid:
      return 1.0 / (1.0 + std::exp(-a[0]));
    case sym::Fn::Tanh:
      return std::tanh(a[0]);
    case sym::Fn::Erf:
      return std::erf(a[0]);
    case sym::Fn::Pow:
      return std::pow(a[0], a[1]);
    case sym::Fn::Sin:
      return std::sin(a[0]);
    case sym::Fn::Cos:
      return std::cos(a[0]);
  }
  return NAN;
}

// Nodes are created after their arguments, so one forward sweep evaluates the whole pool.
std::vector<double> evaluateReal(const sym::ExprPool& pool, const std::vector<double>& vars) {
  std::vector<double> v(pool.size());
  std::vector<double> args;
  for (sym::ExprId e = 0; e < pool.size(); ++e) {
    const sym::Node& n = pool.node(e);
    switch (n.kind) {
      case sym::Kind::Const:
        v[e] = n.sort == sym::Sort::Real ? n.value : static_cast<double>(n.ivalue);
        break;
      case sym::Kind::Var:
        v[e] = n.var < vars.size() ? vars[n.var] : 0.0;
        break;
      case sym::Kind::Add: {
        double s = 0;
        for (auto a : n.args)
          s += v[a];
        v[e] = s;
        break;
      }
      case sym::Kind::Mul: {
        double p = 1;
        for (auto a : n.args)
          p *= v[a];
        v[e] = p;
        break;
      }
      case sym::Kind::Div:
        v[e] = v[n.args[0]] / v[n.args[1]];
        break;
      case sym::Kind::Apply:
        args.clear();
        for (auto a : n.args)
          args.push_back(v[a]);
        v[e] = applyFunction(n.fn, args);
        break;
      case sym::Kind::Lt:
        v[e] = v[n.args[0]] < v[n.args[1]];
        break;
      case sym::Kind::Le:
        v[e] = v[n.args[0]] <= v[n.args[1]];
        break;
      case sym::Kind::Eq:
        v[e] = v[n.args[0]] == v[n.args[1]];
        break;
      case sym::Kind::And:
        v[e] = (v[n.args[0]] != 0) && (v[n.args[1]] != 0);
        break;
      case sym::Kind::Or:
        v[e] = (v[n.args[0]] != 0) || (v[n.args[1]] != 0);
        break;
      case sym::Kind::Not:
        v[e] = v[n.args[0]] == 0;
        break;
      case sym::Kind::Ite:
        v[e] = v[n.args[0]] != 0 ? v[n.args[1]] : v[n.args[2]];
        break;
      case sym::Kind::ToReal:
        v[e] = v[n.args[0]];
        break;
      case sym::Kind::Max:
      case sym::Kind::Min: {
        double m = v[n.args[0]];
        for (auto a : n.args)
          m = std::isnan(v[a]) || std::isnan(m) ? NAN
              : n.kind == sym::Kind::Max        ? std::max(m, v[a])
                                                : std::min(m, v[a]);
        v[e] = m;  // NaN propagates from any argument (std::max would drop it in one operand order)
        break;
      }
    }
  }
  return v;
}

bool nearlyEqual(double a, double b) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= 1e-6 * scale;
}

}  // namespace paraproof::solver
