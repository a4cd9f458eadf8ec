// The plan format as a product, from the exporter's side of the CLI: every `--json` report (load errors
// included) is valid against docs/report.schema.json and carries the errors docs/report-format.md promises,
// each error is printed once, docs/operators.md is what the registry generates, and `paraproof ops` lists
// the attribute schemas.
#include <QtTest>

#include <fstream>
#include <sstream>

#include "cli_run.h"
#include "core/ops/op_catalog.h"
#include "core/ops/registry.h"
#include "json_schema.h"

using paraproof::Json;

namespace {

const std::string kFixtures = PARAPROOF_FIXTURES;
const std::string kRoot = kFixtures + "/../..";

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Json readJson(const std::string& path) {
  return Json::parse(readText(path));
}

const Json& reportSchema() {
  static const Json s = readJson(kRoot + "/docs/report.schema.json");
  return s;
}

struct Verified {
  CliRun run;
  Json report;
};

// `paraproof verify FILE --json OUT`: the report must exist and satisfy the schema.
Verified verifyWithReport(const QString& plan, const QStringList& extra = {}) {
  QTemporaryDir dir;
  const QString out = dir.path() + "/report.json";
  Verified v;
  v.run = runCli(QStringList{"verify", plan, "--json", out, "--engine", "random"} + extra, 120000);
  if (QFile::exists(out)) v.report = readJson(out.toStdString());
  return v;
}

}  // namespace

