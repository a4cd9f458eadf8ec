// The micro-batch fold checks the n micro-batch copies of every device program as a few of them. Folded and
// unfolded runs must agree on the verdict; a bug on one far micro-batch must be kept, found and named with
// its own index; a constant that could stand for a micro-batch count must stop the fold.
#include <QtTest>
#include <set>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/stage/microbatch_fold.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

Plan generated(const std::string& model, const std::string& par, const std::string& inject = "") {
  parallel::GenerateOptions o;
  o.layers = 2;
  o.inject = inject;
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
    if (n.rfind("micro-batch fold:", 0) == 0) return true;
  return false;
}

// The device tensors the counterexamples name as wrong.
std::set<std::string> wrongTensors(const verify::Report& r) {
  std::set<std::string> out;
  for (const auto& res : r.results)
    if (res.status == solver::Status::Failed && res.counterexample)
      for (const auto& d : res.counterexample->diffs)
        out.insert(d.tensor);
  return out;
}

// The same parallelism with `mb` micro-batches (and a pipeline when the entry has none).
std::string withMicroBatches(std::string par, int mb) {
  const auto at = par.find("mb=");
  if (at != std::string::npos) {
    const auto end = par.find(',', at);
    par.replace(at, end == std::string::npos ? std::string::npos : end - at, "mb=" + std::to_string(mb));
  } else {
    par += (par.find("pp=") == std::string::npos ? ",pp=2" : "") + std::string(",mb=") + std::to_string(mb);
  }
  return par;
}

}  // namespace

