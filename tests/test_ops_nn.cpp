// Neural-network ops: forward semantics against direct computation on concrete values, every *_backward
// op against central finite differences of its forward op, and composites equal (expression for
// expression) to their hand decomposition into primitive ops.
#include <QtTest>

#include "test_ops_harness.h"

using namespace paraproof;
using namespace opstest;

namespace {
// Checks `grad` (an output of a backward op) against finite differences of sum(dy * forward) wrt `wrt`.
bool matchesFiniteDifferences(Harness& h, const SymTensor& forward, const std::vector<double>& dy,
                              const SymTensor& wrt, const SymTensor& grad, const char* what) {
  std::vector<double> numeric = h.numericGrad(h.weightedSum(forward, dy), wrt);
  return allClose(h.eval(grad), numeric, 1e-5, what);
}

std::vector<double> naiveAttention(const std::vector<double>& q, const std::vector<double>& k,
                                   const std::vector<double>& v, const std::vector<int>& qpos,
                                   const std::vector<int>& kpos, int S, int T, int H, int HK, int D, int DV,
                                   double scale) {
  std::vector<double> o(static_cast<size_t>(S * H * DV), 0.0);
  for (int s = 0; s < S; ++s)
    for (int hh = 0; hh < H; ++hh) {
      int g = hh / (H / HK);
      std::vector<double> sc(T);
      double m = -1e300;
      for (int t = 0; t < T; ++t) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += q[(s * H + hh) * D + d] * k[(t * HK + g) * D + d];
        sc[t] = kpos[t] <= qpos[s] ? scale * dot : -1e9;
        m = std::max(m, sc[t]);
      }
      double z = 0;
      for (int t = 0; t < T; ++t)
        z += std::exp(sc[t] - m);
      for (int t = 0; t < T; ++t)
        for (int e = 0; e < DV; ++e)
          o[(s * H + hh) * DV + e] += std::exp(sc[t] - m) / z * v[(t * HK + g) * DV + e];
    }
  return o;
}
}  // namespace

class TestOpsNN : public QObject {
  Q_OBJECT
 private slots:
  void rmsnormAndLayernormMatchDirectFormulas() {
    Harness h;
    SymTensor x = h.input("x", {2, 4}), w = h.input("w", {4}), b = h.input("b", {4});
    std::vector<double> xv = h.valuesOf(x), wv = h.valuesOf(w), bv = h.valuesOf(b), rms, ln;
    for (int r = 0; r < 2; ++r) {
      double ms = 0, mu = 0, var = 0;
      for (int c = 0; c < 4; ++c)
        ms += xv[r * 4 + c] * xv[r * 4 + c] / 4, mu += xv[r * 4 + c] / 4;
      for (int c = 0; c < 4; ++c)
        var += (xv[r * 4 + c] - mu) * (xv[r * 4 + c] - mu) / 4;
      for (int c = 0; c < 4; ++c) {
        rms.push_back(xv[r * 4 + c] / std::sqrt(ms + 1e-5) * wv[c]);
        ln.push_back((xv[r * 4 + c] - mu) / std::sqrt(var + 1e-5) * wv[c] + bv[c]);
      }
    }
    QVERIFY(allClose(h.eval(h.run1("rmsnorm", {x, w}, {{"eps", 1e-5}})), rms, 1e-12, "rmsnorm"));
    QVERIFY(allClose(h.eval(h.run1("layernorm", {x, w, b}, {{"eps", 1e-5}})), ln, 1e-12, "layernorm"));
  }

  void rmsnormEqualsItsHandDecomposition() {
    Harness h;
    SymTensor x = h.input("x", {2, 4}), w = h.input("w", {4});
    SymTensor ms = h.run1("mean", {h.run1("square", {x})}, {{"dims", {-1}}, {"keepdim", true}});
    SymTensor r = h.run1("rsqrt", {h.run1("add_scalar", {ms}, {{"value", 1e-5}})});
    SymTensor byHand = h.run1("mul", {h.run1("mul", {x, r}), w});
    QCOMPARE(h.run1("rmsnorm", {x, w}, {{"eps", 1e-5}}).elems, byHand.elems);
  }

