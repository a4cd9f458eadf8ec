// Every invalid-plan fixture is rejected with the diagnostic it expects, by the library and by the CLI;
// the valid examples pass, so the checks do not cry wolf.
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"

using namespace paraproof;

namespace {

const QString kInvalidDir = PARAPROOF_FIXTURES "/invalid";
const std::string kExample = PARAPROOF_FIXTURES "/../../resources/examples/linear-dp2.json";

// Fixtures no JSON reader can read cannot carry their expectation inside themselves.
const char* const kMalformed = "malformed-json.json";
const char* const kMalformedError = "malformed JSON at line 9, column 32";
const char* const kOutOfRange = "number-out-of-range.json";  // a finding of the fuzzer
const char* const kOutOfRangeError = "/logical/ops/7/attrs/factor: number '1e705' is out of range";

// Diagnostics from loading, or from validating once loaded.
std::vector<Diagnostic> check(const std::string& path) {
  try {
    return validatePlan(loadPlan(path), path);
  } catch (const PlanError& e) {
    return e.diagnostics();
  }
}

std::string expectedError(const QString& file) {
  if (file.endsWith(kMalformed)) return kMalformedError;
  if (file.endsWith(kOutOfRange)) return kOutOfRangeError;
  std::ifstream in(file.toStdString());
  Json j = Json::parse(in);
  return j["metadata"]["expect"]["error"].get<std::string>();
}

std::string joined(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const Diagnostic& d : diags)
    s += "\n  " + d.str();
  return s;
}

void addFixtureRows() {
  QTest::addColumn<QString>("file");
  const QStringList files = QDir(kInvalidDir).entryList({"*.json"}, QDir::Files, QDir::Name);
  QVERIFY2(files.size() >= 40, "the invalid fixtures are missing");
  for (const QString& f : files)
    QTest::newRow(qPrintable(f)) << kInvalidDir + "/" + f;
}

// A two-stage pipeline: activations forward, outputs back. Both ranks block in a recv at some point, and
// the order still completes.
const char* const kPipeline = R"({
  "mesh": {"axes": ["pp"], "shape": [2]},
  "logical": {
    "inputs": [{"name": "x", "shape": [2, 3], "dtype": "f32"}, {"name": "w1", "shape": [3, 3], "dtype": "f32"}],
    "ops": [{"id": "fc", "op": "linear", "inputs": ["x", "w1"], "outputs": ["h"]},
            {"id": "act", "op": "relu", "inputs": ["h"], "outputs": ["y"]}],
    "outputs": ["y"]},
  "devices": [
    {"rank": 0, "coord": [0],
     "inputs": [{"name": "x", "shape": [2, 3], "dtype": "f32"}, {"name": "w1", "shape": [3, 3], "dtype": "f32"}],
     "ops": [{"id": "fc", "op": "linear", "inputs": ["x", "w1"], "outputs": ["h"]},
             {"id": "send_h", "op": "send", "inputs": ["h"], "outputs": [], "attrs": {"peer": 1, "instance": "act"}},
             {"id": "recv_y", "op": "recv", "inputs": [], "outputs": ["y"],
              "attrs": {"peer": 1, "instance": "out", "shape": [2, 3], "dtype": "f32"}}],
     "outputs": ["y"],
     "lineage": {"x": {"tensor": "x"}, "w1": {"tensor": "w1"}, "h": {"tensor": "h"}, "y": {"tensor": "y"}}},
    {"rank": 1, "coord": [1],
     "inputs": [],
     "ops": [{"id": "recv_h", "op": "recv", "inputs": [], "outputs": ["h"],
              "attrs": {"peer": 0, "instance": "act", "shape": [2, 3], "dtype": "f32"}},
             {"id": "act", "op": "relu", "inputs": ["h"], "outputs": ["y"]},
             {"id": "send_y", "op": "send", "inputs": ["y"], "outputs": [], "attrs": {"peer": 0, "instance": "out"}}],
     "outputs": ["y"],
     "lineage": {"h": {"tensor": "h"}, "y": {"tensor": "y"}}}]})";

}  // namespace

