// Mutation testing: the end-to-end oracle (accepts correct plans, rejects a catalogued bug, does not depend
// on shape reduction), the mutation operators (reproducible, each applies to a generated plan), and the
// `paraproof mutate` command (one line per mutant, the summary line, the exit code).
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include "cli_run.h"

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/parallel/mutate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/verify/end_to_end.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

Plan makePlan(const std::string& model, const std::string& par, const std::string& inject = "") {
  parallel::GenerateOptions o;
  o.seq = 4;
  o.inject = inject;
  return parallel::generatePlan(*models::findModel(model), parallel::parseParallel(par), o);
}

// A plan where both folds apply (dp = 8 replicas, 4 micro-batches), compact (2 replicas and 2 copies
// stated) or explicit, one sample per micro-batch so the oracle stays within its bound.
Plan foldPlan(bool compact) {
  parallel::GenerateOptions o;
  o.seq = 4;
  o.layers = 2;
  o.globalBatch = 32;
  o.compact = compact;
  return parallel::generatePlan(*models::findModel("llama-micro"), parallel::parseParallel("dp=8,pp=2,mb=4"),
                                o);
}

const std::vector<std::string> kFoldOperators = {"fold-count-constant", "pin-lineage-box",
                                                 "count-of-other-tensor", "count-squared", "narrow-int-id"};

using Run = CliRun;

Run cli(const QStringList& args) {
  return runCli(args, 600000);
}

// "mutants: N changed: C caught: K missed: M invalid: I" as the last line, parsed; empty when malformed.
QList<int> summary(const QString& out) {
  const QStringList lines = out.trimmed().split('\n');
  static const QRegularExpression re(
      "^mutants: (\\d+) changed: (\\d+) caught: (\\d+) missed: (\\d+) invalid: (\\d+)$");
  auto m = re.match(lines.last());
  if (!m.hasMatch()) return {};
  QList<int> v;
  for (int i = 1; i <= 5; ++i)
    v.push_back(m.captured(i).toInt());
  return v;
}

// The oracle's judgement of every mutant line ("changed", "unchanged", "undecided", "invalid"), in order.
QStringList oracleVerdicts(const QString& out) {
  QStringList v;
  static const QRegularExpression re("^mutant \\d+ .* => (changed|unchanged|oracle undecided|invalid)");
  for (const QString& line : out.split('\n'))
    if (auto m = re.match(line); m.hasMatch()) v.push_back(m.captured(1));
  return v;
}

}  // namespace

class TestMutate : public QObject {
  Q_OBJECT

