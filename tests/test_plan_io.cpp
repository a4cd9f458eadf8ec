// Plan format v1: loading with precise error places, lossless round trip, atomic save, load speed.
#include <QtTest>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/gzip.h"
#include "core/plan/json_io.h"
#include "core/plan/json_text.h"
#include "core/plan/validate.h"

using namespace paraproof;

namespace {

const std::string kExample = PARAPROOF_FIXTURES "/../../resources/examples/linear-dp2.json";

Json readJson(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

// The diagnostics of a plan that must fail to load (empty if it loads).
std::vector<Diagnostic> loadErrors(const Json& j, const std::string& source = "plan.json") {
  try {
    planFromJson(j, source);
  } catch (const PlanError& e) {
    return e.diagnostics();
  }
  return {};
}

bool sameGraph(const Graph& a, const Graph& b) {
  if (a.values.size() != b.values.size() || a.ops.size() != b.ops.size() || a.inputs != b.inputs ||
      a.outputs != b.outputs)
    return false;
  for (size_t v = 0; v < a.values.size(); ++v) {
    const Value &x = a.values[v], &y = b.values[v];
    if (x.name != y.name || x.type != y.type || x.producer != y.producer ||
        x.producerOutput != y.producerOutput)
      return false;
  }
  for (size_t o = 0; o < a.ops.size(); ++o) {
    const Op &x = a.ops[o], &y = b.ops[o];
    if (x.id != y.id || x.kind != y.kind || x.inputs != y.inputs || x.outputs != y.outputs ||
        x.attrs != y.attrs || x.scope != y.scope || x.origin != y.origin)
      return false;
  }
  return true;
}

bool samePlan(const Plan& a, const Plan& b) {
  if (a.name != b.name || a.mesh.axes != b.mesh.axes || a.mesh.shape != b.mesh.shape ||
      a.metadata != b.metadata || a.state != b.state || !sameGraph(a.logical, b.logical) ||
      a.devices.size() != b.devices.size())
    return false;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const Device &x = a.devices[i], &y = b.devices[i];
    if (x.rank != y.rank || x.coord != y.coord || x.lineage != y.lineage || !sameGraph(x.graph, y.graph))
      return false;
  }
  return true;
}

// A plan using every feature of the format: explicit output types, omitted and explicit boxes, value parts,
// scopes, origins, nested metadata, a 2-axis mesh, send/recv with declared shapes.
Json featurePlan() {
  return Json::parse(R"({
    "format": "paraproof-plan", "version": 1, "name": "features",
    "mesh": {"axes": ["dp", "tp"], "shape": [1, 2]},
    "metadata": {"generator": {"model": "toy", "layers": [1, 2]}, "note": null},
    "logical": {
      "inputs": [{"name": "x", "shape": [2, 4], "dtype": "f32"}, {"name": "w", "shape": [3, 4], "dtype": "bf16"}],
      "ops": [],
      "outputs": []
    },
    "devices": []
  })");
}

}  // namespace