class TestValidation : public QObject {
  Q_OBJECT
 private slots:
  void theExamplePlanIsValid() {
    std::vector<Diagnostic> diags = check(kExample);
    QVERIFY2(diags.empty(), joined(diags).c_str());
  }

  void aPipelineThatBlocksInRecvsStillCompletes() {
    std::vector<Diagnostic> diags = validatePlan(planFromJson(Json::parse(kPipeline)));
    QVERIFY2(diags.empty(), joined(diags).c_str());
  }

  // Value parts (k of n) on different devices, all among the outputs, cover the logical tensor.
  void aCompleteValuePartGroupCoversAnOutput() {
    Json j = Json::parse(kPipeline);
    for (int k = 0; k < 2; ++k) {
      Json& d = j["devices"][k];
      d["ops"].push_back({{"id", "half"},
                          {"op", "scale"},
                          {"inputs", {"y"}},
                          {"outputs", {"y_half"}},
                          {"attrs", {{"factor", 0.5}}}});
      d["outputs"] = {"y_half"};
      d["lineage"]["y_half"] = {{"tensor", "y"}, {"part", k}, {"parts", 2}};
    }
    std::vector<Diagnostic> diags = validatePlan(planFromJson(j));
    QVERIFY2(diags.empty(), joined(diags).c_str());
    // Without rank 1's part among the outputs, y is no longer covered.
    j["devices"][1]["outputs"] = Json::array();
    diags = validatePlan(planFromJson(j));
    QCOMPARE(diags.size(), size_t(1));
    QVERIFY2(diags[0].message.find("logical output 'y' is not covered") == 0, diags[0].message.c_str());
  }

  // Diagnostics are collected, not stopped at the first: two unrelated problems, two messages.
  void validationReportsEveryProblem() {
    Plan p = loadPlan(kExample);
    p.devices[1].coord = {5};
    p.devices[0].lineage.begin()->second.tensor = "nope";
    std::vector<Diagnostic> diags = validatePlan(p, "plan.json");
    QCOMPARE(diags.size(), size_t(2));
    QCOMPARE(diags[0].where, std::string("plan.json:/devices/1/coord"));
    QVERIFY(diags[1].where.find("plan.json:/devices/0/lineage/") == 0);
  }

  // A large plan is validated on two threads (validate.cpp): the diagnostics are those of a serial run, in
  // its order (mesh, then lineage, then communication).
  void aLargePlanReportsInTheSerialOrder() {
    parallel::GenerateOptions o;
    o.layers = 8;
    o.compact = false;
    Plan p = parallel::generatePlan(*models::findModel("llama-micro"),
                                    parallel::parseParallel("dp=4,tp=2,pp=2,mb=6"), o);
    size_t ops = 0;
    for (const Device& d : p.devices)
      ops += d.graph.ops.size();
    QVERIFY2(ops >= 20000, std::to_string(ops).c_str());  // the two-thread path
    QVERIFY(validatePlan(p).empty());
    p.devices[1].coord = {9, 9, 9};
    p.devices[0].lineage.begin()->second.tensor = "nope";
    for (Op& op : p.devices[3].graph.ops)
      if (op.kind == "all_reduce") {
        op.attrs.set("instance", "nowhere");
        break;
      }
    const std::vector<Diagnostic> diags = validatePlan(p, "plan.json");
    QVERIFY(diags.size() >= 3);
    QCOMPARE(diags[0].where, std::string("plan.json:/devices/1/coord"));
    QVERIFY2(diags[1].where.find("plan.json:/devices/0/lineage/") == 0, diags[1].where.c_str());
    QVERIFY2(joined(diags).find("nowhere") != std::string::npos, joined(diags).c_str());
    QVERIFY(diags.back().message.find("nope") == std::string::npos);
  }