class TestExporter : public QObject {
  Q_OBJECT
 private slots:
  // Malformed JSON, an unknown field, op kind or attribute, a validator error: exit 2, a report with
  // verdict invalid and errors [{where, message}], where = FILE:..., each error once on stderr only.
  void loadErrorsStillWriteTheReport_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("message");
    const QString inv = QString::fromStdString(kFixtures + "/invalid/");
    QTest::newRow("malformed JSON") << inv + "malformed-json.json"
                                    << "malformed JSON";
    QTest::newRow("unknown field") << inv + "unknown-field.json"
                                   << "unknown field 'attr'";
    QTest::newRow("unknown op kind") << inv + "op-kind-case.json"
                                     << "did you mean 'square'?";
    QTest::newRow("unknown attribute") << inv + "attr-misspelt-keepdims.json"
                                       << "did you mean 'keepdim'?";
    QTest::newRow("missing reduce") << inv + "attr-reduce-missing.json"
                                    << "missing attribute 'reduce'";
    QTest::newRow("validator") << inv + "collective-group-mismatch.json"
                               << "group mismatch";
    QTest::newRow("not a file") << inv + "no-such-plan.json"
                                << "cannot open plan file";
  }
  void loadErrorsStillWriteTheReport() {
    QFETCH(QString, file);
    QFETCH(QString, message);
    Verified v = verifyWithReport(file);
    QCOMPARE(v.run.exitCode, 2);
    QVERIFY2(!v.report.is_null(), qPrintable("no report written; stderr: " + v.run.err));
    const std::string bad = schema_check::check(v.report, reportSchema(), reportSchema());
    QVERIFY2(bad.empty(), bad.c_str());
    QCOMPARE(v.report["verdict"].get<std::string>(), std::string("invalid"));
    QVERIFY(!v.report["errors"].empty());
    bool found = false;
    for (const Json& e : v.report["errors"]) {
      const std::string where = e["where"].get<std::string>(), msg = e["message"].get<std::string>();
      QVERIFY2(where.rfind(file.toStdString(), 0) == 0, where.c_str());  // the FILE: prefix
      found = found || msg.find(message.toStdString()) != std::string::npos;
      // Printed once, on stderr; stdout carries only the verdict.
      QCOMPARE(v.run.err.count(QString::fromStdString(where + ": " + msg)), 1);
      QVERIFY2(!v.run.out.contains(QString::fromStdString(msg)), qPrintable(v.run.out));
    }
    QVERIFY2(found, v.report["errors"].dump().c_str());
  }

  // Every exit code's report satisfies the schema (0, 1; 2 above).
  void everyVerdictsReportIsSchemaValid_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("code");
    const QString plans = QString::fromStdString(kFixtures + "/plans/");
    QTest::newRow("equivalent") << plans + "mlp_dp2.json" << 0;
    QTest::newRow("not equivalent") << plans + "mlp_dp2_missing_allreduce.json" << 1;
    QTest::newRow("tp=2 bug") << plans + "mlp_tp2_missing_allreduce.json" << 1;
  }
  void everyVerdictsReportIsSchemaValid() {
    QFETCH(QString, file);
    QFETCH(int, code);
    Verified v = verifyWithReport(file);
    QCOMPARE(v.run.exitCode, code);
    const std::string bad = schema_check::check(v.report, reportSchema(), reportSchema());
    QVERIFY2(bad.empty(), bad.c_str());
  }

  // Counterexamples name the pattern, the communication of the stage and show shapes (text and JSON).
  void counterexamplesAreReadable_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("hint");
    const QString plans = QString::fromStdString(kFixtures + "/plans/");
    QTest::newRow("shifted slice") << plans + "mlp_tp2_slice_offset.json"
                                   << "shifted by -2] of logical 'w1': a shifted slice";
    QTest::newRow("partial sums") << plans + "mlp_dp2_missing_allreduce.json"
                                  << "summed over ranks 0,1 = expected: each rank holds a partial value";
    QTest::newRow("a factor of the group size")
        << plans + "mlp_dp2_wrong_scale.json"
        << "actual = 0.5 x expected at every differing element of logical 'dw1'";
  }
  void counterexamplesAreReadable() {
    QFETCH(QString, file);
    QFETCH(QString, hint);
    Verified v = verifyWithReport(file);
    QCOMPARE(v.run.exitCode, 1);
    QVERIFY2(v.run.out.contains("hint: ") && v.run.out.contains(hint), qPrintable(v.run.out));
    QVERIFY2(v.run.out.contains(QRegularExpression(R"(: shape \[\d+(,\d+)*\] \[\[)")), qPrintable(v.run.out));
    bool inJson = false;
    for (const Json& s : v.report["stages"])
      if (s.contains("counterexample"))
        for (const Json& h : s["counterexample"]["hints"])
          inJson = inJson || QString::fromStdString(h.get<std::string>()).contains(hint);
    QVERIFY(inJson);
  }

  void stagesNameTheirCollectives() {
    Verified v = verifyWithReport(QString::fromStdString(kFixtures + "/plans/mlp_dp2_wrong_scale.json"));
    QVERIFY2(v.run.out.contains(
                 "communication: all_reduce 'fc1.dw.ar' (instance 'fc1.dw', group [0,1], reduce sum) "
                 "on ranks 0,1"),
             qPrintable(v.run.out));
    bool found = false;
    for (const Json& s : v.report["stages"])
      for (const Json& c : s["communication"])
        found = found || (c["instance"] == "fc1.dw" && c["group"] == Json({0, 1}) && c["reduce"] == "sum");
    QVERIFY(found);
  }

  // docs/operators.md is generated: edit the registry and run scripts/gen-operators-doc.sh.
  void operatorsDocIsWhatTheRegistryGenerates() {
    const std::string committed = readText(kRoot + "/docs/operators.md");
    QVERIFY2(committed == paraproof::ops::opsToMarkdown(),
             "docs/operators.md differs from the registry: run scripts/gen-operators-doc.sh");
  }

  // A shape rule reading a key its schema does not declare is a schema gap: it fails loudly, never reads a
  // silently accepted attribute.
  void undeclaredAttributeReadsFailLoudly() {
    const paraproof::ops::OpDef* relu = paraproof::ops::findOp("relu");
    QVERIFY(relu);
    paraproof::ops::AttrReadScope scope(*relu);
    bool threw = false;
    try {
      paraproof::ops::checkAttrRead("factor");
    } catch (const std::logic_error&) {
      threw = true;
    }
    QVERIFY(threw);
  }

  void opsListsTheAttributeSchemas() {
    CliRun r = runCli({"ops", "--json"}, 30000);
    QCOMPARE(r.exitCode, 0);
    const Json ops = Json::parse(r.out.toStdString());
    bool sawReduce = false;
    for (const Json& op : ops) {
      QVERIFY(op.contains("inputs") && op.contains("outputs") && op.contains("summary") &&
              op.contains("family"));
      if (op["name"] == "all_reduce")
        for (const Json& a : op["attrs"])
          if (a["name"] == "reduce") {
            sawReduce = true;
            QCOMPARE(a["required"].get<bool>(), true);
            QCOMPARE(a["choices"], Json({"sum", "avg", "max"}));
          }
    }
    QVERIFY(sawReduce);
    CliRun text = runCli({"ops"}, 30000);
    QCOMPARE(text.exitCode, 0);
    QVERIFY(text.out.contains("keepdim (bool, default false)"));
  }
};

QTEST_APPLESS_MAIN(TestExporter)
#include "test_exporter.moc"
