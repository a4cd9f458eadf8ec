// The bug catalog: every entry injects into a plan where it applies, the mutated plan stays valid (so
// verification, not validation, must catch it), and the mutation lands at the requested place.
#include <QtTest>

#include <set>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/plan_diff.h"
#include "core/plan/validate.h"

using namespace paraproof;
using namespace paraproof::parallel;

namespace {

Plan makePlan(const std::string& model, const std::string& par, const std::string& inject = "") {
  GenerateOptions o;
  o.layers = model.starts_with("llama") ? 4 : 2;
  o.inject = inject;
  return generatePlan(*models::findModel(model), parseParallel(par), o);
}

std::string problems(const Plan& p) {
  std::string s;
  for (const Diagnostic& d : validatePlan(p))
    s += d.str() + "\n";
  return s;
}

}  // namespace

class TestBugs : public QObject {
  Q_OBJECT
 private slots:
  void catalogCoversTrainVerifyAndRealWorldClasses() {
    std::set<std::string> ids;
    int tv = 0;
    for (const BugEntry& b : bugCatalog()) {
      QVERIFY2(ids.insert(b.id).second, b.id.c_str());
      QVERIFY(!b.cls.empty() && !b.description.empty() && !b.source.empty());
      QVERIFY(models::findModel(b.model) != nullptr);
      parseParallel(b.parallel);  // throws if malformed
      tv += b.id.starts_with("tv");
    }
    QCOMPARE(tv, 14);  // all 14 TrainVerify cases
    QVERIFY(ids.size() >= 20);
  }

  void everyEntryInjectsIntoItsOwnPlanAndStaysValid_data() {
    QTest::addColumn<QString>("id");
    for (const BugEntry& b : bugCatalog())
      QTest::newRow(b.id.c_str()) << QString::fromStdString(b.id);
  }
  void everyEntryInjectsIntoItsOwnPlanAndStaysValid() {
    QFETCH(QString, id);
    const BugEntry& b = *findBug(id.toStdString());
    Plan clean = makePlan(b.model, b.parallel);
    Plan buggy = makePlan(b.model, b.parallel, b.id);
    const std::string errs = problems(buggy);
    QVERIFY2(errs.empty(), errs.c_str());
    QVERIFY(planToJson(clean) != planToJson(buggy));
    const Json& inj = buggy.metadata.at("injected");
    QCOMPARE(inj.at("id").get<std::string>(), b.id);
    QVERIFY(!inj.at("ops").empty());
    for (const Json& o : inj.at("ops")) {
      const Device* d = buggy.deviceByRank(o.at("rank").get<int>());
      QVERIFY(d && d->graph.findOp(o.at("op").get<std::string>()) != kNone);
    }
    // The plan diff (paraproof diff, the inspector's compare mode) lists every op the injector changed.
    std::set<std::pair<int, std::string>> listed;
    for (const PlanElementDiff& e : diffPlans(clean, buggy).elements) {
      listed.insert({e.rank, e.name()});
      if (e.element == PlanElementDiff::Element::Output && !e.a.empty()) {  // an output no longer given
        const Graph& g = clean.deviceByRank(e.rank)->graph;
        listed.insert({e.rank, g.ops[static_cast<size_t>(g.values[g.findValue(e.a)].producer)].id});
      }
    }
    for (const Json& o : inj.at("ops")) {
      const std::pair<int, std::string> op{o.at("rank").get<int>(), o.at("op").get<std::string>()};
      QVERIFY2(listed.count(op), (b.id + ": rank " + std::to_string(op.first) + " op " + op.second).c_str());
    }
  }

  void injectionLandsAtTheRequestedPlace() {
    Plan p = makePlan("llama3-8b", "dp=2,tp=2,pp=2,mb=2", "tv07-eps@layer=3,rank=5,mb=1");
    const Json& inj = p.metadata.at("injected");
    QCOMPARE(inj.at("layer").get<int>(), 3);
    QCOMPARE(inj.at("rank").get<int>(), 5);
    QCOMPARE(inj.at("mb").get<int>(), 1);
    const Graph& g = p.deviceByRank(5)->graph;
    QCOMPARE(g.ops[g.findOp("layers.3.attention_norm.out#1")].attrs.at("eps").get<double>(), 1e-3);
    // Every other rank and micro-batch keeps the model's eps.
    const Graph& other = p.deviceByRank(4)->graph;
    QCOMPARE(other.ops[other.findOp("layers.3.attention_norm.out#1")].attrs.at("eps").get<double>(), 1e-5);
    QCOMPARE(g.ops[g.findOp("layers.3.attention_norm.out#0")].attrs.at("eps").get<double>(), 1e-5);
  }

