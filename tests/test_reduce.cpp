// Shape reduction (core/stage/reduce.cpp): what crosses devices scales as one dimension, the reduced plan
// is valid in its own right, counts keep their relation to the plan's constants, and lowering never builds a
// tensor whose elements disagree with its type.
#include <QtTest>

#include "core/ir/halves.h"
#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/stage/count_degree.h"
#include "core/stage/fold.h"
#include "core/stage/lower.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/reduce.h"
#include "core/stage/stage.h"

using namespace paraproof;

namespace {

Plan fixture(const std::string& name) {
  return loadPlan(std::string(PARAPROOF_FIXTURES) + "/soundness/" + name + ".json");
}

const Value& value(const Graph& g, const std::string& name) {
  ValueId v = g.findValue(name);
  if (v == kNone) throw std::runtime_error("no value " + name);
  return g.values[v];
}

const Op& op(const Graph& g, const std::string& id) {
  OpId o = g.findOp(id);
  if (o == kNone) throw std::runtime_error("no op " + id);
  return g.ops[o];
}

}  // namespace

class TestReduce : public QObject {
  Q_OBJECT

 private slots:
  void rootArgumentsOverTwoPowersNeedFullSize() {
    // rmsnorm(x[16]) against the device's rsqrt(sum(x^2) / sum(ones[8]) + eps): in the norm's class the
    // logical root's argument carries 1/t, the device's none (ones is another class), while both sides are
    // otherwise t^0. Two applications of one uninterpreted function may be one term at one extent and two
    // at another, which no number of points rules out (condition D): the stage needs full size.
    const Plan p = fixture("kind6-count-of-other-class-inside-root");
    const std::vector<stage::Stage> stages = stage::cutStages(p);
    QCOMPARE(stages.size(), size_t{1});
    const stage::AxisPredicate inClass = [&](size_t g, ValueId v, int) {
      const std::string& n = (g == 0 ? p.logical : p.devices[g - 1].graph).values[v].name;
      return n == "x" || n == "w" || n == "y" || n == "sq" || n == "xr";
    };
    QCOMPARE(stage::classCountsNeeded(p, stages[0], inClass), 3);
  }

  void collectiveMembersSeeEachOthersCounts() {
    // Condition D's dataflow iterates to a fixpoint across devices: rank 0's all-reduce must see what rank 1
    // contributes though rank 1 comes later in the stage. Rank 1 adds sum(ones[4]), a count of the class
    // (ones' axis), to rank 0's sum(y): rank 0's result carries t^0 and t^1, the logical sum(y) t^0 only,
    // so two extents are needed. A single pass would give rank 0 its own operand's t^0 alone.
    const Plan p = planFromJson(Json::parse(R"({
      "format": "paraproof-plan", "version": 1, "name": "count-through-a-collective",
      "mesh": {"axes": ["dp"], "shape": [2]},
      "logical": {"inputs": [{"name": "y", "shape": [8], "dtype": "f32"}],
                  "ops": [{"id": "s", "op": "sum", "inputs": ["y"], "outputs": ["out"]}],
                  "outputs": ["out"]},
      "devices": [
        {"rank": 0, "coord": [0], "inputs": [{"name": "y", "shape": [8], "dtype": "f32"}],
         "ops": [{"id": "s", "op": "sum", "inputs": ["y"], "outputs": ["ls"], "origin": "s"},
                 {"id": "ar", "op": "all_reduce", "inputs": ["ls"], "outputs": ["out"],
                  "attrs": {"group": [0, 1], "instance": "i", "reduce": "sum"}}],
         "outputs": ["out"], "lineage": {"y": {"tensor": "y"}, "out": {"tensor": "out"}}},
        {"rank": 1, "coord": [1], "inputs": [],
         "ops": [{"id": "ones", "op": "constant", "inputs": [], "outputs": ["ones"],
                  "attrs": {"shape": [4], "value": 1}},
                 {"id": "cnt", "op": "sum", "inputs": ["ones"], "outputs": ["cnt"]},
                 {"id": "ar", "op": "all_reduce", "inputs": ["cnt"], "outputs": ["junk"],
                  "attrs": {"group": [0, 1], "instance": "i", "reduce": "sum"}}],
         "outputs": [], "lineage": {}}]})"));
    const std::vector<stage::Stage> stages = stage::cutStages(p);
    const auto holds = [&](const stage::Stage& s) {
      return std::any_of(s.deviceOps.begin(), s.deviceOps.end(),
                         [](const stage::DeviceOp& d) { return d.device == 1; });
    };
    const auto it = std::find_if(stages.begin(), stages.end(), holds);
    QVERIFY(it != stages.end());
    QVERIFY(std::any_of(it->checked.begin(), it->checked.end(),
                        [](const stage::DeviceValue& c) { return c.device == 0; }));
    const stage::AxisPredicate inClass = [&](size_t g, ValueId v, int) {
      return g == 2 && p.devices[1].graph.values[v].name == "ones";
    };
    QCOMPARE(stage::classCountsNeeded(p, *it, inClass), 2);
  }

