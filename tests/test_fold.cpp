// The replica fold checks a data-parallel axis of translates as a few replicas. Folded and unfolded runs
// must agree on the verdict, and a deviation on one replica of many (a constant, a group member, a peer)
// must be kept, found, and reported at the rank of the plan as given.
#include <QtTest>
#include <set>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/stage/fold.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

Plan generated(const std::string& model, const std::string& par, const std::string& inject = "",
               bool compact = false) {
  parallel::GenerateOptions o;
  o.layers = 2;
  o.inject = inject;
  o.compact = compact;
  return parallel::generatePlan(*models::findModel(model), parallel::parseParallel(par), o);
}

verify::Report run(const Plan& p, bool fold) {
  verify::Options o;
  o.jobs = 2;
  o.timeoutSeconds = 120;
  o.fold = fold;
  return verify::verifyPlan(p, o);
}

bool folded(const verify::Report& r) {
  for (const std::string& n : r.notes)
    if (n.rfind("replica fold:", 0) == 0) return true;
  return false;
}

std::set<int> failingRanks(const verify::Report& r) {
  std::set<int> ranks;
  for (size_t i = 0; i < r.results.size(); ++i)
    if (r.results[i].status == solver::Status::Failed && r.results[i].counterexample)
      for (const auto& d : r.results[i].counterexample->diffs)
        if (d.device != kNone) ranks.insert(d.device);
  return ranks;
}

// The dp all-reduce of one gradient with `rank` left out of its group: every other member reduces over
// one replica fewer, `rank` keeps its own gradient. Consistent across members, so the plan is valid.
bool dropGroupMember(Plan& plan, int rank) {
  for (Device& dev : plan.devices)
    for (Op& op : dev.graph.ops)
      if (op.kind == "all_reduce" && op.attrs.contains("group") &&
          op.attrs["group"].size() == plan.devices.size()) {
        const Json instance = op.attrs["instance"];
        for (Device& d : plan.devices)
          for (Op& o : d.graph.ops)
            if (o.kind == "all_reduce" && o.attrs.value("instance", Json()) == instance) {
              Json g = Json::array();
              for (const Json& r : o.attrs["group"])
                if (r.get<int>() != rank) g.push_back(r);
              if (d.rank == rank) {
                o.attrs.set("group", Json::array({rank}));
                o.attrs.set("instance", "dropped-member");
              } else {
                o.attrs.set("group", g);
              }
            }
        return true;
      }
  return false;
}

}  // namespace

