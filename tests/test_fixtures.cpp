// The plan fixtures, end to end through the CLI: `paraproof verify PLAN --json REPORT` must reach the verdict
// written in the plan's metadata.expect, and for a bug, name the failing stage (its scope and device) and
// show a confirmed counterexample whose values really differ.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/ir/ir.h"
#include "core/solver/engine.h"

using namespace paraproof;

namespace {

std::string plansDir() {
  return std::string(PARAPROOF_FIXTURES) + "/plans";
}

Json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return Json::parse(in);
}

std::vector<std::filesystem::path> fixtureFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(plansDir()))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

int expectedExitCode(const std::string& verdict) {
  if (verdict == "equivalent") return 0;
  if (verdict == "not_equivalent") return 1;
  if (verdict == "invalid") return 2;
  return 3;
}

bool contains(const Json& array, const Json& value) {
  return array.is_array() && std::find(array.begin(), array.end(), value) != array.end();
}

// A failed stage that includes the expected scope and names the expected device (in its devices or diffs).
const Json* localisingStage(const Json& report, const Json& expect) {
  for (const Json& s : report.at("stages")) {
    if (s.value("verdict", "") != "failed" || !contains(s.value("scopes", Json::array()), expect.at("scope")))
      continue;
    bool named = contains(s.value("devices", Json::array()), expect.at("device"));
    if (s.contains("counterexample"))
      for (const Json& d : s["counterexample"].value("diffs", Json::array()))
        named |= d.value("device", Json()) == expect.at("device");
    if (named) return &s;
  }
  return nullptr;
}

struct Run {
  int exitCode = -1;
  Json report;
  QString output;
};

}  // namespace