  // What the inspector and the failure report say a plan breaks: the injector's record, a hand-written entry,
  // or a fixture's expectation; nothing for a correct plan.
  void theInjectedBugIsReadBackFromTheMetadata() {
    Plan p = makePlan("llama3-8b", "dp=2,tp=2,pp=2,mb=2", "tv07-eps@layer=3,rank=5,mb=1");
    QCOMPARE(injectedBugNote(p.metadata), "tv07-eps: " + findBug("tv07-eps")->description);
    QCOMPARE(injectedBugNote(makePlan("llama3-8b", "dp=2", "").metadata), std::string());
    QCOMPARE(injectedBugNote(Json{{"bug", "eps 1e-3 on rank 1"}}), std::string("eps 1e-3 on rank 1"));
    QCOMPARE(injectedBugNote(Json{{"inject", {{"id", "x"}, {"description", "why"}}}}), std::string("x: why"));
    QCOMPARE(injectedBugNote(Json{{"expect", {{"verdict", "not_equivalent"}, {"why", "no all-reduce"}}}}),
             std::string("no all-reduce"));
    QCOMPARE(injectedBugNote(Json{{"expect", {{"verdict", "equivalent"}, {"why", "fine"}}}}), std::string());
    QCOMPARE(injectedBugNote(Json()), std::string());
  }

  void allTrainVerifyCasesApplyToTheReferencePlan_data() {
    QTest::addColumn<QString>("id");
    for (const BugEntry& b : bugCatalog())
      if (b.id.starts_with("tv")) QTest::newRow(b.id.c_str()) << QString::fromStdString(b.id);
  }
  void allTrainVerifyCasesApplyToTheReferencePlan() {
    QFETCH(QString, id);
    // tv04 replaces an all-gather of activations: the reference plan has one only with sequence parallelism.
    const bool sp = parseParallel(findBug(id.toStdString())->parallel).sp;
    Plan p = makePlan("llama3-8b", sp ? "dp=2,tp=2,pp=2,mb=2,sp" : "dp=2,tp=2,pp=2,mb=2",
                      id.toStdString() + "@layer=2,mb=1");
    const std::string errs = problems(p);
    QVERIFY2(errs.empty(), errs.c_str());
  }

  void misplacedInjectionsAreRejected_data() {
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<QString>("inject");
    QTest::addColumn<QString>("message");
    QTest::newRow("layer on another stage") << "dp=2,tp=2,pp=2,mb=2"
                                            << "tv07-eps@layer=3,rank=0"
                                            << "rank 0 does not hold layer 3: pipeline stage 1 of 2 does, "
                                               "on ranks 4-7";
    QTest::newRow("needs sp") << "dp=2,tp=2"
                              << "tv04-allgather-as-allreduce"
                              << "needs sp";
    QTest::newRow("needs tp") << "dp=2"
                              << "tv01-allreduce-missing"
                              << "needs tp >= 2";
    QTest::newRow("unknown bug") << "dp=2"
                                 << "tv99"
                                 << "unknown bug";
    QTest::newRow("mb out of range") << "dp=2,mb=2"
                                     << "tv07-eps@mb=2"
                                     << "micro-batches";
    QTest::newRow("rank outside the plan") << "dp=2,tp=2,pp=2,mb=2"
                                           << "tv07-eps@layer=1,rank=8"
                                           << "rank";
    QTest::newRow("bad key") << "dp=2"
                             << "tv07-eps@row=1"
                             << "unknown key";
  }
  void misplacedInjectionsAreRejected() {
    QFETCH(QString, parallel);
    QFETCH(QString, inject);
    QFETCH(QString, message);
    // A BadInjection, in the explicit form and the compact one alike: the compact generator does not retry
    // such a request on the explicit plan (for llama3-405b that costs a minute and 10 GB to fail the same).
    for (const bool compact : {false, true}) {
      GenerateOptions o;
      o.layers = 4;
      o.inject = inject.toStdString();
      o.compact = compact;
      try {
        generatePlan(*models::findModel("llama3-8b"), parseParallel(parallel.toStdString()), o);
        QFAIL("no exception");
      } catch (const BadInjection& e) {
        QVERIFY2(QString(e.what()).contains(message), e.what());
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestBugs)
#include "test_bugs.moc"
