// The self-check: every fixture's logical graph, run unchanged as a one-device plan, must be proved equal to
// itself, and a copy with one attribute changed must not be. A verifier passing the first and failing the
// second has an encoder that actually looks at the ops (Alive2 checks both sides against themselves first).
#include <QtTest>

#include <filesystem>

#include "core/plan/identity.h"
#include "core/plan/json_io.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

std::string plansDir() {
  return std::string(PARAPROOF_FIXTURES) + "/plans";
}

verify::Options options() {
  verify::Options opt;
  opt.jobs = 2;
  opt.timeoutSeconds = 120;
  return opt;
}

Op& deviceOp(Plan& plan, const std::string& id) {
  Graph& g = plan.devices.at(0).graph;
  OpId o = g.findOp(id);
  if (o == kNone) throw std::runtime_error("no op " + id);
  return g.ops[o];
}

bool failedStageHasScope(const verify::Report& report, const std::string& scope) {
  for (size_t i = 0; i < report.stages.size(); ++i) {
    const auto& scopes = report.stages[i].scopes;
    if (report.results[i].status == solver::Status::Failed &&
        std::find(scopes.begin(), scopes.end(), scope) != scopes.end())
      return true;
  }
  return false;
}

}  // namespace

class TestIdentity : public QObject {
  Q_OBJECT
 private slots:
  void identityPlanMirrorsTheLogicalGraph() {
    Plan plan = loadPlan(plansDir() + "/mlp_tp2.json");
    Plan id = identityPlan(plan);
    QCOMPARE(id.devices.size(), size_t(1));
    const Device& d = id.devices[0];
    QCOMPARE(d.graph.ops.size(), plan.logical.ops.size());
    QCOMPARE(d.lineage.size(), plan.logical.values.size());
    ValueId w1 = d.graph.findValue("w1");
    QVERIFY(w1 != kNone);
    QCOMPARE(d.lineage.at(w1).tensor, std::string("w1"));
    QCOMPARE(d.lineage.at(w1).box.extent(), (Shape{2, 4}));
    QCOMPARE(d.graph.ops[d.graph.findOp("fc1")].origin, std::string("fc1"));
  }

  void everyFixtureIsEquivalentToItself_data() {
    QTest::addColumn<QString>("path");
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(plansDir()))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    QVERIFY2(files.size() >= 10, "expected the generated plan fixtures in tests/fixtures/plans");
    for (const auto& f : files)
      QTest::newRow(f.stem().string().c_str()) << QString::fromStdString(f.string());
  }
  void everyFixtureIsEquivalentToItself() {
    QFETCH(QString, path);
    Plan id = identityPlan(loadPlan(path.toStdString()));
    verify::Report report = verify::verifyPlan(id, options());
    QVERIFY2(report.verdict == verify::Verdict::Equivalent, verify::reportToText(report).c_str());
    QVERIFY(!report.stages.empty());
  }

  // A changed constant (the loss gradient's 1/N): exact arithmetic must see it.
  void changedDivisorIsCaught() {
    Plan id = identityPlan(loadPlan(plansDir() + "/mlp_tp2.json"));
    deviceOp(id, "loss.grad").attrs.set("divisor", 7);
    verify::Report report = verify::verifyPlan(id, options());
    QVERIFY2(report.verdict == verify::Verdict::NotEquivalent, verify::reportToText(report).c_str());
    QVERIFY(failedStageHasScope(report, "loss.backward"));
  }

  // A changed argument of a function the proof treats as uninterpreted (rsqrt inside rmsnorm).
  void changedEpsIsCaught() {
    Plan id = identityPlan(loadPlan(plansDir() + "/mlp_dp2.json"));
    deviceOp(id, "norm").attrs.set("eps", 1e-3);
    verify::Report report = verify::verifyPlan(id, options());
    QVERIFY2(report.verdict == verify::Verdict::NotEquivalent, verify::reportToText(report).c_str());
    QVERIFY(failedStageHasScope(report, "mlp.norm"));
  }

  // A non-commutative op with its operands swapped.
  void swappedOperandsAreCaught() {
    Plan id = identityPlan(loadPlan(plansDir() + "/mlp_zero.json"));
    auto& inputs = deviceOp(id, "loss.diff").inputs;
    std::swap(inputs[0], inputs[1]);
    verify::Report report = verify::verifyPlan(id, options());
    QVERIFY2(report.verdict == verify::Verdict::NotEquivalent, verify::reportToText(report).c_str());
    QVERIFY(failedStageHasScope(report, "loss"));
  }
};

QTEST_APPLESS_MAIN(TestIdentity)
#include "test_identity.moc"
