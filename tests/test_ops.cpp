// The op registry: every documented op is registered with a shape rule and semantics; shape rules accept
// good input and reject bad input with a message saying what is wrong; elementwise, shape, linear-algebra
// and reduction semantics agree with direct computation on concrete values; axis structure and attribute
// rescaling for shape reduction.
#include <QtTest>

#include <fstream>
#include <regex>
#include <set>

#include "test_ops_harness.h"

using namespace paraproof;
using namespace opstest;

namespace {
// Op names documented in docs/operators.md: the first cell of every table row, and the binary list.
std::set<std::string> documentedOps() {
  std::ifstream in(std::string(PARAPROOF_FIXTURES) + "/../../docs/operators.md");
  std::set<std::string> names;
  std::string line;
  std::regex name("`([a-z_0-9]+)`");
  while (std::getline(in, line)) {
    std::string cell;
    if (line.rfind("| `", 0) == 0)
      cell = line.substr(1, line.find('|', 1) - 1);
    else if (line.rfind("`add`", 0) == 0)
      cell = line;
    for (std::sregex_iterator it(cell.begin(), cell.end(), name), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}
}  // namespace

class TestOps : public QObject {
  Q_OBJECT
 private slots:
  void everyDocumentedOpIsRegistered() {
    std::set<std::string> names = documentedOps();
    QVERIFY2(names.size() >= 70, "docs/operators.md not found or not parsed");
    for (const char* n : {"matmul", "attention_backward", "all_to_all", "recv", "gelu", "minimum"})
      QVERIFY2(names.count(n), n);
    for (const std::string& n : names)
      QVERIFY2(ops::findOp(n) != nullptr, ("not registered: " + n).c_str());
  }

  void everyOpHasAShapeRuleAndSemantics() {
    for (const ops::OpDef* d : ops::allOps()) {
      QVERIFY2(d->infer != nullptr, d->name.c_str());
      QVERIFY2(!d->summary.empty(), d->name.c_str());
      QVERIFY2(d->axes != nullptr, d->name.c_str());
      bool p2p = d->name == "send" || d->name == "recv";
      QVERIFY2(p2p || d->lower || d->lowerGroup, d->name.c_str());
      QVERIFY2(d->communication == (p2p || d->lowerGroup != nullptr), d->name.c_str());
    }
  }

  void shapeRulesAcceptGoodInput() {
    const ops::OpDef* mm = ops::findOp("matmul");
    auto out = ops::inferTypes(*mm, {f32({2, 4, 8}), f32({8, 3})}, Json::object());
    QCOMPARE(out.at(0), f32({2, 4, 3}));
    out = ops::inferTypes(*ops::findOp("reshape"), {f32({4, 6})}, {{"shape", {2, -1, 3}}});
    QCOMPARE(out.at(0), f32({2, 4, 3}));
    out = ops::inferTypes(*ops::findOp("sum"), {f32({2, 3, 4})}, {{"dims", {-1}}, {"keepdim", true}});
    QCOMPARE(out.at(0), f32({2, 3, 1}));
    out = ops::inferTypes(*ops::findOp("split"), {f32({6, 2})}, {{"dim", 0}, {"sizes", {2, 4}}});
    QCOMPARE(out.size(), size_t(2));
    QCOMPARE(out[1], f32({4, 2}));
    out = ops::inferTypes(*ops::findOp("einsum"), {f32({2, 3, 4}), f32({2, 4, 5})},
                          {{"equation", "bij,bjk->bik"}});
    QCOMPARE(out.at(0), f32({2, 3, 5}));
    out = ops::inferTypes(*ops::findOp("topk"), {f32({3, 8})}, {{"k", 2}});
    QCOMPARE(out.at(1), i64({3, 2}));
    out = ops::inferTypes(*ops::findOp("cast"), {i64({4})}, {{"dtype", "f32"}});
    QCOMPARE(out.at(0), f32({4}));
    out = ops::inferTypes(*ops::findOp("attention"),
                          {f32({1, 4, 4, 2}), f32({1, 6, 2, 2}), f32({1, 6, 2, 3}), i64({4}), i64({6})}, {});
    QCOMPARE(out.at(0), f32({1, 4, 4, 3}));
    Json ag{{"group", {0, 1, 2}}, {"instance", "ag"}, {"dim", 1}};
    QCOMPARE(ops::inferTypes(*ops::findOp("all_gather"), {f32({2, 2})}, ag).at(0), f32({2, 6}));
  }

  void shapeRulesRejectBadInputWithAMessage() {
    struct Case {
      std::string op;
      std::vector<TensorType> in;
      Json attrs;
      std::string message;
    };
    const std::vector<Case> cases = {
        {"matmul", {f32({4, 8}), f32({6, 3})}, {}, "matmul: inner dims differ: a is [4,8], b is [6,3]"},
        {"matmul", {f32({2, 4, 8}), f32({3, 8, 3})}, {}, "do not broadcast"},
        {"add", {f32({4, 3}), f32({4})}, {}, "shapes [4,3] and [4] do not broadcast"},
        {"add", {f32({4}), i64({4})}, {}, "both float or both integer"},
        {"exp", {i64({4})}, {}, "x must be a float tensor, got i64[4]"},
        {"div_scalar", {f32({4})}, {{"divisor", 0}}, "`divisor` must be nonzero"},
        {"pow", {f32({4})}, {}, "missing attribute `exponent`"},
        {"gelu", {f32({4})}, {{"approximate", "fast"}}, "`approximate` must be one of \"tanh\", \"none\""},
        {"cast", {f32({4})}, {{"dtype", "i64"}}, "float to integer"},
        {"reshape", {f32({4, 6})}, {{"shape", {5, -1}}}, "cannot reshape [4,6] (24 elements)"},
        {"transpose", {f32({4, 6})}, {{"perm", {0, 0}}}, "is not a permutation of 2 axes"},
        {"slice", {f32({4, 6})}, {{"dim", 1}, {"start", 2}, {"end", 8}}, "slice [2, 8) is not within [0, 6]"},
        {"slice",
         {f32({4, 6})},
         {{"dim", 2}, {"start", 0}, {"end", 1}},
         "`dim` 2 is out of range for rank 2"},
        {"concat", {f32({4, 6}), f32({3, 5})}, {{"dim", 1}}, "all inputs must agree except along dim 1"},
        {"split", {f32({4, 6})}, {{"dim", 1}, {"sizes", {2, 2}}}, "must sum to 6"},
        {"broadcast_to", {f32({3, 2})}, {{"shape", {4, 2}}}, "do not broadcast"},
        {"gather", {f32({4, 6}), f32({4, 2})}, {{"dim", 1}}, "idx must be an integer tensor"},
        {"sum", {f32({4, 6})}, {{"dims", {1, -1}}}, "repeats a dim"},
        {"mean", {i64({4})}, {}, "must be a float tensor"},
        {"softmax", {f32({4, 6})}, {{"dim", 3}}, "out of range"},
        {"einsum",
         {f32({2, 3}), f32({4, 5})},
         {{"equation", "ij,jk->ik"}},
         "index 'j' of \"ij,jk->ik\" has extent 3 and 4"},
        {"einsum", {f32({2, 3})}, {{"equation", "...ij->ij"}}, "no ellipsis"},
        {"linear", {f32({4, 8}), f32({3, 6})}, {}, "inner dims differ: x is [4,8], w is [3,6]"},
        {"rmsnorm", {f32({4, 8}), f32({6})}, {{"eps", 1e-5}}, "w must have shape [8], got f32[6]"},
        {"rmsnorm", {f32({4, 8}), f32({8})}, {}, "missing attribute `eps`"},
        {"rope", {f32({1, 4, 2, 3}), f32({4, 3}), f32({4, 3})}, {}, "must be even"},
        {"causal_mask", {f32({4, 4}), f32({4}), i64({4})}, {}, "qpos must be an integer tensor"},
        {"attention",
         {f32({1, 4, 3, 2}), f32({1, 6, 2, 2}), f32({1, 6, 2, 2}), i64({4}), i64({6})},
         {},
         "query heads 3 must be a multiple of kv heads 2"},
        {"embedding", {f32({4}), f32({10, 8})}, {}, "ids must be an integer tensor (i64/i32), got f32[4]"},
        {"one_hot", {i64({4})}, {}, "missing attribute `num_classes`"},
        {"cross_entropy",
         {f32({4, 10}), i64({4}), f32({4})},
         {{"reduction", "avg"}},
         "`reduction` must be one of"},
        {"cross_entropy", {f32({4, 10}), f32({4}), f32({4})}, {}, "labels must be an integer tensor"},
        {"cross_entropy_backward",
         {f32({4, 10}), i64({4}), f32({4}), f32({4})},
         {{"reduction", "mean"}},
         "dloss (reduction mean) must have shape []"},
        {"topk", {f32({3, 4})}, {{"k", 5}}, "`k` = 5 must be in [1, 4]"},
        {"adamw",
         {f32({4}), f32({4}), f32({4}), f32({4})},
         {{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"step", 0}},
         "`step` must be >= 1"},
        {"clip_coef", {f32({2})}, {{"max_norm", 1.0}}, "norm_sq must have rank 0"},
        {"all_reduce", {f32({4})}, {{"group", {0, 1}}}, "attribute `instance` must be a string"},
        {"all_reduce", {f32({4})}, {{"group", {0, 0}}, {"instance", "a"}}, "lists a rank twice"},
        {"reduce_scatter",
         {f32({5})},
         {{"group", {0, 1}}, {"instance", "a"}, {"dim", 0}},
         "not divisible by the group size 2"},
        {"all_to_all",
         {f32({3, 4})},
         {{"group", {0, 1}}, {"instance", "a"}, {"split_dim", 0}, {"concat_dim", 1}},
         "split dim 0 of f32[3,4] is not divisible"},
        {"broadcast",
         {f32({4})},
         {{"group", {0, 1}}, {"instance", "a"}, {"src", 3}},
         "src rank 3 is not in group [0,1]"},
        {"recv", {}, {{"peer", 1}, {"instance", "p"}}, "missing attribute `shape`"},
    };
    for (const Case& c : cases) {
      std::string got = shapeError(c.op, c.in, c.attrs.is_null() ? Json::object() : c.attrs);
      QVERIFY2(got.find(c.message) != std::string::npos,
               (c.op + ": expected an error containing \"" + c.message + "\", got \"" + got + "\"").c_str());
      QVERIFY2(got.rfind(c.op + ": ", 0) == 0, ("the message names the op: " + got).c_str());
    }
  }

  void unaryOpsMatchTheirFormulas() {
    Harness h;
    SymTensor x = h.input("x", {5}, DType::F32, {-1.5, -0.2, 0.0, 0.7, 2.0});
    SymTensor pos = h.input("p", {3}, DType::F32, {0.5, 1.0, 4.0});
    std::vector<double> xv = h.valuesOf(x), pv = h.valuesOf(pos);
    auto each = [](const std::vector<double>& v, auto f) {
      std::vector<double> r;
      for (double a : v)
        r.push_back(f(a));
      return r;
    };
    auto sig = [](double a) { return 1 / (1 + std::exp(-a)); };
    QVERIFY(allClose(h.eval(h.run1("neg", {x})), each(xv, [](double a) { return -a; }), 1e-12, "neg"));
    QVERIFY(allClose(h.eval(h.run1("relu", {x})), each(xv, [](double a) { return std::max(a, 0.0); }), 1e-12,
                     "relu"));
    QVERIFY(
        allClose(h.eval(h.run1("silu", {x})), each(xv, [&](double a) { return a * sig(a); }), 1e-12, "silu"));
    QVERIFY(allClose(h.eval(h.run1("gelu", {x}, {{"approximate", "none"}})),
                     each(xv, [](double a) { return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))); }), 1e-12,
                     "gelu erf"));
    QVERIFY(allClose(h.eval(h.run1("gelu", {x})),
                     each(xv,
                          [](double a) {
                            return 0.5 * a *
                                   (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
                          }),
                     1e-12, "gelu tanh"));
    QVERIFY(
        allClose(h.eval(h.run1("rsqrt", {pos})), each(pv, [](double a) { return 1 / std::sqrt(a); }), 1e-12));
    // Rotary embeddings' tables: uninterpreted in the proof, the real functions when evaluated.
    QVERIFY(
        allClose(h.eval(h.run1("sin", {x})), each(xv, [](double a) { return std::sin(a); }), 1e-12, "sin"));
    QVERIFY(
        allClose(h.eval(h.run1("cos", {x})), each(xv, [](double a) { return std::cos(a); }), 1e-12, "cos"));
    QVERIFY(
        allClose(h.eval(h.run1("erf", {x})), each(xv, [](double a) { return std::erf(a); }), 1e-12, "erf"));
    QVERIFY(allClose(h.eval(h.run1("pow", {x}, {{"exponent", 3}})),
                     each(xv, [](double a) { return a * a * a; }), 1e-12));
    QVERIFY(allClose(h.eval(h.run1("pow", {pos}, {{"exponent", -2}})),
                     each(pv, [](double a) { return 1 / (a * a); }), 1e-12));
    QVERIFY(allClose(h.eval(h.run1("pow", {pos}, {{"exponent", 0.5}})),
                     each(pv, [](double a) { return std::sqrt(a); }), 1e-12));
    QVERIFY(allClose(h.eval(h.run1("div_scalar", {x}, {{"divisor", 3}})),
                     each(xv, [](double a) { return a / 3; }), 1e-12));
    QVERIFY(allClose(h.eval(h.run1("add_scalar", {x}, {{"value", 1e-5}})),
                     each(xv, [](double a) { return a + 1e-5; }), 1e-12));
  }