class TestMicroBatchFold : public QObject {
  Q_OBJECT
 private slots:
  void correctPlansFoldAndVerify_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::newRow("llama-micro pp=2 mb=8") << "llama-micro"
                                           << "pp=2,mb=8";
    QTest::newRow("llama-micro dp=2 tp=2 pp=2 mb=8") << "llama-micro"
                                                     << "dp=2,tp=2,pp=2,mb=8";
    QTest::newRow("llama-micro pp=2 mb=8 gpipe") << "llama-micro"
                                                 << "pp=2,mb=8,schedule=gpipe";
    QTest::newRow("llama-micro dp=8 pp=2 mb=8 (both folds)") << "llama-micro"
                                                             << "dp=8,pp=2,mb=8";
    QTest::newRow("llama-micro tp=2 sp pp=2 mb=4") << "llama-micro"
                                                   << "tp=2,sp,pp=2,mb=4";
    QTest::newRow("gpt-micro pp=2 mb=4 (tied embedding)") << "gpt-micro"
                                                          << "pp=2,mb=4";
    QTest::newRow("llama-micro mb=4 (accumulation alone)") << "llama-micro"
                                                           << "dp=2,mb=4";
  }
  void correctPlansFoldAndVerify() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    const Plan plan = generated(model.toStdString(), parallel.toStdString());
    const verify::Report f = run(plan, true), u = run(plan, false);
    QCOMPARE(verify::verdictName(u.verdict), "equivalent");
    QCOMPARE(verify::verdictName(f.verdict), "equivalent");
    QVERIFY2(folded(f), "the fold was not applied");
    auto deviceOps = [](const verify::Report& r) {
      size_t n = 0;
      for (const auto& s : r.stages)
        n += s.parallelOps.size();
      return n;
    };
    QVERIFY(deviceOps(f) < deviceOps(u));
  }

  // Every catalog bug, at 8 micro-batches and on micro-batch 5 where the bug has a micro-batch: the same
  // verdict folded and unfolded, and a folded counterexample names only tensors the unfolded run also finds
  // wrong (the kept copies keep their names).
  void catalogBugsAgreeFoldedAndUnfolded_data() {
    QTest::addColumn<QString>("bug");
    for (const parallel::BugEntry& bug : parallel::bugCatalog())
      QTest::newRow(bug.id.c_str()) << QString::fromStdString(bug.id);
  }
  void catalogBugsAgreeFoldedAndUnfolded() {
    QFETCH(QString, bug);
    const parallel::BugEntry& entry = *parallel::findBug(bug.toStdString());
    const std::string par = withMicroBatches(entry.parallel, 8);
    Plan plan;
    try {
      plan = generated(entry.model, par, entry.id + "@mb=5");
    } catch (const std::invalid_argument&) {
      try {
        plan = generated(entry.model, par, entry.id);
      } catch (const std::invalid_argument& e) {
        QSKIP(e.what());
      }
    }
    const verify::Report f = run(plan, true), u = run(plan, false);
    QCOMPARE(verify::verdictName(f.verdict), verify::verdictName(u.verdict));
    const std::set<std::string> wf = wrongTensors(f), wu = wrongTensors(u);
    for (const std::string& t : wf)
      QVERIFY2(wu.count(t), qPrintable(QString::fromStdString("folded run names '" + t + "'")));
  }

  // The agreement above says little unless the fold applies to most of those plans.
  void catalogPlansAtMb8MostlyFold() {
    int plans = 0, foldedRuns = 0;
    for (const parallel::BugEntry& entry : parallel::bugCatalog()) {
      try {
        const Plan p = generated(entry.model, withMicroBatches(entry.parallel, 8), entry.id);
        ++plans;
        foldedRuns += !stage::foldMicroBatches(p).notes.empty() && stage::foldMicroBatches(p).folded;
      } catch (const std::invalid_argument&) {
      }
    }
    QVERIFY2(foldedRuns * 2 >= plans, qPrintable(QString("%1 of %2 folded").arg(foldedRuns).arg(plans)));
  }

  void farMicroBatchBugIsKeptFoundAndNamed() {
    const Plan plan = generated("llama-micro", "tp=2,pp=2,mb=16", "tv07-eps@layer=1,rank=3,mb=13");
    const verify::Report f = run(plan, true);
    QCOMPARE(verify::verdictName(f.verdict), "not_equivalent");
    QVERIFY(folded(f));
    const std::set<std::string> wrong = wrongTensors(f);
    QVERIFY(!wrong.empty());
    for (const std::string& t : wrong)
      QVERIFY2(t.find("#13") != std::string::npos,
               qPrintable(QString::fromStdString("'" + t + "' is not micro-batch 13's")));
  }

  // A constant that could be the micro-batch count (a hard-coded 1/n) makes a folded check meaningless:
  // the fold must not apply. Here the model's norm eps is 1/8 everywhere (still a correct plan).
  void countLikeConstantStopsTheFold() {
    Plan plan = generated("llama-micro", "pp=2,mb=8");
    QVERIFY(stage::foldMicroBatches(plan).folded);
    auto setEps = [](Graph& g) {
      for (Op& op : g.ops)
        if (op.attrs.contains("eps")) op.attrs["eps"] = 0.125;
    };
    setEps(plan.logical);
    for (Device& d : plan.devices)
      setEps(d.graph);
    const stage::FoldedPlan fp = stage::foldMicroBatches(plan);
    QVERIFY(!fp.folded);
    QVERIFY(!fp.notes.empty() && fp.notes.front().find("micro-batch count 8") != std::string::npos);
    QCOMPARE(verify::verdictName(run(plan, true).verdict), "equivalent");
  }

  // Folded kept copies read nothing of a dropped copy, and accumulation sums exactly the kept ones: the
  // folded plan is itself valid and smaller.
  void foldedPlanIsValidAndSmaller() {
    const Plan plan = generated("llama-micro", "dp=2,tp=2,pp=2,mb=8");
    const stage::FoldedPlan fp = stage::foldMicroBatches(plan);
    QVERIFY(fp.folded);
    QCOMPARE(fp.plan.devices.size(), plan.devices.size());
    for (size_t d = 0; d < plan.devices.size(); ++d)
      QVERIFY(fp.plan.devices[d].graph.ops.size() < plan.devices[d].graph.ops.size());
  }
};

QTEST_GUILESS_MAIN(TestMicroBatchFold)
#include "test_microbatch_fold.moc"