  void normBackwardsMatchFiniteDifferences() {
    Harness h;
    SymTensor x = h.input("x", {3, 4}), w = h.input("w", {4}), b = h.input("b", {4}),
              dy = h.input("dy", {3, 4});
    Json eps{{"eps", 1e-5}};
    SymTensor y = h.run1("rmsnorm", {x, w}, eps);
    auto g = h.run("rmsnorm_backward", {x, w, dy}, eps);
    QVERIFY(matchesFiniteDifferences(h, y, h.valuesOf(dy), x, g[0], "rmsnorm dx"));
    QVERIFY(matchesFiniteDifferences(h, y, h.valuesOf(dy), w, g[1], "rmsnorm dw"));
    SymTensor z = h.run1("layernorm", {x, w, b}, eps);
    auto lg = h.run("layernorm_backward", {x, w, dy}, eps);
    QVERIFY(matchesFiniteDifferences(h, z, h.valuesOf(dy), x, lg[0], "layernorm dx"));
    QVERIFY(matchesFiniteDifferences(h, z, h.valuesOf(dy), w, lg[1], "layernorm dw"));
    QVERIFY(matchesFiniteDifferences(h, z, h.valuesOf(dy), b, lg[2], "layernorm db"));
  }

  void activationBackwardsMatchFiniteDifferences() {
    struct Case {
      const char* forward;
      const char* backward;
      Json attrs;
      bool fromOutput;
    };
    for (const Case& c : {Case{"silu", "silu_backward", Json::object(), false},
                          Case{"gelu", "gelu_backward", Json::object(), false},
                          Case{"gelu", "gelu_backward", {{"approximate", "none"}}, false},
                          Case{"relu", "relu_backward", Json::object(), false},
                          Case{"sigmoid", "sigmoid_backward", Json::object(), true},
                          Case{"tanh", "tanh_backward", Json::object(), true}}) {
      Harness h;
      SymTensor x = h.input("x", {6}), dy = h.input("dy", {6});
      SymTensor y = h.run1(c.forward, {x}, c.attrs);
      SymTensor dx = h.run1(c.backward, {c.fromOutput ? y : x, dy}, c.attrs);
      QVERIFY2(matchesFiniteDifferences(h, y, h.valuesOf(dy), x, dx, c.backward), c.backward);
    }
  }