  void sendAndRecvScaleTogether() {
    // The split at 6 keeps the received axis at a factor of 2; the sent axis must follow it.
    stage::ReducedPlan r = stage::reducePlan(fixture("p2p-recv-split-uneven"));
    QVERIFY(r.reduced);
    const Shape& sent = value(r.plan.devices[0].graph, "x").type.shape;
    const Shape& received = value(r.plan.devices[1].graph, "x").type.shape;
    QCOMPARE(sent, received);
    QCOMPARE(sent, (Shape{8}));
    QCOMPARE(op(r.plan.devices[1].graph, "recv_x").attrs.at("shape").get<Shape>(), received);
  }

  void reductionKeepsTheCut() {
    // docs/soundness.md, "Reduction keeps the cut": the second reduction and the full-size re-check reuse
    // the first reduction's stages, so both reductions must cut every plan as the unreduced plan is cut.
    auto sameCut = [](const std::vector<stage::Stage>& a, const std::vector<stage::Stage>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].communication != b[i].communication || a[i].logicalOps != b[i].logicalOps ||
            a[i].deviceOps != b[i].deviceOps || a[i].checked != b[i].checked)
          return false;
      return true;
    };
    std::vector<std::pair<std::string, Plan>> plans;
    for (const char* dir : {"/soundness", "/plans"}) {
      QDirIterator it(QString(PARAPROOF_FIXTURES) + dir, {"*.json"});
      while (it.hasNext()) {
        const std::string path = it.next().toStdString();
        Plan p = loadPlan(path);
        if (validatePlan(p).empty() && !p.replicas && !p.microbatches) plans.emplace_back(path, std::move(p));
      }
    }
    parallel::GenerateOptions o;
    o.layers = 2;
    o.compact = false;
    for (const auto& [model, par] : {std::pair{"llama-micro", "dp=2,tp=2,pp=2,mb=2,sp"},
                                     std::pair{"dsv3-micro", "dp=2,tp=2,ep=2,zero=1"},
                                     std::pair{"gpt-micro", "dp=2,tp=2,pp=2,mb=2,cp=2"}})
      plans.emplace_back(std::string(model) + " " + par,
                         parallel::generatePlan(*models::findModel(model), parallel::parseParallel(par), o));
    int reduced = 0;
    for (const auto& [name, p] : plans) {
      const std::vector<stage::Stage> unreduced = stage::cutStages(p);
      const stage::ReducedPlan first = stage::reducePlan(p, 0);
      if (!first.reduced) continue;
      ++reduced;
      QVERIFY2(sameCut(stage::cutStages(first.plan), unreduced), name.c_str());
      const stage::ReducedPlan second = stage::reducePlan(p, 1);
      QVERIFY2(sameCut(stage::cutStages(second.plan), unreduced), name.c_str());
      // The same argument leaves value parts and the communication order out of a reduced plan's
      // validation (validateReducedPlan): the whole validation finds nothing either.
      QVERIFY2(validatePlan(first.plan).empty() && validatePlan(second.plan).empty(), name.c_str());
    }
    QVERIFY(reduced >= 20);
  }

  // A plan of 20,000 ops or more is copied, folded and reduced with its devices on two threads
  // (core/ir/halves.h): what they build is what one thread builds, byte for byte and parameter for parameter
  // (the replica fold moves its kept devices in two halves too).
  void twoThreadsBuildWhatOneBuilds() {
    parallel::GenerateOptions o;
    o.layers = 32;
    const Plan plan = parallel::generatePlan(*models::findModel("llama3-8b"),
                                             parallel::parseParallel("dp=4,tp=2,pp=2,mb=4"), o);
    QVERIFY(largePlan(plan));
    bool everyStepLarge = true;  // so that every step took two threads
    auto build = [&](bool two) {
      twoHalvesAllowed = two;
      const stage::FoldedPlan replicas = stage::foldReplicas(plan);
      const stage::FoldedPlan copies = stage::foldMicroBatches(replicas.plan, 0, &replicas.parameter);
      const stage::ReducedPlan reduced = stage::reducePlan(copies.plan);
      twoHalvesAllowed = true;
      everyStepLarge = everyStepLarge && largePlan(replicas.plan) && largePlan(copies.plan);
      const stage::FoldParameter& t = copies.parameter;
      const stage::FoldParameter& c = copies.carried;
      const stage::FoldParameter& r = replicas.parameter;
      return std::tuple{replicas.folded && copies.folded && reduced.reduced,
                        std::tuple{r.logicalAxes, r.sums, r.averages, r.varying, replicas.originalRank},
                        planToJson(copyPlan(plan)).dump(),
                        planToJson(replicas.plan).dump(),
                        planToJson(copies.plan).dump(),
                        planToJson(reduced.plan).dump(),
                        std::tuple{t.logicalAxes, t.sums, t.averages, t.varying},
                        std::tuple{c.logicalAxes, c.sums, c.averages, c.varying}};
    };
    const auto two = build(true), one = build(false);
    QVERIFY(everyStepLarge);
    QVERIFY(std::get<0>(two));
    QVERIFY(std::get<2>(two) == planToJson(plan).dump());
    QVERIFY(!std::get<1>(std::get<1>(two)).empty());  // the replica fold's sums
    QVERIFY(!std::get<1>(std::get<6>(two)).empty());  // accumulation chains over the copies
    QVERIFY(!std::get<1>(std::get<7>(two)).empty());  // the replica fold's sums, carried
    QVERIFY(two == one);
  }

  void splitsAlikeButTheirOutermostClassShrinkTheirInnerAxes() {
    // Condition 5: q and p (one flat class) split as [2,8] into two heads classes over one head dim; the
    // splits differ only in their outermost class, so the head dim shrinks (the heads of every layer of a
    // model over one head dim). A [4,4] split of the same class among them keeps the inner axes whole.
    const stage::ReducedPlan alike = stage::reducePlan(fixture("kind3-heads-split-alike"));
    QCOMPARE(value(alike.plan.logical, "rq").type.shape, (Shape{2, 2}));
    QCOMPARE(value(alike.plan.logical, "rp").type.shape, (Shape{2, 2}));
    const stage::ReducedPlan other = stage::reducePlan(fixture("kind3-heads-split-alike-one-other-order"));
    QCOMPARE(value(other.plan.logical, "rq").type.shape, (Shape{2, 8}));
    QCOMPARE(value(other.plan.devices[0].graph, "p44").type.shape, (Shape{4, 4}));
  }

  void reducedPlansAreValid() {
    for (const char* name : {"p2p-recv-whole", "p2p-recv-slice-of-sent", "p2p-recv-split-uneven",
                             "count-hardcoded-reduced-extent", "attention-explicit-scale-full"}) {
      stage::ReducedPlan r = stage::reducePlan(fixture(name));
      QVERIFY2(validatePlan(r.plan).empty(), name);
    }
  }

  void countLikeConstantsIncludeProductsOfThree() {
    // sum * 0.5 / 3 / 5 stands for a count of 30: a product of three constants, which reduction keeps apart
    // from its reduced counts; the folds keep to pairs.
    std::vector<Op> ops(3);
    ops[0].kind = "scale", ops[0].attrs = Json{{"factor", 0.5}};
    ops[1].kind = "div_scalar", ops[1].attrs = Json{{"divisor", 3}};
    ops[2].kind = "div_scalar", ops[2].attrs = Json{{"divisor", 5}};
    std::vector<const Op*> refs{&ops[0], &ops[1], &ops[2]};
    const std::set<int64_t> pairs = stage::countLikeConstants(refs, true);
    const std::set<int64_t> triples = stage::countLikeConstants(refs, true, true, true);
    QVERIFY(pairs.count(15) && pairs.count(6) && !pairs.count(30));
    QVERIFY(triples.count(30) && triples.count(45) && triples.count(15));
    QVERIFY(!triples.count(60));  // four factors: 2 * 2 * 3 * 5
  }

  void countEqualToAConstantKeepsItsFullExtent() {
    // sum(l) / 16 against mean + avg over dp=2: the extent 16 is the constant, so it is checked at 16.
    stage::ReducedPlan r = stage::reducePlan(fixture("mean-vs-hardcoded-count-div"));
    QCOMPARE(value(r.plan.logical, "l").type.shape, (Shape{16}));
    QCOMPARE(value(r.plan.devices[0].graph, "l").type.shape, (Shape{8}));
  }

  void reducedCountAvoidsTheConstants() {
    // mean * 2 over a vocabulary of 16: neither 2 nor 4 (2^2) nor 8 (2^3) may be the reduced vocabulary,
    // which leaves the full 16 (the batch of 4 split over dp=2 cannot shrink either).
    stage::ReducedPlan r = stage::reducePlan(fixture("count-hardcoded-reduced-extent"));
    int64_t vocab = value(r.plan.logical, "x").type.shape[1];
    QVERIFY2(vocab != 2 && vocab != 4 && vocab != 8, std::to_string(vocab).c_str());
    QCOMPARE(vocab, int64_t{16});
  }

  void defaultAttentionScaleIsFrozenAtTheFullHeadDim() {
    stage::ReducedPlan r = stage::reducePlan(fixture("attention-explicit-scale-full"));
    QVERIFY(r.reduced);
    QVERIFY(value(r.plan.logical, "q").type.shape[3] < 4);
    QCOMPARE(op(r.plan.logical, "attn").attrs.at("scale").get<double>(), 0.5);
    QCOMPARE(op(r.plan.devices[0].graph, "attn").attrs.at("scale").get<double>(), 0.5);
  }

  void recvOfAnotherTypeIsAnInternalErrorNotATensor() {
    // Bypass validation: the recv declares 4 elements, the send sends 8.
    Plan p = fixture("p2p-recv-whole");
    Graph& g = p.devices[1].graph;
    ValueId x = g.findValue("x");
    g.values[x].type.shape = {4};
    g.ops[g.findOp("recv_x")].attrs.set("shape", Shape{4});
    std::vector<stage::Stage> stages = stage::cutStages(p);
    bool threw = false;
    for (const stage::Stage& s : stages) {
      try {
        stage::lowerStage(p, s);
      } catch (const stage::UnsupportedStage& e) {
        threw = std::string(e.what()).find("recv") != std::string::npos;
      }
    }
    QVERIFY(threw);
  }
};

QTEST_APPLESS_MAIN(TestReduce)
#include "test_reduce.moc"