class TestPlanIo : public QObject {
  Q_OBJECT
 private slots:
  void loadsTheDataParallelExample() {
    Plan p = loadPlan(kExample);
    QCOMPARE(p.name, std::string("linear-dp2"));
    QCOMPARE(p.devices.size(), size_t(2));
    const Device& d1 = p.devices[1];
    // Types are inferred by the registry: the local batch is 2 rows.
    QCOMPARE(d1.graph.values[d1.graph.findValue("y")].type.shape, (Shape{2, 2}));
    QCOMPARE(p.logical.values[p.logical.findValue("loss")].type.shape, Shape{});
    // An omitted box is the whole logical tensor; an explicit one is kept.
    QCOMPARE(d1.lineage.at(d1.graph.findValue("w")).box.ranges,
             (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {0, 3}}));
    QCOMPARE(d1.lineage.at(d1.graph.findValue("x")).box.ranges,
             (std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {0, 3}}));
    QCOMPARE(d1.graph.ops[d1.graph.findOp("grad_avg")].attrs["reduce"], Json("avg"));
    QCOMPARE(d1.graph.ops[d1.graph.findOp("fc")].origin, std::string("fc"));
    QCOMPARE(d1.graph.ops[d1.graph.findOp("fc")].scope, std::string("model.fc"));
    std::vector<Diagnostic> problems = validatePlan(p, kExample);
    for (const Diagnostic& d : problems)
      qWarning("%s", d.str().c_str());
    QVERIFY(problems.empty());
  }

  void writingTheExampleGivesBackTheSameJson() {
    Json j = readJson(kExample);
    QCOMPARE(planToJson(planFromJson(j)), j);
  }

  void roundTripKeepsEveryField() {
    Json j = featurePlan();
    j["logical"]["outputs"] = {"h"};
    j["logical"]["ops"] = Json::parse(R"([
      {"id": "wt", "op": "transpose", "inputs": ["w"], "outputs": [{"name": "w_t", "shape": [4, 3], "dtype": "bf16"}],
       "attrs": {"perm": [1, 0]}, "scope": "mlp"},
      {"id": "cast", "op": "cast", "inputs": ["w_t"], "outputs": ["w_t32"], "attrs": {"dtype": "f32"}},
      {"id": "fc", "op": "matmul", "inputs": ["x", "w_t32"], "outputs": ["h"], "scope": "mlp.fc"}])");
    j["devices"] = Json::parse(R"([
      {"rank": 0, "coord": [0, 0],
       "inputs": [{"name": "x", "shape": [2, 2], "dtype": "f32"}, {"name": "w", "shape": [3, 2], "dtype": "f32"}],
       "ops": [{"id": "fc", "op": "linear", "inputs": ["x", "w"], "outputs": ["h_part"], "origin": "fc"},
               {"id": "s", "op": "send", "inputs": ["h_part"], "outputs": [], "attrs": {"peer": 1, "instance": "p0"}}],
       "outputs": ["h_part"],
       "lineage": {"x": {"tensor": "x", "box": [[0, 2], [0, 2]]},
                   "h_part": {"tensor": "h", "part": 0, "parts": 2}}},
      {"rank": 1, "coord": [0, 1],
       "inputs": [{"name": "x", "shape": [2, 2], "dtype": "f32"}],
       "ops": [{"id": "r", "op": "recv", "inputs": [], "outputs": ["h0"],
                "attrs": {"peer": 0, "instance": "p0", "shape": [2, 3], "dtype": "f32"}}],
       "outputs": ["h0"],
       "lineage": {"x": {"tensor": "x", "box": [[0, 2], [2, 4]]}}}])");
    Plan p = planFromJson(j);
    Plan again = planFromJson(planToJson(p));
    QVERIFY(samePlan(p, again));
    QCOMPARE(again.devices[0].lineage.at(again.devices[0].graph.findValue("h_part")),
             (Lineage{"h", Box{{{0, 2}, {0, 3}}}, 0, 2}));
    QCOMPARE(again.metadata["generator"]["layers"], Json::parse("[1, 2]"));
    QCOMPARE(again.logical.values[again.logical.findValue("w_t")].type.dtype, DType::BF16);
    // A second trip is a fixed point of the writer.
    QCOMPARE(planToJson(again), planToJson(p));
  }

  void lineageHintsNameTheirTensorAndAStaleOneIsNotBelieved() {
    // plan.h: loading and generation set every lineage's hint to its tensor's logical id, which the passes
    // read instead of looking the name up; a hint naming another value costs a lookup, never an answer.
    parallel::GenerateOptions options;
    options.layers = 2;
    std::vector<Plan> plans;
    plans.push_back(loadPlan(kExample));
    plans.push_back(parallel::generatePlan(*models::findModel("llama3-8b"),
                                           parallel::parseParallel("dp=2,tp=2,pp=2,mb=2"), options));
    for (Plan& p : plans) {
      const std::vector<Diagnostic> before = validatePlan(p);
      QVERIFY(before.empty());
      size_t hinted = 0;
      for (Device& d : p.devices)
        for (auto& [v, l] : d.lineage) {
          QCOMPARE(l.logical, p.logical.findValue(l.tensor));
          hinted += l.logical != kNone;
          const Lineage as = l;
          l.logical = (l.logical + 1) % static_cast<ValueId>(p.logical.values.size());  // another value
          QCOMPARE(lineageValue(p.logical, l), as.logical);
          QVERIFY(l == as);  // the hint is not part of the lineage
        }
      QVERIFY(hinted > 0);
      QCOMPARE(validatePlan(p).size(), before.size());  // every hint stale: the same plan
    }
  }

  void savePlanWritesAtomicallyAndLoadsBack() {
    QTemporaryDir dir;
    std::string path = dir.filePath("plan.json").toStdString();
    Plan p = loadPlan(kExample);
    savePlan(p, path);
    savePlan(p, path);  // overwrite in place
    QVERIFY(samePlan(loadPlan(path), p));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"plan.json"});  // no temporary left behind
  }

  // A plan of 20,000 ops or more is written one device at a time (json_io.cpp): the very text of the whole
  // document, which a small plan is written as.
  void aLargePlanIsWrittenAsTheWholeDocument() {
    parallel::GenerateOptions o;
    o.layers = 8;
    o.compact = false;
    const Plan p = parallel::generatePlan(*models::findModel("llama-micro"),
                                          parallel::parseParallel("dp=4,tp=2,pp=2,mb=6"), o);
    size_t ops = 0;
    for (const Device& d : p.devices)
      ops += d.graph.ops.size();
    QVERIFY2(ops >= 20000, std::to_string(ops).c_str());
    QTemporaryDir dir;
    const std::string path = dir.filePath("large.json").toStdString();
    savePlan(p, path);
    std::ifstream in(path, std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QVERIFY(written == planjson::formatJson(planToJson(p)));
  }

  // The naming rules (core/plan/value_names.h): names built with them parse back to their copy, chunk and
  // collective; step-wide names and look-alikes are no copies.
  void valueNamesParseWhatTheyBuild() {
    for (int m : {0, 1, 9, 10, 123}) {
      const std::string name = names::collectiveOutput(
          "layers.0.mlp.w2.out" + names::microBatchSuffix(m, 200) + names::chunkSuffix(1, 2),
          names::kAllReduce);
      QCOMPARE(name, "layers.0.mlp.w2.out#" + std::to_string(m) + "~c1/ar");
      QCOMPARE(copyTagOf(name).mb, m);
      QCOMPARE(copyTagOf(name).key, std::string("layers.0.mlp.w2.out#*~c1/ar"));
      QCOMPARE(names::copyMarker(name), "#" + std::to_string(m));
      int mb = -2;
      QCOMPARE(names::withoutCopyMarker(name, &mb), std::string("layers.0.mlp.w2.out~c1/ar"));
      QCOMPARE(mb, m);
    }
    QCOMPARE(names::microBatchSuffix(3, 1), std::string());  // one micro-batch: no copies
    QCOMPARE(names::chunkSuffix(0, 1), std::string());
    QCOMPARE(names::taggedBeforeCopyMarker("loss#0", "scaled"), std::string("loss.scaled#0"));
    QCOMPARE(names::taggedBeforeCopyMarker("adamw.step", "t"), std::string("adamw.step.t"));
    for (const char* stepWide : {"adamw.step", "odd#name", "x#01", "x#1234567"}) {
      int mb = -2;
      QCOMPARE(names::withoutCopyMarker(stepWide, &mb), std::string(stepWide));
      QCOMPARE(mb, -1);
      QCOMPARE(names::copyMarker(stepWide), std::string());
    }
  }

  // A plan written to PATH.gz is gzip-compressed JSON, smaller and loaded back the same; a compressed file
  // is recognised by its content whatever its name.
  void compressedPlansRoundTrip() {
    QTemporaryDir dir;
    const std::string gz = dir.filePath("plan.json.gz").toStdString();
    const std::string renamed = dir.filePath("plan.json").toStdString();
    Plan p = loadPlan(kExample);
    savePlan(p, gz);
    std::string bytes;
    {
      std::ifstream in(gz, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    QVERIFY(isGzip(bytes));
    QVERIFY(bytes.size() < std::filesystem::file_size(kExample));
    QVERIFY(samePlan(loadPlan(gz), p));
    std::filesystem::rename(gz, renamed);
    QVERIFY(samePlan(loadPlan(renamed), p));
    QCOMPARE(gzipDecompress(gzipCompress("ab") + gzipCompress("cd"), 16), std::string("abcd"));  // members
  }

  // A damaged or truncated compressed file, or one that would inflate past the limit, is a PlanError naming
  // the file, never a crash or a partial plan.
  void brokenCompressedPlansAreErrors() {
    QTemporaryDir dir;
    const std::string text = gzipCompress(std::string(4096, ' ') + "{}");
    const std::string path = dir.filePath("plan.json.gz").toStdString();
    for (const std::string& bytes :
         {text.substr(0, text.size() / 2), text.substr(0, 10) + std::string(40, 'x')}) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
      try {
        loadPlan(path);
        QFAIL("expected PlanError");
      } catch (const PlanError& e) {
        const Diagnostic& d = e.diagnostics().front();
        QCOMPARE(d.where, path);
        QVERIFY2(d.message.find("compressed plan file: not a valid gzip stream") == 0, d.message.c_str());
      }
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, gzipDecompress(text, 1000));  // 4098 bytes of text
  }

  void savePlanIntoAMissingDirectoryFailsCleanly() {
    QTemporaryDir dir;
    std::string path = dir.filePath("missing/plan.json").toStdString();
    try {
      savePlan(loadPlan(kExample), path);
      QFAIL("expected PlanError");
    } catch (const PlanError& e) {
      QCOMPARE(e.diagnostics().front().where, path);
    }
    QVERIFY(!std::filesystem::exists(path));
  }

  void malformedJsonNamesFileLineAndColumn() {
    QTemporaryDir dir;
    std::string path = dir.filePath("broken.json").toStdString();
    std::ofstream(path) << "{\n  \"name\": \"x\",\n  \"mesh\": {\"axes\": [\"dp\"] \"shape\": [2]}\n}\n";
    try {
      loadPlan(path);
      QFAIL("expected PlanError");
    } catch (const PlanError& e) {
      const Diagnostic& d = e.diagnostics().front();
      QCOMPARE(d.where, path + ":3:33");
      QVERIFY2(d.message.find("malformed JSON at line 3, column 33 (byte 50)") == 0, d.message.c_str());
    }
  }

  void missingFileIsAPlanError() {
    try {
      loadPlan("/nonexistent/plan.json");
      QFAIL("expected PlanError");
    } catch (const PlanError& e) {
      QVERIFY(std::string(e.what()).find("/nonexistent/plan.json: cannot open plan file") == 0);
    }
  }

  void errorsNameTheJsonPointer_data() {
    QTest::addColumn<QString>("mutation");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("message");
    QTest::newRow("missing field") << R"({"op": "/logical/ops/0/inputs", "remove": true})"
                                   << "plan.json:/logical/ops/0"
                                   << "missing field 'inputs'";
    QTest::newRow("ill-typed field") << R"({"op": "/logical/inputs/0/shape", "value": "4x3"})"
                                     << "plan.json:/logical/inputs/0/shape"
                                     << "shape must be a list";
    QTest::newRow("negative extent") << R"({"op": "/logical/inputs/0/shape/1", "value": -3})"
                                     << "plan.json:/logical/inputs/0/shape/1"
                                     << "must be non-negative";
    QTest::newRow("misspelt field") << R"({"op": "/devices/0/ops/4/attr", "value": {}})"
                                    << "plan.json:/devices/0/ops/4/attr"
                                    << "unknown field 'attr' in op";
    QTest::newRow("unknown op kind") << R"({"op": "/logical/ops/0/op", "value": "linaer"})"
                                     << "plan.json:/logical/ops/0/op"
                                     << "op 'fc': unknown op kind 'linaer'";
    QTest::newRow("wrong arity") << R"({"op": "/logical/ops/1/inputs/2", "value": "t"})"
                                 << "plan.json:/logical/ops/1/inputs"
                                 << "op 'err': sub takes 2 inputs, got 3";
    QTest::newRow("shape rule") << R"({"op": "/devices/1/ops/0/inputs/1", "value": "t"})"
                                << "plan.json:/devices/1/ops/0"
                                << "op 'fc': shape error: linear";
    QTest::newRow("declared shape")
        << R"({"op": "/logical/ops/0/outputs/0", "value": {"name": "y", "shape": [4, 3]}})"
        << "plan.json:/logical/ops/0/outputs/0"
        << "op 'fc': shape mismatch: output 'y' is declared [4,3] but linear infers [4,2]";
    QTest::newRow("declared dtype")
        << R"({"op": "/logical/ops/0/outputs/0", "value": {"name": "y", "dtype": "bf16"}})"
        << "plan.json:/logical/ops/0/outputs/0"
        << "dtype mismatch";
    QTest::newRow("unknown dtype") << R"({"op": "/devices/1/inputs/2/dtype", "value": "float32"})"
                                   << "plan.json:/devices/1/inputs/2/dtype"
                                   << "unknown dtype 'float32'";
    QTest::newRow("undefined tensor") << R"({"op": "/logical/ops/2/inputs/0", "value": "dif"})"
                                      << "plan.json:/logical/ops/2/inputs/0"
                                      << "op 'sq': undefined tensor 'dif'";
    QTest::newRow("used before definition")
        << R"({"op": "/logical/ops/3/inputs/0", "value": "dy"})"
        << "plan.json:/logical/ops/3/inputs/0"
        << "op 'mse': tensor 'dy' is used before its definition at /logical/ops/4";
    QTest::newRow("self cycle") << R"({"op": "/logical/ops/2/inputs/0", "value": "sq"})"
                                << "plan.json:/logical/ops/2/inputs/0"
                                << "op 'sq': cycle: sq -> sq";
    QTest::newRow("two-op cycle") << R"({"op": "/logical/ops/1/inputs/1", "value": "sq"})"
                                  << "plan.json:/logical/ops/1/inputs/1"
                                  << "op 'err': cycle: diff -> sq -> diff";
    QTest::newRow("longer cycle") << R"({"op": "/logical/ops/0/inputs/0", "value": "dy_t"})"
                                  << "plan.json:/logical/ops/0/inputs/0"
                                  << "cycle: y -> diff -> dy -> dy_t -> y";
    QTest::newRow("redefinition")
        << R"({"op": "/logical/ops/2/outputs/0", "value": "y"})"
        << "plan.json:/logical/ops/2/outputs/0"
        << "op 'sq': tensor 'y' is defined twice (redefinition; first at /logical/ops/0/outputs/0)";
    QTest::newRow("input redefined") << R"({"op": "/logical/ops/0/outputs/0", "value": "x"})"
                                     << "plan.json:/logical/ops/0/outputs/0"
                                     << "first at /logical/inputs/0";
    QTest::newRow("duplicate op id") << R"({"op": "/logical/ops/3/id", "value": "sq"})"
                                     << "plan.json:/logical/ops/3/id"
                                     << "duplicate op id 'sq' (first at /logical/ops/2)";
    QTest::newRow("graph output") << R"({"op": "/devices/0/outputs/1", "value": "w_neu"})"
                                  << "plan.json:/devices/0/outputs/1"
                                  << "graph output 'w_neu' is not defined";
    QTest::newRow("lineage of unknown tensor")
        << R"({"op": "/devices/1/lineage/z", "value": {"tensor": "x"}})"
        << "plan.json:/devices/1/lineage/z"
        << "rank 1: lineage for 'z', which is not a tensor of this device";
    QTest::newRow("escaped pointer") << R"({"op": "/devices/1/lineage/a~1b", "value": {"tensor": "x"}})"
                                     << "plan.json:/devices/1/lineage/a~1b"
                                     << "lineage for 'a/b'";
    QTest::newRow("version") << R"({"op": "/version", "value": 2})"
                             << "plan.json:/version"
                             << "unsupported plan format version 2";
    QTest::newRow("mesh") << R"({"op": "/mesh/shape", "value": [2, 1]})"
                          << "plan.json:/mesh/shape"
                          << "has 2 entries but there are 1 axes";
    QTest::newRow("rank type") << R"({"op": "/devices/1/rank", "value": "1"})"
                               << "plan.json:/devices/1/rank"
                               << "rank must be an integer, got string";
  }
  void errorsNameTheJsonPointer() {
    QFETCH(QString, mutation);
    QFETCH(QString, where);
    QFETCH(QString, message);
    Json m = Json::parse(mutation.toStdString());
    Json::json_pointer ptr(m["op"].get<std::string>());
    Json j = readJson(kExample);
    if (m.contains("remove"))
      j[ptr.parent_pointer()].erase(ptr.back());
    else
      j[ptr] = m["value"];
    std::vector<Diagnostic> diags = loadErrors(j);
    QVERIFY2(!diags.empty(), "the mutated plan loaded");
    QCOMPARE(QString::fromStdString(diags.front().where), where);
    QVERIFY2(diags.front().message.find(message.toStdString()) != std::string::npos,
             diags.front().message.c_str());
  }

  void everyBrokenDeviceIsReported() {
    Json j = readJson(kExample);
    j["devices"][0]["ops"][0]["op"] = "linaer";
    j["devices"][1]["inputs"][0]["dtype"] = "f31";
    std::vector<Diagnostic> diags = loadErrors(j);
    QCOMPARE(diags.size(), size_t(2));
    QCOMPARE(diags[0].where, std::string("plan.json:/devices/0/ops/0/op"));
    QCOMPARE(diags[1].where, std::string("plan.json:/devices/1/inputs/0/dtype"));
  }

  void nonObjectDocumentIsAnError() {
    std::vector<Diagnostic> diags = loadErrors(Json::array());
    QCOMPARE(diags.size(), size_t(1));
    QCOMPARE(diags[0].str(), std::string("plan.json: plan must be an object, got array []"));
  }

  // 100k ops load and validate; the timings are logged, not asserted (a quadratic step would need hours and
  // meet the test timeout).
  void largePlansLoadInLinearTime() {
    const int n = 50000;
    Json ops = Json::array();
    std::string prev = "x";
    for (int i = 0; i < n; ++i) {
      std::string out = "v" + std::to_string(i);
      ops.push_back(
          {{"id", "op" + std::to_string(i)}, {"op", "add"}, {"inputs", {prev, "x"}}, {"outputs", {out}}});
      prev = out;
    }
    Json graph{{"inputs", {{{"name", "x"}, {"shape", {2, 2}}, {"dtype", "f32"}}}},
               {"ops", ops},
               {"outputs", {prev}}};
    Json j{{"mesh", {{"axes", {"dp"}}, {"shape", {1}}}}, {"logical", graph}};
    Json device = graph;
    device["rank"] = 0;
    device["coord"] = {0};
    device["lineage"] = {{"x", {{"tensor", "x"}}}, {prev, {{"tensor", prev}}}};
    j["devices"] = {device};
    auto start = std::chrono::steady_clock::now();
    Plan p = planFromJson(j);
    auto loaded = std::chrono::steady_clock::now();
    QVERIFY(validatePlan(p).empty());
    auto validated = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
    };
    qInfo("2 x %d ops: load %lld ms, validate %lld ms", n, static_cast<long long>(ms(start, loaded)),
          static_cast<long long>(ms(loaded, validated)));
  }
};

QTEST_APPLESS_MAIN(TestPlanIo)
#include "test_plan_io.moc"