class TestFold : public QObject {
  Q_OBJECT
 private slots:
  void correctPlansFoldAndVerify_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    for (const char* p : {"dp=8", "dp=8,tp=2", "dp=8,tp=2,pp=2,mb=2", "dp=8,tp=2,sp", "dp=8,cp=2"})
      QTest::newRow((std::string("llama-micro ") + p).c_str()) << "llama-micro" << p;
    QTest::newRow("gpt-micro dp=8 pp=2 mb=2") << "gpt-micro"
                                              << "dp=8,pp=2,mb=2";
    QTest::newRow("dsv3-micro dp=32 ep=2") << "dsv3-micro"
                                           << "dp=32,ep=2";
  }
  void correctPlansFoldAndVerify() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    const Plan plan = generated(model.toStdString(), parallel.toStdString());
    const verify::Report f = run(plan, true), u = run(plan, false);
    QCOMPARE(verify::verdictName(f.verdict), "equivalent");
    QCOMPARE(verify::verdictName(u.verdict), "equivalent");
    QVERIFY2(folded(f), "the fold was not applied");
    auto deviceOps = [](const verify::Report& r) {
      size_t n = 0;
      for (const auto& s : r.stages)
        n += s.parallelOps.size();
      return n;
    };
    QVERIFY(deviceOps(f) < deviceOps(u));
  }

  // Every catalog bug on a data-parallel axis of 8: the same verdict folded and unfolded, and every rank the
  // folded counterexample names is one the unfolded run also finds wrong or involved.
  void catalogBugsAgreeFoldedAndUnfolded_data() {
    QTest::addColumn<QString>("bug");
    for (const parallel::BugEntry& bug : parallel::bugCatalog())
      if (bug.parallel.find("dp=2") != std::string::npos)
        QTest::newRow(bug.id.c_str()) << QString::fromStdString(bug.id);
  }
  void catalogBugsAgreeFoldedAndUnfolded() {
    QFETCH(QString, bug);
    const parallel::BugEntry& entry = *parallel::findBug(bug.toStdString());
    std::string par = entry.parallel;
    par.replace(par.find("dp=2"), 4, "dp=8");
    Plan plan, compact;
    try {
      plan = generated(entry.model, par, entry.id);
      compact = generated(entry.model, par, entry.id, true);
    } catch (const std::invalid_argument&) {
      QSKIP("the bug needs dp=2 exactly");
    }
    // Where the fold does not apply (ZeRO shards) folded and unfolded are one and the same run.
    if (!stage::foldReplicas(plan).folded) QSKIP("the replica fold does not apply to this plan");
    const verify::Report f = run(plan, true), u = run(plan, false), c = run(compact, true);
    QCOMPARE(verify::verdictName(c.verdict), verify::verdictName(u.verdict));
    QCOMPARE(verify::verdictName(f.verdict), verify::verdictName(u.verdict));
  }

  // The fold must apply to most of those plans, or the agreement above says little.
  void catalogPlansAtDp8Fold() {
    int foldedRuns = 0;
    for (const char* id : {"tv01-allreduce-missing", "tv05-fused-reduction-missing", "tv09-eps-several-ranks",
                           "tv14-early-grad-reduce", "rw01-grad-reduce-wrong-group", "rw02-grad-scaled-by-dp",
                           "rw03-loss-local-token-count"}) {
      const parallel::BugEntry& entry = *parallel::findBug(id);
      std::string par = entry.parallel;
      par.replace(par.find("dp=2"), 4, "dp=8");
      foldedRuns += folded(run(generated(entry.model, par, entry.id, true), true));
    }
    QVERIFY(foldedRuns >= 5);
  }

  void oneDeviatingReplicaOf64IsKeptAndFound() {
    const Plan plan = generated("llama-micro", "dp=64", "tv07-eps@layer=1,rank=45");
    const verify::Report f = run(plan, true);
    QCOMPARE(verify::verdictName(f.verdict), "not_equivalent");
    QVERIFY(folded(f));
    QVERIFY2(failingRanks(f) == std::set<int>{45},
             "the counterexample must name rank 45 of the plan as given");
  }

  // What a view may fold: every replica of rank 45's line stands for its template except rank 45 itself; a
  // line of two replicas that differ stands for nothing but itself.
  void replicaTranslatesSetTheDeviantApart() {
    const Plan plan = generated("llama-micro", "dp=64", "tv07-eps@layer=1,rank=45");
    const stage::ReplicaTranslates t = stage::replicaTranslates(plan);
    QCOMPARE(t.templateOf.size(), plan.devices.size());
    const int deviant = plan.deviceIndex(45);
    QCOMPARE(t.templateOf[static_cast<size_t>(deviant)], deviant);
    int standing = 0;
    for (size_t d = 0; d < plan.devices.size(); ++d)
      standing += t.templateOf[d] != static_cast<int>(d);
    QCOMPARE(standing, static_cast<int>(plan.devices.size()) - 2);  // all but the template and the deviant

    const Plan two = generated("llama-micro", "dp=2", "tv07-eps@layer=1,rank=1");
    const stage::ReplicaTranslates u = stage::replicaTranslates(two);
    for (size_t d = 0; d < two.devices.size(); ++d)
      QCOMPARE(u.templateOf[d], static_cast<int>(d));
    QVERIFY(!u.why.empty());
  }

  void wrongGroupMemberOnOneReplica() {
    Plan plan = generated("llama-micro", "dp=8");
    QVERIFY(dropGroupMember(plan, 5));
    const verify::Report f = run(plan, true), u = run(plan, false);
    QCOMPARE(verify::verdictName(u.verdict), "not_equivalent");
    QCOMPARE(verify::verdictName(f.verdict), "not_equivalent");
  }

  void wrongPeerOnOneReplica() {
    // Pipeline peers of two replicas crossed: each next stage receives the other replica's activations.
    const Plan plan = generated("llama-micro", "dp=8,pp=2,mb=2", "tv06-pp-wrong-peer");
    const verify::Report f = run(plan, true), u = run(plan, false);
    QCOMPARE(verify::verdictName(f.verdict), verify::verdictName(u.verdict));
    QVERIFY(f.verdict != verify::Verdict::Equivalent);
  }

  // The compact form stands for the explicit plan: written out, every implied replica is the device the
  // generator builds (collective instance names aside, which only need to be unique per call).
  void compactPlanExpandsToTheExplicitOne() {
    const Plan explicitPlan = generated("llama-micro", "dp=8,tp=2,pp=2,mb=2");
    const Plan compact = generated("llama-micro", "dp=8,tp=2,pp=2,mb=2", "", true);
    QVERIFY(compact.replicas.has_value());
    QCOMPARE(compact.devices.size(), explicitPlan.devices.size() / 4);
    const Plan expanded = stage::expandReplicas(compact);
    QCOMPARE(expanded.devices.size(), explicitPlan.devices.size());
    for (size_t d = 0; d < expanded.devices.size(); ++d) {
      const Device& x = expanded.devices[d];
      const Device& y = explicitPlan.devices[d];
      QCOMPARE(x.rank, y.rank);
      QVERIFY(x.coord == y.coord);
      QVERIFY2(x.lineage == y.lineage, qPrintable(QString("lineage of rank %1").arg(x.rank)));
      QCOMPARE(x.graph.ops.size(), y.graph.ops.size());
      for (size_t o = 0; o < x.graph.ops.size(); ++o) {
        Json a = x.graph.ops[o].attrs, b = y.graph.ops[o].attrs;
        if (a.is_object()) a.erase("instance");
        if (b.is_object()) b.erase("instance");
        QVERIFY2(a == b,
                 qPrintable(QString::fromStdString("rank " + std::to_string(x.rank) + " op " +
                                                   x.graph.ops[o].id + ": " + a.dump() + " vs " + b.dump())));
      }
    }
    const verify::Report r = run(compact, false);  // checked replica by replica
    QCOMPARE(verify::verdictName(r.verdict), "equivalent");
  }

  void compactFarRankBugIsStatedFoundAndNamed() {
    const Plan compact = generated("llama-micro", "dp=64", "tv07-eps@layer=1,rank=45", true);
    QVERIFY(compact.replicas.has_value());
    QVERIFY(compact.deviceByRank(45) != nullptr);
    const verify::Report r = run(compact, true);
    QCOMPARE(verify::verdictName(r.verdict), "not_equivalent");
    QVERIFY(folded(r));
    QVERIFY(failingRanks(r) == std::set<int>{45});
  }

  // A constant equal to the size of a group over the replicas (here avg over 8, then times 8: the sum, a
  // correct plan) is kept apart from the folded group: the folded check of its stage fails, and because
  // that stage holds the constant the plan is checked again unfolded, where it holds. The wrong twin
  // (times 2) is found either way (tests/fixtures/soundness/fold-avg-times-*.json).
  void hardCodedReplicaCountIsCheckedUnfolded() {
    const std::string dir = std::string(PARAPROOF_FIXTURES) + "/soundness/";
    const Plan right = loadPlan(dir + "fold-avg-times-replica-count.json");
    const stage::FoldedPlan fp = stage::foldReplicas(right);
    QVERIFY(fp.folded);
    QCOMPARE(fp.countsMet, (std::set<int64_t>{8}));
    const verify::Report r = run(right, true);
    QCOMPARE(verify::verdictName(r.verdict), "equivalent");
    QVERIFY(!r.notes.empty() && r.notes.front().rfind("checked unfolded:", 0) == 0);
    const verify::Report w = run(loadPlan(dir + "fold-avg-times-folded-count.json"), true);
    QCOMPARE(verify::verdictName(w.verdict), "not_equivalent");
  }

  // Size points (docs/soundness.md): the fold is checked at two replica counts, 2 and 4 of 16, whatever
  // constants the plan holds. A wrong hard-coded count (0.5 three times: 1/8 where the model's mean over
  // 16 replicas needs 1/16) is right at one folded count at most.
  void foldIsCheckedAtTwoReplicaCounts() {
    const std::string dir = std::string(PARAPROOF_FIXTURES) + "/soundness/";
    const Plan wrong = loadPlan(dir + "kind4-three-constants-replica-fold.json");
    const stage::FoldedPlan first = stage::foldReplicas(wrong, "dp", 0);
    const stage::FoldedPlan second = stage::foldReplicas(wrong, "dp", 1);
    QVERIFY(first.folded && second.folded);
    QVERIFY(first.count < second.count);
    QCOMPARE(verify::verdictName(run(wrong, true).verdict), "not_equivalent");
    const verify::Report right = run(loadPlan(dir + "kind4-three-constants-replica-fold-correct.json"), true);
    QCOMPARE(verify::verdictName(right.verdict), "equivalent");
  }

  // Condition D: dividing by the square of a run-time count of the replicas (an all-reduce sum of ones)
  // depends on the count through more powers than two counts pin down: the plan is checked unfolded. The
  // same count used once keeps the fold.
  void countUsedSquaredIsCheckedUnfolded() {
    const std::string dir = std::string(PARAPROOF_FIXTURES) + "/soundness/";
    const verify::Report squared = run(loadPlan(dir + "kind7-runtime-count-squared-replica-fold.json"), true);
    QCOMPARE(verify::verdictName(squared.verdict), "not_equivalent");
    QVERIFY(!squared.notes.empty() && squared.notes.front().find("condition D") != std::string::npos);
    const verify::Report once =
        run(loadPlan(dir + "kind7-runtime-count-squared-replica-fold-correct.json"), true);
    QCOMPARE(verify::verdictName(once.verdict), "equivalent");
    QVERIFY(folded(once));
  }

  void foldKeepsTheRanksOfThePlanAsGiven() {
    const Plan plan = generated("llama-micro", "dp=16,tp=2", "tv07-eps@layer=1,rank=13");
    const stage::FoldedPlan fp = stage::foldReplicas(plan);
    QVERIFY(fp.folded);
    QCOMPARE(fp.originalRank.size(), fp.plan.devices.size());
    QVERIFY(std::find(fp.originalRank.begin(), fp.originalRank.end(), 13) != fp.originalRank.end());
    QVERIFY(fp.plan.devices.size() < plan.devices.size());
  }
};

QTEST_GUILESS_MAIN(TestFold)
#include "test_fold.moc"