 private slots:
  void oracleAcceptsCorrectPlans_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::newRow("mlp dp tp") << "mlp"
                               << "dp=2,tp=2";
    QTest::newRow("llama-micro pp") << "llama-micro"
                                    << "pp=2,mb=2";
    QTest::newRow("dsv3-micro ep") << "dsv3-micro"
                                   << "dp=2,ep=2";
  }
  void oracleAcceptsCorrectPlans() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    Plan plan = makePlan(model.toStdString(), parallel.toStdString());
    QVERIFY(validatePlan(plan).empty());
    verify::EndToEndResult r = verify::checkEndToEnd(plan);
    QVERIFY2(r.effect == verify::Effect::Unchanged, (r.reason + " " + r.where).c_str());
    QVERIFY(r.obligations > 0);
  }

  // A catalogued bug (the tensor-parallel all-reduce closing the MLP is missing) changes what devices hold.
  void oracleFlagsACatalogBug() {
    Plan plan = makePlan("llama-micro", "tp=2", "tv01-allreduce-missing");
    QVERIFY(validatePlan(plan).empty());
    verify::EndToEndResult r = verify::checkEndToEnd(plan);
    QVERIFY2(r.effect == verify::Effect::Changed, r.reason.c_str());
    QVERIFY(!r.where.empty());
  }

  // A replica that outputs its old weight satisfies its own lineage (the input's): only the correct plan's
  // output at the same position says it should hold the updated one.
  void oracleComparesOutputsWithTheCorrectPlan() {
    const Plan correct = makePlan("llama-micro", "dp=2");
    parallel::Mutant m = parallel::makeMutant(correct, 1, 0, {"keep-old-state"});
    QVERIFY(validatePlan(m.plan).empty());
    QCOMPARE(verify::checkEndToEnd(m.plan).effect, verify::Effect::Unchanged);
    verify::EndToEndOptions o;
    o.reference = &correct;
    QCOMPARE(verify::checkEndToEnd(m.plan, o).effect, verify::Effect::Changed);
    QCOMPARE(verify::checkEndToEnd(correct, o).effect, verify::Effect::Unchanged);
  }

  // The incremental oracle (the correct plan lowered once, each mutant reusing its unchanged ops and values)
  // judges every mutant as the full whole-plan oracle does, whatever the mutation operator.
  void incrementalOracleAgreesWithTheFullOne_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::newRow("mlp dp tp") << "mlp"
                               << "dp=2,tp=2";
    QTest::newRow("llama-micro pp") << "llama-micro"
                                    << "pp=2,mb=2";
    QTest::newRow("dsv3-micro ep") << "dsv3-micro"
                                   << "dp=2,ep=2";
  }
  void incrementalOracleAgreesWithTheFullOne() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    const Plan generated = makePlan(model.toStdString(), parallel.toStdString());
    const Plan correct = planFromJson(planToJson(generated), "<correct>");  // as mutants are loaded
    const verify::EndToEndOracle oracle(correct);
    QCOMPARE(oracle.base().effect, verify::Effect::Unchanged);
    verify::EndToEndOptions full;
    full.reference = &correct;
    int changed = 0, judged = 0;
    for (int i = 0; i < 12; ++i) {
      parallel::Mutant m = parallel::makeMutant(generated, 3, i, {});
      Plan plan;
      try {
        plan = planFromJson(planToJson(m.plan), "<mutant>");
      } catch (const std::exception&) {
        continue;
      }
      if (!validatePlan(plan).empty()) continue;
      const verify::EndToEndResult a = oracle.check(plan), b = verify::checkEndToEnd(plan, full);
      QVERIFY2(a.effect == b.effect,
               (m.description + ": incremental " + verify::effectName(a.effect) + " (" + a.reason +
                "), full " + verify::effectName(b.effect) + " (" + b.reason + ")")
                   .c_str());
      QVERIFY(a.nodes >= oracle.base().nodes);  // the variant's pool extends the correct plan's
      changed += a.effect == verify::Effect::Changed;
      ++judged;
    }
    QVERIFY(judged >= 6);
    QVERIFY(changed > 0);
    // The correct plan itself: nothing to evaluate again.
    QCOMPARE(oracle.check(correct).effect, verify::Effect::Unchanged);
  }

  // The oracle runs at full shape, whatever the verifier does: it checks at least every element of every
  // logical output (coverage), and a mutant is judged the same whether the verifier reduces shapes or not.
  void oracleIsIndependentOfShapeReduction() {
    Plan plan = makePlan("mlp", "dp=2");
    int64_t logicalElements = 0;
    for (ValueId v : plan.logical.outputs)
      logicalElements += numElements(plan.logical.values[v].type.shape);
    verify::EndToEndResult base = verify::checkEndToEnd(plan);
    QCOMPARE(base.effect, verify::Effect::Unchanged);
    QVERIFY(static_cast<int64_t>(base.obligations) >= logicalElements);

    int rewritten = 0;
    for (Device& dev : plan.devices)
      for (Op& op : dev.graph.ops)
        if (op.kind == "all_reduce" && op.attrs.value("reduce", "") == "sum" && op.inputs.size() > 1) {
          op.attrs.set("reduce", "avg");  // the dp gradient buckets averaged: the gradients are halved
          ++rewritten;
        }
    QVERIFY(rewritten > 0);
    QCOMPARE(verify::checkEndToEnd(plan).effect, verify::Effect::Changed);
    verify::Options noReduce;
    noReduce.reduceShapes = false;
    noReduce.jobs = 2;
    QCOMPARE(verify::verifyPlan(plan, noReduce).verdict, verify::Verdict::NotEquivalent);

    // The same mutants judged by the oracle whether the verifier reduces shapes or not.
    const QStringList common{"mutate",  "--model", "mlp",    "--parallel", "dp=2",   "--seq", "4",
                             "--count", "8",       "--seed", "7",          "--jobs", "2"};
    Run reduced = cli(common), full = cli(QStringList(common) << "--no-reduce");
    QVERIFY2(!summary(reduced.out).isEmpty(), qPrintable(reduced.out + reduced.err));
    QVERIFY2(!summary(full.out).isEmpty(), qPrintable(full.out + full.err));
    QCOMPARE(oracleVerdicts(reduced.out).size(), 8);
    QCOMPARE(oracleVerdicts(full.out), oracleVerdicts(reduced.out));
  }

  // A compact plan is judged as the explicit plan it stands for: the oracle accepts the generator's compact
  // and explicit plans where both folds apply, and they are the same plan once written out.
  void oracleAcceptsFoldApplicablePlans() {
    const Plan compact = foldPlan(true), explicitForm = foldPlan(false);
    QVERIFY(compact.replicas && compact.microbatches);
    QVERIFY(!explicitForm.replicas && !explicitForm.microbatches);
    const Plan expanded = verify::explicitPlan(compact);
    QCOMPARE(expanded.devices.size(), explicitForm.devices.size());
    QVERIFY(validatePlan(expanded).empty());
    QVERIFY(validatePlan(explicitForm).empty());
    for (const Plan* p : {&compact, &explicitForm}) {
      const verify::EndToEndOracle oracle(*p);
      QVERIFY2(oracle.base().effect == verify::Effect::Unchanged,
               (oracle.base().reason + " " + oracle.base().where).c_str());
      QCOMPARE(oracle.check(*p).effect, verify::Effect::Unchanged);
    }
  }

  // Each fold operator finds sites on a plan where both folds apply, compact and explicit, its mutants
  // load and validate (written out), and some mutant of each is judged changed by the oracle.
  void foldOperatorsMakeValidChangedMutants() {
    for (bool compactForm : {false, true}) {
      const Plan generated = foldPlan(compactForm);
      const Plan correct = planFromJson(planToJson(generated), "<correct>");
      const verify::EndToEndOracle oracle(correct);
      QCOMPARE(oracle.base().effect, verify::Effect::Unchanged);
      for (const std::string& name : kFoldOperators) {
        // A compact plan that states only its template pair has no box to pin: a pinned template tiles
        // nothing (the format rejects it), and no further replica or copy is stated.
        if (compactForm && name == "pin-lineage-box") {
          QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parallel::makeMutant(generated, 11, 0, {name}));
          continue;
        }
        int valid = 0, changed = 0;
        std::string last;
        for (int i = 0; i < 6 && changed == 0; ++i) {
          parallel::Mutant m = parallel::makeMutant(generated, 11, i, {name});
          QCOMPARE(m.mutationOperator, name);
          Plan plan, expanded;
          try {
            plan = planFromJson(planToJson(m.plan), "<mutant>");
            expanded = verify::explicitPlan(plan);
          } catch (const std::exception& e) {
            last = m.description + ": " + e.what();
            continue;
          }
          if (auto errors = validatePlan(expanded); !errors.empty()) {
            last = m.description + ": " + errors.front().str();
            continue;
          }
          ++valid;
          const verify::EndToEndResult r = oracle.check(expanded);
          changed += r.effect == verify::Effect::Changed;
          last = m.description + ": " + verify::effectName(r.effect) + " " + r.reason;
        }
        const std::string what = name + (compactForm ? " (compact)" : " (explicit)") + ", last: " + last;
        QVERIFY2(valid > 0, what.c_str());
        QVERIFY2(changed > 0, what.c_str());
      }
    }
  }

  void mutantsAreReproducible() {
    Plan plan = makePlan("llama-micro", "dp=2,tp=2");
    for (int i = 0; i < 12; ++i) {
      parallel::Mutant a = parallel::makeMutant(plan, 42, i), b = parallel::makeMutant(plan, 42, i);
      QCOMPARE(a.mutationOperator, b.mutationOperator);
      QCOMPARE(a.description, b.description);
      QCOMPARE(planToJson(a.plan).dump(), planToJson(b.plan).dump());
      QVERIFY(planToJson(a.plan).dump() != planToJson(plan).dump());
    }
  }

  // Every operator finds a site in one of two plans that have every kind of communication and op, and
  // changes the plan.
  void everyOperatorApplies() {
    const Plan plans[] = {makePlan("llama-micro", "dp=2,tp=2,pp=2,mb=2"),
                          makePlan("dsv3-micro", "tp=2,cp=2")};
    for (const auto& op : parallel::mutationOperators()) {
      bool applied = false;
      for (const Plan& plan : plans) {
        try {
          parallel::Mutant m = parallel::makeMutant(plan, 5, 0, {op.name});
          QCOMPARE(m.mutationOperator, op.name);
          QVERIFY2(!m.description.empty(), op.name.c_str());
          QVERIFY2(planToJson(m.plan).dump() != planToJson(plan).dump(), op.name.c_str());
          applied = true;
        } catch (const std::invalid_argument&) {
        }
      }
      QVERIFY2(applied, op.name.c_str());
    }
  }

  void cliPrintsALinePerMutantAndTheSummary_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::newRow("gpt-micro tp sp") << "gpt-micro"
                                     << "tp=2,sp";
    QTest::newRow("dsv3-micro dp ep") << "dsv3-micro"
                                      << "dp=2,ep=2";
  }
  void cliPrintsALinePerMutantAndTheSummary() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    Run r = cli({"mutate", "--model", model, "--parallel", parallel, "--seq", "4", "--count", "6", "--seed",
                 "3", "--jobs", "2"});
    const QList<int> s = summary(r.out);
    QVERIFY2(s.size() == 5, qPrintable(r.out + r.err));
    QCOMPARE(s[0], 6);
    QCOMPARE(oracleVerdicts(r.out).size(), 6);
    QVERIFY(s[2] + s[3] <= s[1]);  // caught + missed <= changed
    QCOMPARE(r.exitCode, s[3] > 0 ? 1 : 0);
  }

  // A real model at full shape is far beyond the whole-plan oracle: it says so first (stderr, with the size
  // and what to do), judges nothing, verifies nothing, and still prints a line per mutant and the summary.
  void cliSaysUpFrontWhenThePlanIsAboveTheOracleBound() {
    Run r = cli({"mutate", "--model", "llama3-8b", "--layers", "2", "--parallel", "dp=2,tp=2", "--count", "3",
                 "--seed", "1"});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains("too large for the end-to-end oracle") && r.err.contains("scalar elements") &&
                 r.err.contains("micro model"),
             qPrintable(r.err));
    QVERIFY2(r.err.indexOf("too large") < r.err.indexOf("mutants decided"), qPrintable(r.err));
    const QList<int> s = summary(r.out);
    QVERIFY2(!s.isEmpty(), qPrintable(r.out));
    QCOMPARE(s[0], 3);
    QCOMPARE(s[1], 0);  // nothing judged changed
    QCOMPARE(oracleVerdicts(r.out).size(), 3);
    QVERIFY2(!r.out.contains("(oracle "), qPrintable(r.out));  // no mutant was run by the oracle or verified
  }

  void cliRejectsBadUsage() {
    QCOMPARE(cli({"mutate", "--model", "mlp", "--parallel", "dp=2", "--count", "0"}).exitCode, 2);
    QCOMPARE(cli({"mutate", "--model", "mlp", "--parallel", "dp=2", "--operators", "nope"}).exitCode, 2);
    QCOMPARE(cli({"mutate", "--parallel", "dp=2"}).exitCode, 2);
    QCOMPARE(cli({"mutate", "--model", "mlp", "--parallel", "dp=3,tp=7"}).exitCode, 2);
    Run help = cli({"mutate", "--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.contains("drop-collective"));
  }
};

QTEST_GUILESS_MAIN(TestMutate)
#include "test_mutate.moc"
