// The plan generator: generated plans are valid, round-trip through JSON, and reject impossible combinations.
#include <QtTest>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"

using namespace paraproof;
using parallel::generatePlan;
using parallel::parseParallel;

namespace {

Plan generate(const std::string& model, const std::string& par, int layers = 0) {
  const models::ModelConfig* m = models::findModel(model);
  if (!m) throw std::runtime_error("no model " + model);
  parallel::GenerateOptions o;
  o.layers = layers;
  return generatePlan(*m, parseParallel(par), o);
}

std::string problems(const Plan& p) {
  std::string s;
  int n = 0;
  for (const Diagnostic& d : validatePlan(p))
    if (n++ < 8) s += d.str() + "\n";
  return s;
}

}  // namespace

class TestGenerator : public QObject {
  Q_OBJECT
 private slots:
  void generatedPlansValidate_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<int>("layers");
    for (const char* m : {"mlp", "gpt-tiny"})
      for (const char* p : {"dp=1", "dp=2", "tp=2", "pp=2", "pp=2,mb=2", "pp=2,mb=3,schedule=gpipe",
                            "dp=2,mb=2", "dp=2,tp=2,pp=2,mb=2"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    QTest::newRow("llama3-8b dp2 tp2 pp2 mb2") << "llama3-8b"
                                               << "dp=2,tp=2,pp=2,mb=2" << 4;
    // ZeRO and tied embeddings.
    for (const char* m : {"mlp", "gpt-tiny"})
      for (const char* p : {"dp=2,zero=1", "dp=2,zero=2", "dp=2,zero=3", "dp=2,tp=2,pp=2,mb=2,zero=3"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    // DeepSeek MLA.
    for (const char* m : {"dsv3-16b", "dsv3-236b"})
      for (const char* p : {"dp=1", "dp=2,tp=2,pp=2,mb=2", "dp=2,tp=2,zero=3"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    // Sequence parallel and kv replication (gpt-tiny has 2 kv heads).
    for (const char* m : {"mlp", "gpt-tiny"})
      for (const char* p : {"tp=2,sp", "dp=2,tp=2,pp=2,mb=2,sp", "dp=2,tp=2,pp=2,mb=2,zero=3,sp"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    for (const char* p : {"tp=4", "dp=2,tp=4,pp=2,mb=2,sp", "dp=2,tp=4,zero=2"})
      QTest::newRow((std::string("gpt-tiny ") + p).c_str()) << "gpt-tiny" << QString(p) << 2;
    // DeepSeek MoE and expert parallel.
    for (const char* p : {"dp=1", "tp=2", "dp=2,ep=2", "dp=4,ep=2", "dp=2,tp=2,pp=2,mb=2,ep=2"})
      QTest::newRow((std::string("dsv3-16b ") + p).c_str()) << "dsv3-16b" << QString(p) << 2;
    QTest::newRow("dsv3-671b dp2 ep2") << "dsv3-671b"
                                       << "dp=2,ep=2" << 4;
    // MoE composed with zero (experts sharded over the expert-data-parallel group).
    for (const char* p : {"dp=2,ep=2,zero=1", "dp=4,ep=2,zero=2", "dp=4,ep=2,pp=2,mb=2,zero=3"})
      QTest::newRow((std::string("dsv3-16b ") + p).c_str()) << "dsv3-16b" << QString(p) << 2;
    // Context parallel.
    for (const char* m : {"mlp", "gpt-tiny"})
      for (const char* p : {"cp=2", "dp=2,cp=2", "tp=2,pp=2,mb=2,cp=2", "dp=2,cp=2,zero=3"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    // sp x cp (each zig-zag chunk sharded over tp) and cp with kv replication.
    for (const char* m : {"mlp", "gpt-tiny"})
      for (const char* p : {"tp=2,sp,cp=2", "dp=2,tp=2,pp=2,mb=2,sp,cp=2", "dp=2,tp=2,sp,cp=2,zero=3"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 2;
    QTest::newRow("gpt-tiny dp2 tp4 pp2 mb2 cp2") << "gpt-tiny"
                                                  << "dp=2,tp=4,pp=2,mb=2,cp=2" << 2;
    // MLA under sp and cp (dense layers only: the MoE FFN runs under neither yet).
    for (const char* m : {"dsv3-16b", "dsv3-236b"})
      for (const char* p : {"tp=2,sp", "dp=2,tp=2,mb=2,sp", "dp=2,tp=2,zero=3,sp", "cp=2", "dp=2,tp=2,cp=2",
                            "dp=2,cp=2,zero=3"})
        QTest::newRow((std::string(m) + " " + p).c_str()) << QString(m) << QString(p) << 1;
    for (const char* p : {"dp=2,tp=2,pp=2,mb=2,sp", "tp=2,pp=2,mb=2,cp=2"})
      QTest::newRow((std::string("dsv3-671b ") + p).c_str()) << "dsv3-671b" << QString(p) << 3;
  }
  void generatedPlansValidate() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    QFETCH(int, layers);
    Plan p = generate(model.toStdString(), parallel.toStdString(), layers);
    const std::string errs = problems(p);
    QVERIFY2(errs.empty(), errs.c_str());
  }

  void logicalGraphIsTheFullTrainingStep() {
    Plan p = generate("gpt-tiny", "dp=1");
    const Graph& g = p.logical;
    for (const char* kind : {"embedding", "embedding_backward", "attention", "attention_backward", "one_hot",
                             "exp", "log", "global_norm_sq", "clip_coef", "adamw", "rope", "rope_backward",
                             "rmsnorm", "rmsnorm_backward", "silu_backward"})
      QVERIFY2(std::any_of(g.ops.begin(), g.ops.end(), [&](const Op& o) { return o.kind == kind; }), kind);
    QCOMPARE(g.values[g.outputs.front()].name, std::string("loss"));
    // 2 layers x 9 + embed + norm parameters (the output head is tied to the embedding), each with weight,
    // m and v outputs.
    QCOMPARE(static_cast<int>(g.outputs.size()), 1 + 3 * (2 * 9 + 2));
  }

  // MLA: low-rank kv projection [kvLora + qkRope, H] and kv up-projection; no q compression on dsv3-16b,
  // q_lora on dsv3-236b; the rope tables cover only the decoupled rope part; the shared rope key reaches all
  // heads through a broadcast whose backward is a sum over heads.
  void deepSeekLayerHasTheMlaStructure() {
    const models::ModelConfig& cfg = *models::findModel("dsv3-16b");
    Plan p = generate("dsv3-16b", "dp=1", 2);
    const Graph& g = p.logical;
    auto shapeOf = [&](const std::string& v) {
      const ValueId id = g.findValue(v);
      if (id == kNone) throw std::runtime_error("no value " + v);
      return g.values[id].type.shape;
    };
    QCOMPARE(shapeOf("layers.0.attention.wkv_a.weight"), (Shape{512 + 64, cfg.hidden}));
    QCOMPARE(shapeOf("layers.0.attention.wkv_b.weight"), (Shape{16 * (128 + 128), 512}));
    QCOMPARE(shapeOf("layers.0.attention.wq.weight"), (Shape{16 * (128 + 64), cfg.hidden}));
    QCOMPARE(shapeOf("layers.0.attention.wo.weight"), (Shape{cfg.hidden, 16 * 128}));
    QCOMPARE(shapeOf("layers.0.attention.kv_a_norm.weight"), (Shape{512}));
    QCOMPARE(shapeOf("rope.cos"), (Shape{8, 64}));
    QVERIFY(g.findValue("layers.0.attention.wq_a.weight") == kNone);
    QVERIFY(g.findValue("layers.0.attention.wk.weight") == kNone);
    const OpId core = g.findOp("layers.0.attention.core.out");
    QCOMPARE(g.ops[core].kind, std::string("attention"));
    QCOMPARE(g.values[g.ops[core].inputs[0]].type.shape, (Shape{2, 8, 16, 192}));  // q: nope + rope
    QCOMPARE(g.values[g.ops[core].inputs[2]].type.shape, (Shape{2, 8, 16, 128}));  // v
    QCOMPARE(g.ops[g.findOp("layers.0.attention.k_pe_heads")].kind, std::string("broadcast_to"));
    QCOMPARE(g.ops[g.findOp("layers.0.attention.k_pe_rot.grad")].kind, std::string("sum"));

    Plan q = generate("dsv3-236b", "dp=1", 2);
    QVERIFY(q.logical.findValue("layers.0.attention.wq_a.weight") != kNone);
    QVERIFY(q.logical.findValue("layers.0.attention.q_a_norm.weight") != kNone);
    QVERIFY(q.logical.findValue("layers.0.attention.wq.weight") == kNone);

    // Under tp the down-projections are replicated, the up-projections sharded over heads.
    Plan tp = generate("dsv3-16b", "tp=2", 2);
    const Device& d = tp.devices[1];
    QVERIFY(!d.lineage.at(d.graph.findValue("layers.0.attention.wkv_a.weight")).box.ranges.empty());
    QCOMPARE(d.graph.values[d.graph.findValue("layers.0.attention.wkv_a.weight")].type.shape,
             (Shape{576, cfg.hidden}));
    QCOMPARE(d.lineage.at(d.graph.findValue("layers.0.attention.wkv_b.weight")).box.ranges.at(0),
             (std::pair<int64_t, int64_t>{8 * 256, 16 * 256}));
    QVERIFY(d.graph.findOp("layers.0.attention.k_pe_rot.grad/ar") != kNone);
  }

  // DeepSeek: layers below denseLayers keep the dense SwiGLU, the others get router, routed experts (batched
  // [E, ...] weights) and shared experts of width sharedExperts * expertFfn.
  void deepSeekMoeLayerHasRouterExpertsAndSharedExperts() {
    const models::ModelConfig& m = *models::findModel("dsv3-16b");
    Plan p = generate("dsv3-16b", "dp=1", 2);
    const Graph& g = p.logical;
    auto shapeOf = [&](const std::string& v) {
      const ValueId id = g.findValue(v);
      return id == kNone ? Shape{} : g.values[id].type.shape;
    };
    const int64_t E = m.moe.routedExperts, Fe = m.moe.expertFfn, H = m.hidden;
    QCOMPARE(shapeOf("layers.0.mlp.w1.weight"), (Shape{m.ffn, H}));
    QVERIFY(g.findValue("layers.0.mlp.gate.weight") == kNone);
    QCOMPARE(shapeOf("layers.1.mlp.gate.weight"), (Shape{E, H}));
    QCOMPARE(shapeOf("layers.1.mlp.experts.w1.weight"), (Shape{E, Fe, H}));
    QCOMPARE(shapeOf("layers.1.mlp.experts.w3.weight"), (Shape{E, Fe, H}));
    QCOMPARE(shapeOf("layers.1.mlp.experts.w2.weight"), (Shape{E, H, Fe}));
    QCOMPARE(shapeOf("layers.1.mlp.shared_experts.w1.weight"), (Shape{m.moe.sharedExperts * Fe, H}));
    QCOMPARE(shapeOf("layers.1.mlp.shared_experts.w2.weight"), (Shape{H, m.moe.sharedExperts * Fe}));
    QVERIFY(g.findValue("layers.1.mlp.w1.weight") == kNone);
    auto kindOf = [&](const std::string& op) { return g.ops[g.findOp(op)].kind; };
    QCOMPARE(kindOf("layers.1.mlp.gate.scores"), std::string("softmax"));
    QCOMPARE(kindOf("layers.1.mlp.gate.select"), std::string("topk_indicator"));
    QCOMPARE(g.ops[g.findOp("layers.1.mlp.gate.select")].attrs.at("k").get<int>(), m.moe.topk);
    QCOMPARE(kindOf("layers.1.mlp.experts.in"), std::string("broadcast_to"));
    QCOMPARE(shapeOf("layers.1.mlp.experts.in").front(), E);

    // V3: sigmoid scores, group-limited selection (top-2 sum per group), normalised gates.
    Plan v3 = generate("dsv3-671b", "dp=1", 4);
    const Graph& g3 = v3.logical;
    QVERIFY(g3.findValue("layers.2.mlp.gate.weight") == kNone);
    QCOMPARE(g3.ops[g3.findOp("layers.3.mlp.gate.scores")].kind, std::string("sigmoid"));
    QCOMPARE(g3.ops[g3.findOp("layers.3.mlp.gate.group_select")].attrs.at("k").get<int>(), 4);
    QVERIFY(g3.findOp("layers.3.mlp.gate.normalized") != kNone);
  }

  // ep=2: each rank holds half the experts (box on the expert dim), dispatches and combines with all_to_all
  // over its ep group, and reduces expert gradients over the expert-data-parallel group only.
  void expertParallelShardsExpertsAndExchangesTokens() {
    Plan p = generate("dsv3-16b", "dp=4,ep=2", 2);
    QCOMPARE(p.mesh.axes, (std::vector<std::string>{"dp", "ep"}));
    const Device& d = p.devices.at(3);
    QCOMPARE(d.coord, (std::vector<int64_t>{1, 1}));
    const ValueId w1 = d.graph.findValue("layers.1.mlp.experts.w1.weight");
    QCOMPARE(d.lineage.at(w1).box.ranges.front(), (std::pair<int64_t, int64_t>{32, 64}));
    int a2a = 0;
    std::vector<int> expertGroup;
    for (const Op& o : d.graph.ops) {
      if (o.kind == "all_to_all") {
        ++a2a;
        QCOMPARE(o.attrs.at("group").get<std::vector<int>>(), (std::vector<int>{2, 3}));
      }
      if (o.kind == "all_reduce" && o.scope == "layers.1.mlp.experts")
        expertGroup = o.attrs.at("group").get<std::vector<int>>();
    }
    QCOMPARE(a2a, 4);  // dispatch and combine, forward and backward
    QCOMPARE(expertGroup, (std::vector<int>{1, 3}));
  }

  // ZeRO with ep: a routed expert's shard is split over the expert-data-parallel group (the dp ranks with
  // the same experts); with one such rank (dp = ep) the experts stay whole while dense weights are sharded.
  void zeroShardsExpertsOverTheExpertDataParallelGroup() {
    Plan p = generate("dsv3-16b", "dp=4,ep=2,zero=3", 2);
    const Device& d = p.devices.at(3);  // ep index 1, expert-data-parallel index 1
    // The parameter input is the shard (ZeRO-3), all-gathered over the expert-data-parallel group.
    const Lineage& w = d.lineage.at(d.graph.findValue("layers.1.mlp.experts.w1.weight"));
    QCOMPARE(w.box.ranges.front(), (std::pair<int64_t, int64_t>{48, 64}));  // upper half of experts 32..64
    const OpId ag = d.graph.findOp("layers.1.mlp.experts.w1.weight/ag");
    QVERIFY(ag != kNone);
    QCOMPARE(d.graph.ops[ag].attrs.at("group").get<std::vector<int>>(), (std::vector<int>{1, 3}));
    const Lineage& dense = d.lineage.at(d.graph.findValue("layers.1.mlp.gate.weight"));
    QCOMPARE(dense.box.ranges.front(), (std::pair<int64_t, int64_t>{48, 64}));  // 64 rows over dp 4

    Plan whole = generate("dsv3-16b", "dp=2,ep=2,zero=3", 2);
    const Device& r1 = whole.devices.at(1);
    QVERIFY(r1.graph.findOp("layers.1.mlp.experts.w1.weight/ag") == kNone);
    const Lineage& m = r1.lineage.at(r1.graph.findValue("layers.1.mlp.experts.w1.weight.m"));
    QCOMPARE(m.box.ranges.front(), (std::pair<int64_t, int64_t>{32, 64}));
    QVERIFY(r1.graph.findOp("layers.1.mlp.gate.weight/ag") != kNone);
  }

  // GPT-2 style tying: one logical parameter read by the embedding and the output projection, its gradient
  // the sum of both uses; under pp the first and last stage hold a copy each and sum their contributions.
  void tiedEmbeddingIsOneParameterUsedTwice() {
    Plan p = generate("gpt-tiny", "dp=1");
    const Graph& g = p.logical;
    QVERIFY(g.findValue("output.weight") == kNone);
    const ValueId w = g.findValue("embed.weight");
    QVERIFY(w != kNone);
    QStringList readers;
    for (const Op& o : g.ops)
      if (std::find(o.inputs.begin(), o.inputs.end(), w) != o.inputs.end())
        readers << QString::fromStdString(o.kind);
    QVERIFY2(readers.contains("embedding") && readers.contains("linear"), qPrintable(readers.join(",")));
    const OpId sum = g.findOp("embed.weight.grad");
    QVERIFY(sum != kNone);
    QCOMPARE(g.ops[sum].kind, std::string("add"));

    Plan pp = generate("gpt-tiny", "pp=2");
    for (const Device& d : pp.devices) {
      QVERIFY2(d.graph.findValue("embed.weight") != kNone, "both stages hold a copy");
      const OpId ar = d.graph.findOp("embed.weight.grad.tied/ar");
      QVERIFY(ar != kNone);
      QCOMPARE(d.graph.ops[ar].attrs.at("group"), Json({0, 1}));
    }
  }

  // ZeRO over a data-parallel group of one rank is the plain plan.
  void zeroWithoutDataParallelismIsThePlainPlan() {
    Plan plain = generate("gpt-tiny", "tp=2"), zero = generate("gpt-tiny", "tp=2,zero=3");
    for (size_t i = 0; i < plain.devices.size(); ++i)
      QCOMPARE(planToJson(zero).at("devices").at(i), planToJson(plain).at("devices").at(i));
  }

  // ZeRO-3 keeps only the rank's shard of parameters and optimizer state.
  void zeroShardsAlongDimZeroWithinTheTpShard() {
    Plan p = generate("gpt-tiny", "dp=2,tp=2,zero=3");
    const Device& d = p.devices[3];  // dp 1, tp 1
    const Lineage& w = d.lineage.at(d.graph.findValue("layers.0.mlp.w1.weight"));
    QCOMPARE(w.box.ranges.at(0), (std::pair<int64_t, int64_t>{96, 128}));  // rows 64..128 (tp 1), upper half
    const Lineage& m = d.lineage.at(d.graph.findValue("layers.0.mlp.w2.weight.m"));
    QCOMPARE(m.box.ranges.at(0), (std::pair<int64_t, int64_t>{32, 64}));  // w2 is tp-sharded on dim 1
    QCOMPARE(m.box.ranges.at(1), (std::pair<int64_t, int64_t>{64, 128}));
  }

  // Sequence parallelism over a tp group of one rank is the plain plan.
  void sequenceParallelWithoutTpIsThePlainPlan() {
    Plan plain = generate("gpt-tiny", "dp=2"), sp = generate("gpt-tiny", "dp=2,sp");
    for (size_t i = 0; i < plain.devices.size(); ++i)
      QCOMPARE(planToJson(sp).at("devices").at(i), planToJson(plain).at("devices").at(i));
  }

  // Under sp the hidden state between layers is the rank's sequence shard; the norm output is all-gathered
  // before the column-parallel projections, and the norm weight's gradient is all-reduced over tp.
  void sequenceParallelShardsHiddenStatesAlongTheSequence() {
    Plan p = generate("gpt-tiny", "tp=2,sp");
    const Device& d = p.devices[1];
    const Lineage& h = d.lineage.at(d.graph.findValue("layers.0.out"));
    QCOMPARE(h.box.ranges.at(1), (std::pair<int64_t, int64_t>{4, 8}));  // seq 8, tp rank 1: positions 4..8
    const OpId ag = d.graph.findOp("layers.0.ffn_norm.out/ag");
    QVERIFY(ag != kNone);
    QCOMPARE(d.graph.ops[ag].attrs.at("dim"), Json(1));
    QVERIFY(d.graph.findOp("layers.0.mlp.w2.out/rs") != kNone);
    const OpId ar = d.graph.findOp("layers.0.ffn_norm.weight.grad/ar");
    QVERIFY(ar != kNone);
    QCOMPARE(d.graph.ops[ar].attrs.at("group"), Json({0, 1}));
  }

  // tp=4 over gpt-tiny's 2 kv heads: ranks 2 and 3 hold kv head 1 and sum their wk gradients.
  void kvHeadsAreReplicatedWhenTpExceedsThem() {
    Plan p = generate("gpt-tiny", "tp=4");
    const Device& d = p.devices[3];
    const Lineage& wk = d.lineage.at(d.graph.findValue("layers.0.attention.wk.weight"));
    QCOMPARE(wk.box.ranges.at(0), (std::pair<int64_t, int64_t>{16, 32}));  // head_dim 16, head 1
    const OpId ar = d.graph.findOp("layers.0.attention.wk.weight.grad/ar");
    QVERIFY(ar != kNone);
    QCOMPARE(d.graph.ops[ar].attrs.at("group"), Json({2, 3}));
  }

  void sequenceLengthMustBeDivisibleUnderSp() {
    parallel::GenerateOptions o;
    o.seq = 6;
    try {
      generatePlan(*models::findModel("gpt-tiny"), parseParallel("tp=4,sp"), o);
      QFAIL("no exception");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("sequence length"), e.what());
    }
  }

  // Context parallel, zig-zag: of 2cp = 4 sequence chunks (seq 8: 2 positions each), cp rank 0 holds chunks
  // 0 and 3, cp rank 1 chunks 1 and 2, as separate values; RoPE tables and query positions follow the
  // chunk, and each chunk's queries attend over the whole gathered sequence.
  void contextParallelChunksAreZigZag() {
    Plan p = generate("gpt-tiny", "cp=2", 2);
    using Range = std::pair<int64_t, int64_t>;
    auto seqBox = [&](int rank, const std::string& value) {
      const Device& d = p.devices.at(rank);
      return d.lineage.at(d.graph.findValue(value)).box.ranges.at(1);
    };
    QCOMPARE(seqBox(0, "tokens~c0"), (Range{0, 2}));
    QCOMPARE(seqBox(0, "tokens~c1"), (Range{6, 8}));
    QCOMPARE(seqBox(1, "tokens~c0"), (Range{2, 4}));
    QCOMPARE(seqBox(1, "tokens~c1"), (Range{4, 6}));
    const Device& d = p.devices.at(0);
    QCOMPARE(d.lineage.at(d.graph.findValue("rope.cos~c1")).box.ranges.at(0), (Range{6, 8}));
    const Op& core = d.graph.ops[d.graph.findOp("layers.0.attention.core.out~c1")];
    QCOMPARE(d.graph.values[core.inputs[1]].name, std::string("layers.0.attention.k_rot.gathered"));
    QCOMPARE(d.lineage.at(core.inputs[1]).box.ranges.at(1), (Range{0, 8}));
    QCOMPARE(d.graph.values[core.inputs[3]].name, std::string("rope.positions~c1"));
    QCOMPARE(d.graph.values[core.inputs[4]].name, std::string("rope.positions"));
  }

  // sp x cp: a rank's chunk (zig-zag) is sharded over tp outside the tensor-parallel blocks; the norm output
  // is all-gathered to the full chunk before the projections, and the cp attention core reads full chunks.
  void sequenceParallelShardsEachContextParallelChunk() {
    Plan p = generate("gpt-tiny", "tp=2,sp,cp=2", 2);
    using Range = std::pair<int64_t, int64_t>;
    const Device& d = p.devices.at(1);  // cp rank 0, tp rank 1: chunks 0 [0, 2) and 3 [6, 8)
    auto seqBox = [&](const std::string& value) {
      return d.lineage.at(d.graph.findValue(value)).box.ranges.at(1);
    };
    QCOMPARE(seqBox("layers.0.out~c0"), (Range{1, 2}));
    QCOMPARE(seqBox("layers.0.out~c1"), (Range{7, 8}));
    QCOMPARE(seqBox("layers.0.attention_norm.out~c1/ag"), (Range{6, 8}));
    const Op& core = d.graph.ops[d.graph.findOp("layers.0.attention.core.out~c1")];
    QCOMPARE(d.lineage.at(core.inputs[0]).box.ranges.at(1), (Range{6, 8}));  // q of the full chunk
    QCOMPARE(d.lineage.at(core.inputs[1]).box.ranges.at(1), (Range{0, 8}));  // all keys
    const OpId ar = d.graph.findOp("layers.0.ffn_norm.weight.grad.acc/ar");
    QVERIFY(ar != kNone);
    QCOMPARE(d.graph.ops[ar].attrs.at("group"), Json({0, 1}));
  }

  // cp with tp=4 over gpt-tiny's 2 kv heads: the gathered keys are this rank's replicated head, and each
  // chunk's dK contribution is a part over cp ranks, chunks and the head's replicas.
  void contextParallelCarriesReplicatedKvHeads() {
    Plan p = generate("gpt-tiny", "tp=4,cp=2", 2);
    const Device& d = p.devices.at(7);  // cp rank 1, tp rank 3: kv head 1, second of its two replicas
    const Lineage& k = d.lineage.at(d.graph.findValue("layers.0.attention.k_rot.gathered"));
    QCOMPARE(k.box.ranges.at(2), (std::pair<int64_t, int64_t>{1, 2}));
    const Lineage& dk = d.lineage.at(d.graph.findValue("layers.0.attention.k_rot.grad.chunk~c1"));
    QCOMPARE(dk.part, (2 * 1 + 1) * 2 + 1);
    QCOMPARE(dk.parts, 8);
    const Lineage& own = d.lineage.at(d.graph.findValue("layers.0.attention.k_rot.grad.half1/rs"));
    QCOMPARE(own.part, 1);
    QCOMPARE(own.parts, 2);
  }

  void deviceOpsCarryOriginAndScope() {
    Plan p = generate("gpt-tiny", "tp=2");
    const Graph& g = p.devices[1].graph;
    const OpId o = g.findOp("layers.1.mlp.w2.out");
    QVERIFY(o != kNone);
    QCOMPARE(g.ops[o].origin, std::string("layers.1.mlp.w2.out"));
    QCOMPARE(g.ops[o].scope, std::string("layers.1.mlp.w2"));
    const OpId lo = p.logical.findOp("layers.1.mlp.w2.out");
    QCOMPARE(p.logical.ops[lo].scope, g.ops[o].scope);
    // The row-parallel output is the second of two value parts.
    const Lineage& lin = p.devices[1].lineage.at(g.ops[o].outputs[0]);
    QCOMPARE(lin.part, 1);
    QCOMPARE(lin.parts, 2);
  }

  void jsonRoundTripIsLossless() {
    Plan p = generate("gpt-tiny", "dp=2,tp=2,pp=2,mb=2");
    const Json j = planToJson(p);
    QCOMPARE(planToJson(planFromJson(j)), j);
  }

  void impossibleCombinationsAreRejected_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<QString>("message");
    QTest::newRow("tp vs heads") << "llama3-8b"
                                 << "tp=3"
                                 << "does not divide";
    QTest::newRow("pp vs layers") << "gpt-tiny"
                                  << "pp=3"
                                  << "exceeds the number of layers";
    QTest::newRow("unknown key") << "mlp"
                                 << "dq=2"
                                 << "unknown key";
    QTest::newRow("bad number") << "mlp"
                                << "dp=two"
                                << "needs an integer";
    QTest::newRow("zero degree") << "mlp"
                                 << "tp=0"
                                 << "at least 1";
    QTest::newRow("zero stage") << "mlp"
                                << "zero=4"
                                << "ZeRO stage";
    QTest::newRow("mla heads vs tp") << "dsv3-16b"
                                     << "tp=32"
                                     << "does not divide";
    QTest::newRow("zero shard") << "mlp"
                                << "dp=3,zero=1"
                                << "not divisible by the data-parallel group";
    QTest::newRow("cp vs seq") << "gpt-tiny"
                               << "cp=3"
                               << "divisible by 2*cp";
    QTest::newRow("sp x cp vs seq chunk") << "gpt-tiny"
                                          << "tp=4,sp,cp=2"
                                          << "sequence chunk";
    QTest::newRow("ep vs dp") << "dsv3-16b"
                              << "dp=2,ep=4"
                              << "must divide dp";
    QTest::newRow("ep on a dense model") << "llama3-8b"
                                         << "dp=2,ep=2"
                                         << "needs a MoE model";
  }
  void impossibleCombinationsAreRejected() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    QFETCH(QString, message);
    try {
      generate(model.toStdString(), parallel.toStdString());
      QFAIL("no exception");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains(message), e.what());
    }
  }

  void zooHasTheRealConfigurations() {
    QCOMPARE(static_cast<int>(models::modelZoo().size()), 11);
    const models::ModelConfig* m = models::findModel("llama3-8b");
    QVERIFY(m);
    QCOMPARE(m->layers, 32);
    QCOMPARE(m->hidden, 4096);
    QCOMPARE(m->heads, 32);
    QCOMPARE(m->kvHeads, 8);
    QCOMPARE(m->ffn, 14336);
    QCOMPARE(m->vocab, 128256);
    QCOMPARE(models::findModel("dsv3-671b")->moe.routedExperts, 256);
    QVERIFY(models::findModel("gpt-5") == nullptr);
  }

  void parseAndPrintAgree() {
    auto s = parseParallel("dp=2,tp=2,pp=2,mb=2,schedule=gpipe");
    QCOMPARE(s.str(), std::string("dp=2,tp=2,pp=2,mb=2,schedule=gpipe"));
    QCOMPARE(parseParallel(s.str()).str(), s.str());
  }
};

QTEST_APPLESS_MAIN(TestGenerator)
#include "test_generator.moc"
