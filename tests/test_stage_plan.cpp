// A stage as a plan of its own (docs/soundness.md, "A stage as a plan of its own"). What the shortcut rests
// on: the plan stageAsPlan builds is valid and its obligations are the stage's, lowered alike (equal
// canonical hashes: an identity check of the extraction), and verifying stages apart never changes a
// verdict (every catalog bug with every stage tried apart, against none).
#include <QtTest>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/stage/canonical.h"
#include "core/stage/int_domains.h"
#include "core/stage/lower.h"
#include "core/stage/stage_plan.h"
#include "core/verify/verify.h"
#include "fixture_plans.h"

using namespace paraproof;

namespace {

Plan generated(const std::string& model, const std::string& par, int layers, const std::string& inject = "") {
  parallel::GenerateOptions o;
  o.layers = layers;
  o.inject = inject;
  return parallel::generatePlan(*models::findModel(model), parallel::parseParallel(par), o);
}

std::string hashOf(const Plan& plan, const stage::Stage& s) {
  try {
    return stage::canonicalHash(stage::lowerStage(plan, s, stage::intDomains(plan)));
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

struct Extracted {
  size_t stages = 0, apart = 0, compared = 0;
};

// Every stage stated as a plan: valid, cut into stages that check exactly the stage's values, and (cut
// into one stage, as it almost always is) lowered to the very problem of the stage.
QString firstMismatch(const Plan& plan, Extracted& n) {
  const std::vector<stage::Stage> stages = stage::cutStages(plan);
  const stage::IntDomains domains = stage::intDomains(plan);
  n.stages += stages.size();
  for (const stage::Stage& s : stages) {
    const std::optional<Plan> own = stage::stageAsPlan(plan, s);
    if (!own) continue;
    ++n.apart;
    const QString where = QString("%1 stage %2").arg(QString::fromStdString(plan.name)).arg(s.id);
    const std::vector<Diagnostic> errors = validatePlan(*own);
    if (!errors.empty())
      return where + ": invalid as a plan: " +
             QString::fromStdString(errors.front().where + " " + errors.front().message);
    const std::vector<stage::Stage> parts = stage::cutStages(*own);
    size_t checked = 0;
    for (const stage::Stage& p : parts)
      checked += p.checked.size();
    if (checked != s.checked.size())
      return where +
             QString(": %1 obligations as a plan, %2 in the stage").arg(checked).arg(s.checked.size());
    if (parts.size() != 1) continue;
    ++n.compared;
    const std::string mine = hashOf(*own, parts.front()), theirs = hashOf(plan, s);
    if (mine != theirs && theirs.rfind("error", 0) != 0)
      return where + ": lowers to another problem as a plan of its own";
  }
  return {};
}

}  // namespace

class TestStagePlan : public QObject {
  Q_OBJECT
 private slots:
  void aStageAsAPlanLowersAsTheStage_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    for (const char* p : {"dp=2,tp=2,pp=2,mb=2", "tp=2,sp", "cp=2", "dp=2,zero=3"})
      QTest::newRow((std::string("llama-micro ") + p).c_str()) << "llama-micro" << p;
    QTest::newRow("gpt-micro tp=2 pp=2 mb=2") << "gpt-micro"
                                              << "tp=2,pp=2,mb=2";
    QTest::newRow("dsv3-micro tp=2") << "dsv3-micro"
                                     << "tp=2";
    QTest::newRow("dsv3-micro dp=2 ep=2") << "dsv3-micro"
                                          << "dp=2,ep=2";
  }
  void aStageAsAPlanLowersAsTheStage() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    Extracted n;
    const QString mismatch = firstMismatch(generated(model.toStdString(), parallel.toStdString(), 2), n);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    qInfo("%zu stages, %zu stated as plans, %zu compared", n.stages, n.apart, n.compared);
    QVERIFY(n.compared > 0);
  }

  void aStageAsAPlanLowersAsTheStageOnFixtures() {
    Extracted n;
    testing::forEachValidFixturePlan([&](const Plan& plan) {
      const QString mismatch = firstMismatch(plan, n);
      QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    });
    qInfo("%zu stages, %zu stated as plans, %zu compared", n.stages, n.apart, n.compared);
    QVERIFY(n.compared > 100);
  }

  // A stage that communicates or reads integers (whose range the plan of its own could not state) is not
  // stated apart.
  void integerAndCommunicatingStagesStayInThePlan() {
    const Plan plan = generated("llama-micro", "tp=2", 1);
    size_t integer = 0, communicating = 0;
    for (const stage::Stage& s : stage::cutStages(plan)) {
      bool readsIds = false, talks = s.communication;
      for (OpId o : s.logicalOps)
        for (ValueId v : plan.logical.ops[o].inputs)
          readsIds = readsIds || isInteger(plan.logical.values[v].type.dtype);
      for (const stage::DeviceOp& d : s.deviceOps)
        talks = talks || isCommunication(plan.devices[d.device].graph.ops[d.op]);
      if (!readsIds && !talks) continue;
      QVERIFY2(!stage::stageAsPlan(plan, s), qPrintable(QString("stage %1").arg(s.id)));
      (talks ? communicating : integer) += 1;
    }
    QVERIFY(integer > 0);  // the embedding reads the token ids
    QVERIFY(communicating > 0);
  }

  // The experts a router's top-k picks from stay whole in the whole plan's reduction; the stages that only
  // compute over them are proved apart, and the verdict is the same.
  void expertStagesAreProvedApart() {
    const Plan plan = generated("dsv3-micro", "tp=2", 2);
    verify::Options opt;
    opt.jobs = 2;
    opt.apartElements = 1;
    const verify::Report apart = verify::verifyPlan(plan, opt);
    QCOMPARE(apart.verdict, verify::Verdict::Equivalent);
    size_t proved = 0;
    for (const verify::StageResult& r : apart.results)
      proved += r.reason.find("plan of its own") != std::string::npos;
    qInfo("%zu of %zu stages proved apart", proved, apart.results.size());
    QVERIFY(proved > 0);
    opt.apartElements = 0;
    QCOMPARE(verify::verifyPlan(plan, opt).verdict, verify::Verdict::Equivalent);
  }

  // Every catalog bug with every stage tried apart first: still not equivalent, as without.
  void everyCatalogBugIsFoundWithEveryStageTriedApart_data() {
    QTest::addColumn<QString>("bug");
    for (const parallel::BugEntry& bug : parallel::bugCatalog())
      QTest::newRow(bug.id.c_str()) << QString::fromStdString(bug.id);
  }
  void everyCatalogBugIsFoundWithEveryStageTriedApart() {
    QFETCH(QString, bug);
    const parallel::BugEntry& entry = *parallel::findBug(bug.toStdString());
    const Plan plan = generated(entry.model, entry.parallel, 2, entry.id);
    verify::Options opt;
    opt.jobs = 2;
    opt.apartElements = 1;
    const verify::Report apart = verify::verifyPlan(plan, opt);
    opt.apartElements = 0;
    const verify::Report whole = verify::verifyPlan(plan, opt);
    QCOMPARE(apart.verdict, whole.verdict);
    QCOMPARE(apart.verdict, verify::Verdict::NotEquivalent);
  }
};

QTEST_GUILESS_MAIN(TestStagePlan)
#include "test_stage_plan.moc"