  void integralPowExpandsToProductsAndOtherwiseStaysAFunction() {
    Harness h;
    SymTensor x = h.input("x", {1});
    sym::ExprId cube = h.run1("pow", {x}, {{"exponent", 3}}).elems[0];
    QCOMPARE(cube, h.pool.mul({x.elems[0], x.elems[0], x.elems[0]}));
    QCOMPARE(h.run1("square", {x}).elems[0], h.run1("pow", {x}, {{"exponent", 2}}).elems[0]);
    QCOMPARE(h.pool.node(h.run1("pow", {x}, {{"exponent", 0.5}}).elems[0]).kind, sym::Kind::Apply);
    // div_scalar is an exact division, not a multiplication by a rounded reciprocal.
    QCOMPARE(h.pool.node(h.run1("div_scalar", {x}, {{"divisor", 3}}).elems[0]).kind, sym::Kind::Div);
  }

  void binaryOpsBroadcast() {
    Harness h;
    SymTensor a = h.input("a", {2, 3}), b = h.input("b", {3});
    std::vector<double> av = h.valuesOf(a), bv = h.valuesOf(b), want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        want.push_back(av[i * 3 + j] - bv[j]);
    QVERIFY(allClose(h.eval(h.run1("sub", {a, b})), want, 1e-12, "sub"));
    want.clear();
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        want.push_back(std::max(av[i * 3 + j], bv[j]));
    QVERIFY(allClose(h.eval(h.run1("maximum", {a, b})), want, 1e-12, "maximum"));
    SymTensor col = h.input("c", {2, 1});
    QCOMPARE(h.run1("mul", {col, b}).shape(), Shape({2, 3}));
  }