  void ropeRotatesHalves() {
    Harness h;
    SymTensor x = h.input("x", {1, 2, 1, 4}), cs = h.input("cos", {2, 4}), sn = h.input("sin", {2, 4});
    std::vector<double> xv = h.valuesOf(x), cv = h.valuesOf(cs), sv = h.valuesOf(sn), want;
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i) {
        double rot = i < 2 ? -xv[s * 4 + i + 2] : xv[s * 4 + i - 2];
        want.push_back(xv[s * 4 + i] * cv[s * 4 + i] + rot * sv[s * 4 + i]);
      }
    QVERIFY(allClose(h.eval(h.run1("rope", {x, cs, sn})), want, 1e-12, "rope"));
  }

  void ropeBackwardMatchesFiniteDifferences() {
    Harness h;
    SymTensor x = h.input("x", {2, 3, 2, 4}), cs = h.input("cos", {3, 4}), sn = h.input("sin", {3, 4});
    SymTensor dy = h.input("dy", {2, 3, 2, 4});
    SymTensor y = h.run1("rope", {x, cs, sn});
    SymTensor dx = h.run1("rope_backward", {dy, cs, sn});
    QVERIFY(matchesFiniteDifferences(h, y, h.valuesOf(dy), x, dx, "rope dx"));
  }

  void causalMaskComparesPositionsExactly() {
    Harness h;
    SymTensor s = h.input("s", {2, 3});
    SymTensor qpos = h.input("qpos", {2}, DType::I64, {4, 5}),
              kpos = h.input("kpos", {3}, DType::I64, {3, 5, 6});
    std::vector<double> sv = h.valuesOf(s);
    QVERIFY(allClose(h.eval(h.run1("causal_mask", {s, qpos, kpos}, {{"fill", -7}})),
                     {sv[0], -7, -7, sv[3], sv[4], -7}, 0, "causal_mask"));
  }

  void attentionMatchesNaiveGroupedQueryAttention() {
    Harness h;
    const int S = 2, T = 4, H = 4, HK = 2, D = 2, DV = 3;
    SymTensor q = h.input("q", {1, S, H, D}), k = h.input("k", {1, T, HK, D}),
              v = h.input("v", {1, T, HK, DV});
    // A context-parallel chunk: the queries are positions 2 and 3 of the sequence.
    SymTensor qpos = h.input("qpos", {S}, DType::I64, {2, 3}),
              kpos = h.input("kpos", {T}, DType::I64, {0, 1, 2, 3});
    std::vector<double> want = naiveAttention(h.valuesOf(q), h.valuesOf(k), h.valuesOf(v), {2, 3},
                                              {0, 1, 2, 3}, S, T, H, HK, D, DV, 0.5);
    QVERIFY(allClose(h.eval(h.run1("attention", {q, k, v, qpos, kpos}, {{"scale", 0.5}})), want, 1e-12,
                     "attention"));
  }

  void attentionEqualsItsHandDecomposition() {
    Harness h;
    SymTensor q = h.input("q", {1, 3, 2, 2}), k = h.input("k", {1, 3, 2, 2}), v = h.input("v", {1, 3, 2, 2});
    SymTensor pos = h.run1("iota", {}, {{"n", 3}});
    Json heads{{"perm", {0, 2, 1, 3}}};
    SymTensor kt = h.run1("transpose", {k}, {{"perm", {0, 2, 3, 1}}});
    SymTensor scores =
        h.run1("scale", {h.run1("matmul", {h.run1("transpose", {q}, heads), kt})}, {{"factor", 0.5}});
    SymTensor probs = h.run1("softmax", {h.run1("causal_mask", {scores, pos, pos})}, {{"dim", -1}});
    SymTensor byHand =
        h.run1("transpose", {h.run1("matmul", {probs, h.run1("transpose", {v}, heads)})}, heads);
    QCOMPARE(h.run1("attention", {q, k, v, pos, pos}, {{"scale", 0.5}}).elems, byHand.elems);
  }

  void attentionBackwardMatchesFiniteDifferences() {
    for (bool causal : {true, false}) {
      Harness h;
      SymTensor q = h.input("q", {1, 3, 4, 2}), k = h.input("k", {1, 3, 2, 2}),
                v = h.input("v", {1, 3, 2, 3});
      SymTensor qpos = h.input("qpos", {3}, DType::I64, {0, 1, 2}),
                kpos = h.input("kpos", {3}, DType::I64, {0, 1, 2});
      SymTensor dout = h.input("do", {1, 3, 4, 3});
      Json a{{"scale", 0.7}, {"causal", causal}};
      SymTensor o = h.run1("attention", {q, k, v, qpos, kpos}, a);
      auto g = h.run("attention_backward", {q, k, v, qpos, kpos, dout}, a);
      std::vector<double> dy = h.valuesOf(dout);
      QVERIFY(matchesFiniteDifferences(h, o, dy, q, g[0], "attention dq"));
      QVERIFY(matchesFiniteDifferences(h, o, dy, k, g[1], "attention dk"));
      QVERIFY(matchesFiniteDifferences(h, o, dy, v, g[2], "attention dv"));
    }
  }

  void embeddingShardGivesZerosOutOfRange() {
    Harness h;
    // Vocab shard rows 4..6 of a larger table.
    SymTensor table = h.input("table", {3, 2}, DType::F32, {1, 2, 3, 4, 5, 6});
    SymTensor ids = h.input("ids", {4}, DType::I64, {3, 4, 6, 7});
    QVERIFY(allClose(h.eval(h.run1("embedding", {ids, table}, {{"start", 4}})), {0, 0, 1, 2, 5, 6, 0, 0}, 0,
                     "embedding shard"));
    QVERIFY(allClose(h.eval(h.run1("one_hot", {ids}, {{"num_classes", 3}, {"start", 4}})),
                     {0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}, 0, "one_hot"));
  }

  void embeddingBackwardMatchesFiniteDifferences() {
    Harness h;
    SymTensor table = h.input("table", {3, 2});
    SymTensor ids = h.input("ids", {2, 3}, DType::I64, {4, 5, 4, 9, 6, 3});
    SymTensor dy = h.input("dy", {2, 3, 2});
    SymTensor y = h.run1("embedding", {ids, table}, {{"start", 4}});
    SymTensor dw = h.run1("embedding_backward", {ids, dy}, {{"num_embeddings", 3}, {"start", 4}});
    QVERIFY(matchesFiniteDifferences(h, y, h.valuesOf(dy), table, dw, "embedding dtable"));
  }

  void crossEntropyMatchesDirectFormula() {
    Harness h;
    SymTensor logits = h.input("logits", {3, 4});
    SymTensor labels = h.input("labels", {3}, DType::I64, {2, 0, 3});
    SymTensor mask = h.input("mask", {3}, DType::F32, {1, 0, 1});
    std::vector<double> x = h.valuesOf(logits), per;
    std::vector<int> lab{2, 0, 3};
    std::vector<double> m{1, 0, 1};
    double total = 0;
    for (int i = 0; i < 3; ++i) {
      double z = 0;
      for (int c = 0; c < 4; ++c)
        z += std::exp(x[i * 4 + c]);
      per.push_back((std::log(z) - x[i * 4 + lab[i]]) * m[i]);
      total += per.back();
    }
    QVERIFY(allClose(h.eval(h.run1("cross_entropy", {logits, labels, mask}, {{"reduction", "none"}})), per,
                     1e-12));
    QVERIFY(allClose(h.eval(h.run1("cross_entropy", {logits, labels, mask}, {{"reduction", "sum"}})), {total},
                     1e-12));
    QVERIFY(allClose(h.eval(h.run1("cross_entropy", {logits, labels, mask}, {{"reduction", "mean"}})),
                     {total / 2}, 1e-12));
  }

  void crossEntropyBackwardMatchesFiniteDifferences() {
    for (const char* red : {"mean", "sum", "none"}) {
      Harness h;
      SymTensor logits = h.input("logits", {3, 4});
      SymTensor labels = h.input("labels", {3}, DType::I64, {1, 3, 0});
      SymTensor mask = h.input("mask", {3}, DType::F32, {1, 1, 0});
      bool none = std::string(red) == "none";
      SymTensor dloss = h.input("dloss", none ? Shape{3} : Shape{});
      Json a{{"reduction", red}};
      SymTensor loss = h.run1("cross_entropy", {logits, labels, mask}, a);
      SymTensor dx = h.run1("cross_entropy_backward", {logits, labels, mask, dloss}, a);
      QVERIFY2(matchesFiniteDifferences(h, loss, h.valuesOf(dloss), logits, dx, red), red);
    }
  }

  void topkSelectsLargestWithTiesToTheLowerIndex() {
    Harness h;
    SymTensor x = h.input("x", {2, 4}, DType::F32, {1, 3, 3, 2, 5, 1, 4, 2});
    auto out = h.run("topk", {x}, {{"k", 3}});
    QVERIFY(allClose(h.eval(out[0]), {3, 3, 2, 5, 4, 2}, 0, "topk values"));
    QVERIFY(allClose(h.eval(out[1]), {1, 2, 3, 0, 2, 3}, 0, "topk indices"));
    QCOMPARE(h.pool.sort(out[1].elems[0]), sym::Sort::Int);
    QVERIFY(allClose(h.eval(h.run1("topk_mask", {x}, {{"k", 2}})), {0, 3, 3, 0, 5, 0, 4, 0}, 0, "topk_mask"));
  }

  void trainingOps() {
    Harness h;
    SymTensor a = h.input("a", {2}, DType::F32, {3, 0}), b = h.input("b", {1}, DType::F32, {4});
    SymTensor norm = h.run1("global_norm_sq", {a, b});
    QVERIFY(allClose(h.eval(norm), {25}, 1e-12, "global_norm_sq"));
    QVERIFY(allClose(h.eval(h.run1("clip_coef", {norm}, {{"max_norm", 1.0}})), {1.0 / (5 + 1e-6)}, 1e-12,
                     "clip"));
    QVERIFY(allClose(h.eval(h.run1("clip_coef", {norm}, {{"max_norm", 10.0}})), {1.0}, 0, "no clip"));

    SymTensor p = h.input("p", {2}), g = h.input("g", {2}), m = h.input("m", {2}),
              v = h.input("v", {2}, DType::F32, {0.3, 0.1});
    Json hp{{"lr", 0.01}, {"beta1", 0.9}, {"beta2", 0.99}, {"eps", 1e-8}, {"weight_decay", 0.1}, {"step", 3}};
    auto out = h.run("adamw", {p, g, m, v}, hp);
    std::vector<double> pv = h.valuesOf(p), gv = h.valuesOf(g), mv = h.valuesOf(m), vv = h.valuesOf(v), wp,
                        wm, wv;
    for (int i = 0; i < 2; ++i) {
      double m1 = 0.9 * mv[i] + 0.1 * gv[i], v1 = 0.99 * vv[i] + 0.01 * gv[i] * gv[i];
      double mhat = m1 / (1 - std::pow(0.9, 3)), vhat = v1 / (1 - std::pow(0.99, 3));
      wp.push_back(pv[i] * (1 - 0.01 * 0.1) - 0.01 * mhat / (std::sqrt(vhat) + 1e-8));
      wm.push_back(m1);
      wv.push_back(v1);
    }
    QVERIFY(allClose(h.eval(out[0]), wp, 1e-12, "adamw param"));
    QVERIFY(allClose(h.eval(out[1]), wm, 1e-12, "adamw m"));
    QVERIFY(allClose(h.eval(out[2]), wv, 1e-12, "adamw v"));
  }

  void globalNormSqEqualsSumOfPerTensorSquares() {
    Harness h;
    SymTensor a = h.input("a", {2, 2}), b = h.input("b", {3});
    SymTensor perTensor =
        h.run1("add", {h.run1("sum", {h.run1("square", {a})}), h.run1("sum", {h.run1("square", {b})})});
    QCOMPARE(h.run1("global_norm_sq", {a, b}).elems, perTensor.elems);
    // The generator's form: each tensor's squares summed on their own, then the scalars added.
    SymTensor split = h.run1("add_n", {h.run1("global_norm_sq", {a}), h.run1("global_norm_sq", {b})});
    QCOMPARE(split.elems, perTensor.elems);
  }

  void addNAddsTensorsOfOneShape() {
    Harness h;
    SymTensor a = h.input("a", {2}, DType::F32, {1, 2}), b = h.input("b", {2}, DType::F32, {10, 20}),
              c = h.input("c", {2}, DType::F32, {100, 200});
    QVERIFY(allClose(h.eval(h.run1("add_n", {a, b, c})), {111, 222}, 0, "add_n"));
    QVERIFY(allClose(h.eval(h.run1("add_n", {a})), {1, 2}, 0, "add_n of one"));
    QVERIFY_THROWS_EXCEPTION(ops::ShapeError, h.run1("add_n", {a, h.input("d", {3})}));
  }

  void aWrongDerivativeIsCaught() {
    // The finite-difference check can fail: tanh_backward fed x instead of y disagrees.
    Harness h;
    SymTensor x = h.input("x", {4}), dy = h.input("dy", {4});
    SymTensor y = h.run1("tanh", {x});
    SymTensor wrong = h.run1("tanh_backward", {x, dy});
    std::vector<double> numeric = h.numericGrad(h.weightedSum(y, h.valuesOf(dy)), x);
    std::vector<double> got = h.eval(wrong);
    bool anyDiffers = false;
    for (size_t i = 0; i < got.size(); ++i)
      anyDiffers = anyDiffers || !close(got[i], numeric[i], 1e-5);
    QVERIFY(anyDiffers);
  }
};

QTEST_APPLESS_MAIN(TestOpsNN)
#include "test_ops_nn.moc"
