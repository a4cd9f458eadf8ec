// Collectives: the data layout each member receives, on concrete values.
#include <QtTest>

#include "test_ops_harness.h"

using namespace paraproof;
using namespace opstest;

namespace {
std::vector<SymTensor> group(Harness& h, const std::string& op, const std::vector<SymTensor>& members,
                             Json attrs) {
  const ops::OpDef* def = ops::findOp(op);
  // Every member's shape rule agrees with what the group lowering hands it.
  std::vector<SymTensor> out = def->lowerGroup(h.pool, members, attrs);
  for (size_t i = 0; i < out.size(); ++i) {
    auto t = ops::inferTypes(*def, {members[i].type}, attrs);
    if (!(t.at(0) == out[i].type)) qFatal("%s: member %zu type mismatch", op.c_str(), i);
  }
  return out;
}
}  // namespace

class TestOpsComm : public QObject {
  Q_OBJECT
 private slots:
  void allReduceSumAvgMax() {
    Harness h;
    SymTensor a = h.input("a", {2}, DType::F32, {1, 5}), b = h.input("b", {2}, DType::F32, {3, 2});
    for (auto [kind, want] :
         {std::pair{"sum", std::vector<double>{4, 7}}, std::pair{"avg", std::vector<double>{2, 3.5}},
          std::pair{"max", std::vector<double>{3, 5}}}) {
      auto out = group(h, "all_reduce", {a, b}, {{"group", {4, 7}}, {"instance", "ar"}, {"reduce", kind}});
      QCOMPARE(out.size(), size_t(2));
      QVERIFY2(allClose(h.eval(out[0]), want, 1e-12, kind), kind);
      QCOMPARE(out[0].elems, out[1].elems);
    }
  }

  void allReduceCoalescedBucketIsMemberMajor() {
    Harness h;
    SymTensor a0 = h.input("a0", {1}, DType::F32, {1}), a1 = h.input("a1", {2}, DType::F32, {2, 3});
    SymTensor b0 = h.input("b0", {1}, DType::F32, {10}), b1 = h.input("b1", {2}, DType::F32, {20, 30});
    auto out = ops::findOp("all_reduce")
                   ->lowerGroup(h.pool, {a0, a1, b0, b1}, {{"group", {0, 1}}, {"instance", "bucket"}});
    QCOMPARE(out.size(), size_t(4));
    QVERIFY(allClose(h.eval(out[0]), {11}, 0));
    QVERIFY(allClose(h.eval(out[3]), {22, 33}, 0));
  }

  void allGatherConcatenatesInGroupOrder() {
    Harness h;
    SymTensor a = h.input("a", {2, 1}, DType::F32, {1, 2}), b = h.input("b", {2, 1}, DType::F32, {3, 4});
    // Group order, not rank order, decides the layout.
    auto out = group(h, "all_gather", {a, b}, {{"group", {5, 2}}, {"instance", "ag"}, {"dim", 1}});
    QVERIFY(allClose(h.eval(out[1]), {1, 3, 2, 4}, 0, "all_gather"));
  }

  void reduceScatterGivesMemberIItsShard() {
    Harness h;
    SymTensor a = h.input("a", {4}, DType::F32, {1, 2, 3, 4}),
              b = h.input("b", {4}, DType::F32, {10, 20, 30, 40});
    auto out = group(h, "reduce_scatter", {a, b}, {{"group", {0, 1}}, {"instance", "rs"}, {"dim", 0}});
    QVERIFY(allClose(h.eval(out[0]), {11, 22}, 0, "shard 0"));
    QVERIFY(allClose(h.eval(out[1]), {33, 44}, 0, "shard 1"));
    out = group(h, "reduce_scatter", {a, b},
                {{"group", {0, 1}}, {"instance", "rs"}, {"dim", 0}, {"reduce", "avg"}});
    QVERIFY(allClose(h.eval(out[1]), {16.5, 22}, 0, "avg shard 1"));
  }

  void allToAllTransposesChunks() {
    Harness h;
    // member i's input [2, 2]: split rows (dim 0) into 2 chunks, concat along columns (dim 1).
    SymTensor a = h.input("a", {2, 2}, DType::F32, {1, 2, 3, 4}),
              b = h.input("b", {2, 2}, DType::F32, {5, 6, 7, 8});
    auto out = group(h, "all_to_all", {a, b},
                     {{"group", {0, 1}}, {"instance", "a2a"}, {"split_dim", 0}, {"concat_dim", 1}});
    QCOMPARE(out[0].shape(), Shape({1, 4}));
    QVERIFY(allClose(h.eval(out[0]), {1, 2, 5, 6}, 0, "member 0: chunk 0 of a, then of b"));
    QVERIFY(allClose(h.eval(out[1]), {3, 4, 7, 8}, 0, "member 1: chunk 1 of a, then of b"));
  }

  void broadcastCopiesTheSourceMember() {
    Harness h;
    SymTensor a = h.input("a", {2}, DType::F32, {1, 2}), b = h.input("b", {2}, DType::F32, {3, 4});
    auto out = group(h, "broadcast", {a, b}, {{"group", {0, 3}}, {"instance", "bc"}, {"src", 3}});
    QVERIFY(allClose(h.eval(out[0]), {3, 4}, 0, "broadcast"));
  }

  void mismatchedMemberShapesAreRejected() {
    Harness h;
    SymTensor a = h.input("a", {2}), b = h.input("b", {3});
    bool threw = false;
    try {
      ops::findOp("all_reduce")->lowerGroup(h.pool, {a, b}, {{"group", {0, 1}}, {"instance", "x"}});
    } catch (const ops::ShapeError& e) {
      threw = std::string(e.what()).find("member 1 contributes f32[3]") != std::string::npos;
    }
    QVERIFY(threw);
  }

  void gatherBoundariesAreMemberOffsets() {
    const ops::OpDef* ag = ops::findOp("all_gather");
    Json a{{"group", {0, 1, 2, 3}}, {"instance", "ag"}, {"dim", 0}};
    ops::AxisInfo info = ag->axes({f32({4})}, {f32({16})}, a);
    QCOMPARE(info.boundaries.size(), size_t(3));
    QCOMPARE(info.boundaries[2].second, int64_t(12));
    QCOMPARE(info.boundaries[2].first.port, 1);
  }

  void pointToPointHasShapeRulesOnly() {
    QVERIFY(ops::findOp("send")->infer({f32({2})}, {{"peer", 1}, {"instance", "p"}}).empty());
    auto t = ops::findOp("recv")->infer(
        {}, {{"peer", 0}, {"instance", "p"}, {"shape", {2, 3}}, {"dtype", "bf16"}});
    QCOMPARE(t.at(0), (TensorType{{2, 3}, DType::BF16}));
  }
};

QTEST_APPLESS_MAIN(TestOpsComm)
#include "test_ops_comm.moc"
