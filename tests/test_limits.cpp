// Hostile-input limits whose fixture would be a large file (ops per graph, devices, attribute size, op
// arity, elements per plan, file size) are built here, in memory and as a temporary file run through the
// CLI (exit 2, the JSON pointer in the message). The small ones are fixtures in tests/fixtures/invalid.
// Also: a stage too large to lower ends inconclusive ("stage too large"), never out of memory.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "core/ir/limits.h"
#include "core/plan/json_io.h"
#include "core/plan/json_text.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

const std::string kExample = PARAPROOF_FIXTURES "/../../resources/examples/linear-dp2.json";

Json example() {
  std::ifstream in(kExample);
  return Json::parse(in);
}

// The first diagnostic of loading `j` from text (empty when it loads).
std::string loadError(const Json& j) {
  try {
    planFromJson(planjson::parseJsonText(j.dump(), "plan.json"), "plan.json");
  } catch (const PlanError& e) {
    return e.diagnostics().at(0).str();
  }
  return "";
}

// Runs the CLI on `j` written to a temporary file; returns (exit code, stderr).
std::pair<int, QString> cli(const Json& j, const QStringList& extra = {}) {
  QTemporaryDir dir;
  const QString path = dir.path() + "/plan.json";
  std::ofstream(path.toStdString()) << j.dump();
  QProcess p;
  p.start(PARAPROOF_CLI, QStringList{"verify", path} + extra);
  p.waitForFinished(300000);
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardError() + p.readAllStandardOutput())};
}

}  // namespace

class TestLimits : public QObject {
  Q_OBJECT
 private slots:
  void eachLargeLimitIsAClearError_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("expected");
    for (const char* w : {"graph ops", "devices", "op inputs", "attrs", "plan elements"}) {
      const std::map<std::string, std::string> expected{
          {"graph ops", "plan.json:/logical/ops: graph ops has 4194305 entries, above the limit of 4194304"},
          {"devices", "plan.json:/devices: the plan has 65537 devices, above the limit of 65536"},
          {"op inputs",
           "plan.json:/logical/ops/0/inputs: op 'fc': inputs has 65538 entries, above the limit"},
          {"attrs", "plan.json:/logical/ops/0/attrs: op 'fc': attrs hold more than 131072 JSON values"},
          {"plan elements",
           "plan.json:/logical: the plan's tensors hold more than 1152921504606846976 elements"}};
      QTest::newRow(w) << w << QString::fromStdString(expected.at(w));
    }
  }
  void eachLargeLimitIsAClearError() {
    QFETCH(QString, what);
    QFETCH(QString, expected);
    Json j = example();
    Json& ops = j["logical"]["ops"];
    if (what == "graph ops") {
      ops = Json::array();
      for (int64_t k = 0; k <= limits::kMaxGraphOps; ++k)
        ops.push_back(nullptr);
    } else if (what == "devices") {
      j["devices"] = Json::array();
      for (int64_t k = 0; k <= limits::kMaxDevices; ++k)
        j["devices"].push_back(nullptr);
    } else if (what == "op inputs") {
      for (int64_t k = 0; k < limits::kMaxOpArity; ++k)
        ops[0]["inputs"].push_back("x");  // 2 inputs already
    } else if (what == "attrs") {
      ops[0]["attrs"] = {{"pad", Json::array()}};
      for (int64_t k = 0; k < limits::kMaxAttrValues; ++k)
        ops[0]["attrs"]["pad"].push_back(0);
    } else if (what == "plan elements") {
      // 2^12 + 1 inputs of 2^48 elements each: every tensor is legal, their sum is not.
      for (int k = 0; k <= 4096; ++k)
        j["logical"]["inputs"].push_back(
            {{"name", "big" + std::to_string(k)}, {"shape", {16777216, 16777216}}, {"dtype", "f32"}});
    }
    std::string err = loadError(j);
    QVERIFY2(err.find(expected.toStdString()) == 0, err.c_str());
    auto [code, out] = cli(j);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains(expected.mid(expected.indexOf(':') + 1)), qPrintable(out));
  }

  // The size is checked before anything is read: a sparse file of 1 GiB + 1 costs no disk and no memory.
  void anOversizedFileIsRejectedBeforeReading() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/huge.json";
    std::ofstream(path) << "{";
    std::filesystem::resize_file(path, limits::kMaxPlanFileBytes + 1);
    try {
      loadPlan(path);
      QFAIL("loaded");
    } catch (const PlanError& e) {
      QVERIFY2(
          e.diagnostics().at(0).message == "plan file is 1073741825 bytes, above the limit of 1073741824",
          e.diagnostics().at(0).str().c_str());
    }
    QProcess p;
    p.start(PARAPROOF_CLI, {"verify", QString::fromStdString(path)});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
  }

  // A 2^26-element tensor at full size: --no-reduce ends inconclusive at once instead of building a
  // multi-gigabyte expression DAG; with shape reduction the same plan is proved.
  void aStageTooLargeToLowerIsInconclusive() {
    Json j = example();
    auto widen = [](Json& decl) {
      for (Json& e : decl["shape"])
        if (e == 3) e = 8192 * 4096;
    };
    for (Json& in : j["logical"]["inputs"])
      widen(in);
    for (Json& d : j["devices"])
      for (Json& in : d["inputs"])
        widen(in);
    for (Json& d : j["devices"])
      for (auto& [name, lin] : d["lineage"].items())
        if (lin.contains("box"))
          for (Json& r : lin["box"])
            if (r[1] == 3) r[1] = 8192 * 4096;
    auto [code, out] = cli(j, {"--no-reduce", "--jobs", "1"});
    QVERIFY2(code == 3, qPrintable(out));
    QVERIFY2(out.contains("stage too large ("), qPrintable(out));
    auto [reducedCode, reducedOut] = cli(j, {"--jobs", "1"});
    QVERIFY2(reducedCode == 0, qPrintable(reducedOut));
  }

  // The expression-node budget: a stage of few elements whose DAG grows past the limit.
  void anExpressionDagPastItsBudgetIsInconclusive() {
    Plan plan = loadPlan(kExample);
    verify::Options opt;
    opt.engine = verify::EngineChoice::Random;
    opt.maxStageExprNodes = 20;
    verify::Report rep = verify::verifyPlan(plan, opt);
    QCOMPARE(rep.verdict, verify::Verdict::Inconclusive);
    bool found = false;
    for (const auto& r : rep.results)
      found = found || r.reason.find("stage too large (") == 0;
    QVERIFY(found);
    opt.maxStageExprNodes = limits::kMaxStageExprNodes;
    QCOMPARE(verify::verifyPlan(plan, opt).verdict, verify::Verdict::Equivalent);
  }
};

QTEST_APPLESS_MAIN(TestLimits)
#include "test_limits.moc"