  void castConvertsIntegersExactly() {
    Harness h;
    SymTensor ids = h.input("ids", {3}, DType::I64, {3, -1, 7});
    QVERIFY(allClose(h.eval(h.run1("cast", {ids}, {{"dtype", "f32"}})), {3, -1, 7}, 0, "cast"));
  }

  void creationOps() {
    Harness h;
    QVERIFY(allClose(h.eval(h.run1("iota", {}, {{"n", 4}, {"start", 6}})), {6, 7, 8, 9}, 0, "iota"));
    SymTensor pos = h.run1("iota", {}, {{"n", 2}});
    QCOMPARE(h.pool.sort(pos.elems[0]), sym::Sort::Int);
    QVERIFY(allClose(h.eval(h.run1("constant", {}, {{"shape", {2, 2}}, {"value", 0.5}})),
                     {0.5, 0.5, 0.5, 0.5}, 0));
  }

  void dataMovementRearrangesElements() {
    Harness h;
    SymTensor x = h.input("x", {2, 3}, DType::F32, {0, 1, 2, 3, 4, 5});
    QVERIFY(
        allClose(h.eval(h.run1("transpose", {x}, {{"perm", {1, 0}}})), {0, 3, 1, 4, 2, 5}, 0, "transpose"));
    QVERIFY(allClose(h.eval(h.run1("slice", {x}, {{"dim", -1}, {"start", 1}, {"end", 3}})), {1, 2, 4, 5}, 0,
                     "slice"));
    SymTensor y = h.input("y", {2, 1}, DType::F32, {9, 8});
    QVERIFY(allClose(h.eval(h.run1("concat", {x, y}, {{"dim", 1}})), {0, 1, 2, 9, 3, 4, 5, 8}, 0, "concat"));
    auto parts = h.run("split", {x}, {{"dim", 1}, {"sizes", {1, 2}}});
    QVERIFY(allClose(h.eval(parts[0]), {0, 3}, 0, "split 0"));
    QVERIFY(allClose(h.eval(parts[1]), {1, 2, 4, 5}, 0, "split 1"));
    QVERIFY(allClose(h.eval(h.run1("reshape", {x}, {{"shape", {3, 2}}})), {0, 1, 2, 3, 4, 5}, 0, "reshape"));
    QVERIFY(
        allClose(h.eval(h.run1("broadcast_to", {y}, {{"shape", {2, 2}}})), {9, 9, 8, 8}, 0, "broadcast_to"));
    QVERIFY(
        allClose(h.eval(h.run1("broadcast", {y}, {{"shape", {2, 2}}})), {9, 9, 8, 8}, 0, "shape broadcast"));
    SymTensor idx = h.input("i", {2, 2}, DType::I64, {2, 0, 1, 5});
    QVERIFY(allClose(h.eval(h.run1("gather", {x, idx}, {{"dim", 1}})), {2, 0, 4, 0}, 0,
                     "gather (5 out of range)"));
  }