  // Value-part groups with a part missing everywhere: one diagnostic each, at the first device holding the
  // group, in the order of (tensor name, box, parts), however the groups are stored.
  void missingValuePartsAreReportedOnceEachInNameOrder() {
    parallel::GenerateOptions o;
    o.layers = 2;
    o.compact = false;
    Plan p =
        parallel::generatePlan(*models::findModel("llama-micro"), parallel::parseParallel("dp=2,tp=2"), o);
    QVERIFY(validatePlan(p).empty());
    std::set<std::string> partial;  // logical tensors held as value parts
    for (const Device& d : p.devices)
      for (const auto& [v, l] : d.lineage)
        if (l.parts > 1) partial.insert(l.tensor);
    QVERIFY2(partial.size() >= 2, std::to_string(partial.size()).c_str());
    // The last two by name lose every part but part 0 (every device now calls its piece part 0).
    const std::string second = *std::prev(partial.end()), first = *std::prev(partial.end(), 2);
    for (Device& d : p.devices)
      for (auto& [v, l] : d.lineage)
        if (l.tensor == first || l.tensor == second) l.part = 0;
    // Expected: each group (tensor, box, parts) in that order, at the first device that holds it.
    std::map<std::tuple<std::string, Box, int>, size_t> holder;
    for (size_t i = 0; i < p.devices.size(); ++i)
      for (const auto& [v, l] : p.devices[i].lineage)
        if (l.parts > 1 && (l.tensor == first || l.tensor == second))
          holder.emplace(std::tuple{l.tensor, l.box, l.parts}, i);
    std::vector<Diagnostic> parts;
    for (const Diagnostic& d : validatePlan(p, "plan.json"))
      if (d.message.find("value parts of") == 0) parts.push_back(d);
    QCOMPARE(parts.size(), holder.size());
    size_t k = 0;
    for (const auto& [group, device] : holder) {
      const Diagnostic& d = parts[k++];
      const std::string named = "value parts of '" + std::get<0>(group) + "' ";
      QVERIFY2(d.message.find(named) == 0, d.message.c_str());
      QVERIFY2(d.message.find("is missing on every device") != std::string::npos, d.message.c_str());
      const std::string at = "plan.json:/devices/" + std::to_string(device) + "/lineage/";
      QVERIFY2(d.where.find(at) == 0, (d.where + " expected at " + at).c_str());
    }
    QVERIFY(parts.front().message.find(first) != std::string::npos);
    QVERIFY(parts.back().message.find(second) != std::string::npos);
  }

  void eachInvalidFixtureIsRejectedWithItsDiagnostic_data() { addFixtureRows(); }
  void eachInvalidFixtureIsRejectedWithItsDiagnostic() {
    QFETCH(QString, file);
    std::string expected = expectedError(file);
    std::vector<Diagnostic> diags = check(file.toStdString());
    QVERIFY2(!diags.empty(), "accepted as valid");
    bool found = false;
    for (const Diagnostic& d : diags)
      found = found || d.str().find(expected) != std::string::npos;
    QVERIFY2(found, ("expected \"" + expected + "\" among:" + joined(diags)).c_str());
    // Every diagnostic names the file it is about.
    for (const Diagnostic& d : diags)
      QVERIFY2(d.where.find(file.toStdString()) == 0, d.str().c_str());
  }

  void theCliExitsWith2OnEachInvalidFixture_data() { addFixtureRows(); }
  void theCliExitsWith2OnEachInvalidFixture() {
    QFETCH(QString, file);
    QProcess cli;
    cli.start(PARAPROOF_CLI, {"verify", file});
    QVERIFY(cli.waitForFinished(60000));
    QString err = QString::fromUtf8(cli.readAllStandardError());
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 2);
    QVERIFY2(err.contains(QString::fromStdString(expectedError(file))), qPrintable(err));
  }
};

QTEST_APPLESS_MAIN(TestValidation)
#include "test_validation.moc"