class TestFixtures : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::map<QString, Run> runs_;  // one CLI run per fixture, shared by the checks below

  // Runs the CLI once per fixture; skips the calling test while the verifier is not built yet.
  const Run& verifyFixture(const QString& path) {
    auto it = runs_.find(path);
    if (it != runs_.end()) return it->second;
    QString out = tmp_.filePath(QFileInfo(path).completeBaseName() + ".report.json");
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    // A bounded per-stage budget keeps the suite inside CTest's limit; a stage that needs more is a finding.
    p.start(PARAPROOF_CLI, {"verify", path, "--json", out, "--timeout", "30", "--jobs", "2"});
    Run run;
    if (!p.waitForStarted(10000)) {
      run.output = "could not start " PARAPROOF_CLI;
    } else if (!p.waitForFinished(600000)) {
      p.kill();
      p.waitForFinished();
      run.output = "timed out after 600 s";
    } else {
      run.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
      run.output = QString::fromUtf8(p.readAll());
      if (QFile::exists(out)) run.report = readJson(out.toStdString());
    }
    return runs_.emplace(path, std::move(run)).first->second;
  }

  void addFixtureRows(bool onlyBugs) {
    QTest::addColumn<QString>("path");
    for (const auto& f : fixtureFiles()) {
      Json expect = readJson(f.string())["metadata"]["expect"];
      if (!onlyBugs || expect["verdict"] == "not_equivalent")
        QTest::newRow(f.stem().string().c_str()) << QString::fromStdString(f.string());
    }
  }

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void fixturesCarryExpectations() {
    auto files = fixtureFiles();
    QVERIFY2(files.size() >= 15, "run tests/fixtures/plans/make_fixtures.py");
    int bugs = 0;
    for (const auto& f : files) {
      Json plan = readJson(f.string());
      const Json& expect = plan["metadata"]["expect"];
      QVERIFY2(expect.contains("verdict") && expect.contains("why"), f.string().c_str());
      if (expect["verdict"] == "not_equivalent") {
        ++bugs;
        QVERIFY2(expect["scope"].is_string() && expect["device"].is_number_integer(), f.string().c_str());
      }
    }
    QVERIFY(bugs >= 8);
  }

  // The committed files are exactly what the generator writes (it also re-checks every expectation with
  // its own concrete evaluator and fails if one is wrong).
  void fixturesAreUpToDate() {
    QProcess py;
    py.start("python3", {QString::fromStdString(plansDir() + "/make_fixtures.py"), tmp_.path()});
    if (!py.waitForStarted(10000)) QSKIP("python3 is not available");
    QVERIFY(py.waitForFinished(120000));
    QVERIFY2(py.exitCode() == 0, py.readAll().constData());
    for (const auto& f : fixtureFiles()) {
      QFile committed(QString::fromStdString(f.string()));
      QFile fresh(tmp_.filePath(QString::fromStdString(f.filename().string())));
      QVERIFY(committed.open(QIODevice::ReadOnly));
      QVERIFY2(fresh.open(QIODevice::ReadOnly), "the generator no longer writes this fixture");
      QVERIFY2(committed.readAll() == fresh.readAll(), f.string().c_str());
    }
  }

  void verdictMatchesExpectation_data() { addFixtureRows(false); }
  void verdictMatchesExpectation() {
    QFETCH(QString, path);
    const Json expect = readJson(path.toStdString())["metadata"]["expect"];
    const Run& run = verifyFixture(path);
    const std::string verdict = expect["verdict"];
    QVERIFY2(run.exitCode == expectedExitCode(verdict), qPrintable(run.output));
    QVERIFY2(run.report.is_object(), "no JSON report written");
    QCOMPARE(run.report.value("verdict", ""), verdict);
    QVERIFY(!run.report["stages"].empty());
    if (verdict == "equivalent")
      for (const Json& s : run.report["stages"])
        QCOMPARE(s.value("verdict", ""), std::string("verified"));
  }

  void bugIsLocalisedWithConfirmedCounterexample_data() { addFixtureRows(true); }
  void bugIsLocalisedWithConfirmedCounterexample() {
    QFETCH(QString, path);
    const Json expect = readJson(path.toStdString())["metadata"]["expect"];
    const Run& run = verifyFixture(path);
    QVERIFY2(run.report.is_object(), qPrintable(run.output));
    const Json* stage = localisingStage(run.report, expect);
    QVERIFY2(stage, qPrintable("no failed stage with scope " +
                               QString::fromStdString(expect["scope"].dump()) + " naming device " +
                               QString::number(expect["device"].get<int>()) + "\n" + run.output));
    QVERIFY2(stage->contains("counterexample"), "failed stage without a counterexample");
    const Json& cex = (*stage)["counterexample"];
    QVERIFY2(cex.value("confirmed", false), "counterexample not confirmed by concrete re-evaluation");
    QVERIFY(!cex["diffs"].empty());
    QVERIFY(!cex["logical_inputs"].empty() || !cex["parallel_inputs"].empty());
  }

  // Read back from the report, the counterexample's values differ by more than rounding noise: the bug is
  // real at those inputs, not an artefact of the abstraction.
  void counterexampleValuesDifferBeyondRounding_data() { addFixtureRows(true); }
  void counterexampleValuesDifferBeyondRounding() {
    QFETCH(QString, path);
    const Run& run = verifyFixture(path);
    QVERIFY2(run.report.is_object(), qPrintable(run.output));
    int failed = 0;
    for (const Json& s : run.report["stages"]) {
      if (s.value("verdict", "") != "failed") continue;
      ++failed;
      QVERIFY2(s.contains("counterexample"), "failed stage without a counterexample");
      bool differs = false;
      for (const Json& d : s["counterexample"]["diffs"]) {
        QVERIFY(d["index"].is_array() && d["tensor"].is_string() && d["logical_tensor"].is_string());
        differs |= !solver::nearlyEqual(d["expected"].get<double>(), d["actual"].get<double>());
      }
      QVERIFY2(differs,
               qPrintable("stage " + QString::number(s.value("id", -1)) + ": no diff beyond rounding"));
    }
    QVERIFY(failed > 0);
  }
};

QTEST_APPLESS_MAIN(TestFixtures)
#include "test_fixtures.moc"
