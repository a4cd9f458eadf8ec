// Shared by the op tests: inputs as pool variables with concrete values, lowering through the registry
// (checking the shape rule agrees with the lowering), concrete evaluation, and finite differences.
#pragma once

#include <QtTest>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/ops/registry.h"
#include "core/solver/engine.h"

namespace opstest {

using namespace paraproof;
using ops::SymTensor;

struct Harness {
  sym::ExprPool pool;
  std::vector<double> values;  // concrete value of every pool variable
  std::mt19937 rng{1234};

  // A tensor of fresh variables; random values in [-1, 1] unless given.
  SymTensor input(const std::string& name, Shape shape, DType dtype = DType::F32,
                  std::vector<double> vals = {}) {
    SymTensor t{{shape, dtype}, {}};
    int64_t n = numElements(shape);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      sym::Sort sort = isInteger(dtype) ? sym::Sort::Int : sym::Sort::Real;
      t.elems.push_back(pool.var({name + "[" + std::to_string(i) + "]", sort, -1000, 1000}));
      values.push_back(vals.empty() ? dist(rng) : vals.at(static_cast<size_t>(i)));
    }
    return t;
  }

  // Lowers `op` and checks the lowering produces the inferred types.
  std::vector<SymTensor> run(const std::string& op, const std::vector<SymTensor>& in,
                             Json attrs = Json::object()) {
    const ops::OpDef* def = ops::findOp(op);
    if (!def) qFatal("op %s is not registered", op.c_str());
    std::vector<TensorType> types;
    for (const SymTensor& t : in)
      types.push_back(t.type);
    std::vector<TensorType> expect = ops::inferTypes(*def, types, attrs);
    std::vector<SymTensor> out = def->lower(pool, in, attrs);
    if (out.size() != expect.size())
      qFatal("%s: lowering gives %zu outputs, shape rule %zu", op.c_str(), out.size(), expect.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!(out[i].type == expect[i]) ||
          out[i].elems.size() != static_cast<size_t>(numElements(expect[i].shape)))
        qFatal("%s: output %zu is %s, shape rule says %s", op.c_str(), i, shapeString(out[i].shape()).c_str(),
               shapeString(expect[i].shape).c_str());
    }
    return out;
  }
  SymTensor run1(const std::string& op, const std::vector<SymTensor>& in, Json attrs = Json::object()) {
    return run(op, in, std::move(attrs)).at(0);
  }

  std::vector<double> eval(const SymTensor& t) {
    std::vector<double> all = solver::evaluateReal(pool, values);
    std::vector<double> out;
    for (sym::ExprId e : t.elems)
      out.push_back(all[e]);
    return out;
  }
  double evalScalar(sym::ExprId e) { return solver::evaluateReal(pool, values)[e]; }
  std::vector<double> valuesOf(const SymTensor& t) {
    std::vector<double> out;
    for (sym::ExprId e : t.elems)
      out.push_back(values[pool.node(e).var]);
    return out;
  }

  // sum(w * y) as one expression, w concrete.
  sym::ExprId weightedSum(const SymTensor& y, const std::vector<double>& w) {
    std::vector<sym::ExprId> terms;
    for (size_t i = 0; i < y.elems.size(); ++i)
      terms.push_back(pool.mul(pool.real(w[i]), y.elems[i]));
    return pool.add(terms);
  }

  // Central differences of the scalar `loss` with respect to every element of the variable tensor `wrt`.
  std::vector<double> numericGrad(sym::ExprId loss, const SymTensor& wrt, double h = 1e-5) {
    std::vector<double> g;
    for (sym::ExprId e : wrt.elems) {
      uint32_t v = pool.node(e).var;
      double x0 = values[v];
      values[v] = x0 + h;
      double up = evalScalar(loss);
      values[v] = x0 - h;
      double down = evalScalar(loss);
      values[v] = x0;
      g.push_back((up - down) / (2 * h));
    }
    return g;
  }

  std::vector<double> randomVector(size_t n) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> v(n);
    for (double& x : v)
      x = dist(rng);
    return v;
  }
};

inline bool close(double a, double b, double tol) {
  return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b));
}

// Compares element by element; on failure names the first differing index.
inline bool allClose(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-9,
                     const char* what = "") {
  if (got.size() != want.size()) {
    qWarning("%s: %zu values, expected %zu", what, got.size(), want.size());
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], tol)) {
      qWarning("%s: element %zu is %.12g, expected %.12g", what, i, got[i], want[i]);
      return false;
    }
  }
  return true;
}

// The shape rule's error message for these input types and attrs, or "" when it accepts them.
inline std::string shapeError(const std::string& op, const std::vector<TensorType>& in,
                              Json attrs = Json::object()) {
  const ops::OpDef* def = ops::findOp(op);
  if (!def) return "not registered";
  try {
    ops::inferTypes(*def, in, attrs);
  } catch (const ops::ShapeError& e) {
    return e.what();
  }
  return "";
}

inline TensorType f32(Shape s) {
  return {std::move(s), DType::F32};
}
inline TensorType i64(Shape s) {
  return {std::move(s), DType::I64};
}

}  // namespace opstest