  void matmulAndLinearAreSumsOfProducts() {
    Harness h;
    SymTensor a = h.input("a", {2, 2, 3}), b = h.input("b", {3, 4}), bias = h.input("bias", {4});
    std::vector<double> av = h.valuesOf(a), bv = h.valuesOf(b), cv = h.valuesOf(bias), want, wantLinear;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = 0;
          for (int k = 0; k < 3; ++k)
            s += av[n * 6 + i * 3 + k] * bv[k * 4 + j];
          want.push_back(s);
        }
    QVERIFY(allClose(h.eval(h.run1("matmul", {a, b})), want, 1e-12, "matmul"));
    QVERIFY(allClose(h.eval(h.run1("einsum", {a, b}, {{"equation", "nik,kj->nij"}})), want, 1e-12, "einsum"));
    // linear(x, w) == x @ w^T: w = b^T.
    SymTensor w = h.run1("transpose", {b}, {{"perm", {1, 0}}});
    for (size_t i = 0; i < want.size(); ++i)
      wantLinear.push_back(want[i] + cv[i % 4]);
    QVERIFY(allClose(h.eval(h.run1("linear", {a, w, bias})), wantLinear, 1e-12, "linear"));
    // The same sums of products, term for term: a plan may write either.
    QCOMPARE(h.run1("linear", {a, w}).elems, h.run1("matmul", {a, b}).elems);
  }

  void reductionsAndSoftmax() {
    Harness h;
    SymTensor x = h.input("x", {2, 3});
    std::vector<double> v = h.valuesOf(x);
    QVERIFY(allClose(h.eval(h.run1("sum", {x}, {{"dims", {1}}})), {v[0] + v[1] + v[2], v[3] + v[4] + v[5]},
                     1e-12));
    QVERIFY(allClose(h.eval(h.run1("mean", {x}, {{"dims", {0}}})),
                     {(v[0] + v[3]) / 2, (v[1] + v[4]) / 2, (v[2] + v[5]) / 2}, 1e-12));
    QVERIFY(allClose(h.eval(h.run1("max", {x})), {*std::max_element(v.begin(), v.end())}, 0));
    std::vector<double> sm = h.eval(h.run1("softmax", {x}, {{"dim", 1}}));
    std::vector<double> lsm = h.eval(h.run1("log_softmax", {x}, {{"dim", 1}}));
    for (int r = 0; r < 2; ++r) {
      double z = 0;
      for (int c = 0; c < 3; ++c)
        z += std::exp(v[r * 3 + c]);
      QVERIFY(close(sm[r * 3] + sm[r * 3 + 1] + sm[r * 3 + 2], 1.0, 1e-12));
      for (int c = 0; c < 3; ++c) {
        QVERIFY(close(sm[r * 3 + c], std::exp(v[r * 3 + c]) / z, 1e-12));
        QVERIFY(close(lsm[r * 3 + c], v[r * 3 + c] - std::log(z), 1e-12));
      }
    }
  }

  void softmaxIsMaxShiftedLikeTheKernels() {
    Harness h;
    SymTensor x = h.input("x", {2}, DType::F32, {1000, 999});  // exp(1000) overflows unshifted
    std::vector<double> y = h.eval(h.run1("softmax", {x}, {{"dim", 0}}));
    QVERIFY(close(y[0], 1 / (1 + std::exp(-1.0)), 1e-12));
  }

  void softmaxBackwardsMatchFiniteDifferences() {
    for (const char* fwd : {"softmax", "log_softmax"}) {
      Harness h;
      SymTensor x = h.input("x", {2, 4});
      SymTensor y = h.run1(fwd, {x}, {{"dim", 1}});
      SymTensor dy = h.input("dy", {2, 4});
      SymTensor dx = h.run1(std::string(fwd) + "_backward", {y, dy}, {{"dim", 1}});
      std::vector<double> numeric = h.numericGrad(h.weightedSum(y, h.valuesOf(dy)), x);
      QVERIFY2(allClose(h.eval(dx), numeric, 1e-5, fwd), fwd);
    }
  }

  void axisStructureForShapeReduction() {
    const ops::OpDef* mm = ops::findOp("matmul");
    std::vector<TensorType> in{f32({4, 8}), f32({8, 3})};
    ops::AxisInfo info = mm->axes(in, ops::inferTypes(*mm, in, {}), {});
    QCOMPARE(info.reduced.size(), size_t(1));
    QCOMPARE(info.reduced[0].port, 0);
    QCOMPARE(info.reduced[0].axis, 1);
    // heads x head_dim = hidden
    const ops::OpDef* rs = ops::findOp("reshape");
    std::vector<TensorType> rin{f32({2, 12})};
    Json ra{{"shape", {2, 3, 4}}};
    info = rs->axes(rin, ops::inferTypes(*rs, rin, ra), ra);
    QCOMPARE(info.ties.size(), size_t(2));  // batch, and the values (they matter for integer tensors)
    QCOMPARE(info.ties[1].first.axis, ops::kValues);
    QCOMPARE(info.products.size(), size_t(1));
    QCOMPARE(info.products[0].from.size(), size_t(1));
    QCOMPARE(info.products[0].to.size(), size_t(2));
    // slice offsets are boundaries along the sliced axis
    const ops::OpDef* sl = ops::findOp("slice");
    Json sa{{"dim", 1}, {"start", 4}, {"end", 8}};
    info = sl->axes({f32({2, 8})}, {f32({2, 4})}, sa);
    QCOMPARE(info.boundaries.size(), size_t(2));
    QCOMPARE(info.boundaries[0].first.axis, 1);
    QCOMPARE(info.boundaries[0].second, int64_t(4));
    // gather's source axis is indexed by data: it keeps its extent
    info = ops::findOp("gather")->axes({f32({2, 8}), i64({2, 3})}, {f32({2, 3})}, {{"dim", 1}});
    QCOMPARE(info.fixed.size(), size_t(1));
  }

  void rescaleRewritesIndexAttributes() {
    auto byFour = [](ops::AxisRef) { return int64_t(4); };
    Json sliced = ops::findOp("slice")->rescale({{"dim", 1}, {"start", 4}, {"end", 8}}, {f32({2, 2})},
                                                {f32({2, 1})}, byFour);
    QCOMPARE(sliced["start"].get<int>(), 1);
    QCOMPARE(sliced["end"].get<int>(), 2);
    Json split = ops::findOp("split")->rescale({{"dim", 0}, {"sizes", {8, 4}}}, {f32({3})},
                                               {f32({2}), f32({1})}, byFour);
    QCOMPARE(split["sizes"], Json({2, 1}));
    Json reshaped =
        ops::findOp("reshape")->rescale({{"shape", {2, 32, 128}}}, {f32({2, 8})}, {f32({2, 2, 4})}, byFour);
    QCOMPARE(reshaped["shape"], Json({2, 2, 4}));
    Json emb =
        ops::findOp("embedding")->rescale({{"start", 64}}, {i64({2}), f32({8, 4})}, {f32({2, 4})}, byFour);
    QCOMPARE(emb["start"].get<int>(), 16);
    Json oh = ops::findOp("one_hot")->rescale({{"num_classes", 32}, {"start", 32}}, {i64({2})}, {f32({2, 8})},
                                              byFour);
    QCOMPARE(oh["num_classes"].get<int>(), 8);
    QCOMPARE(oh["start"].get<int>(), 8);
    Json iota = ops::findOp("iota")->rescale({{"n", 16}, {"start", 16}}, {}, {i64({4})}, byFour);
    QCOMPARE(iota["n"].get<int>(), 4);
    QCOMPARE(iota["start"].get<int>(), 4);
    Json recv = ops::findOp("recv")->rescale({{"peer", 1}, {"instance", "p"}, {"shape", {64, 64}}}, {},
                                             {f32({2, 2})}, byFour);
    QCOMPARE(recv["shape"], Json({2, 2}));
  }
};

QTEST_APPLESS_MAIN(TestOps)
#include "test_ops.moc"
