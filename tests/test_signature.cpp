// Stage signatures decide which stages share one check without lowering them. The soundness condition:
// equal signatures must mean equal lowered problems (equal canonical hashes). Checked here on generated plans
// of every strategy and on every fixture, by lowering every stage; and a signature must tell apart stages
// that differ in one attribute, one rank or one lineage offset.
#include <QtTest>
#include <filesystem>
#include <map>
#include <set>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/stage/canonical.h"
#include "core/stage/lower.h"
#include "core/stage/reduce.h"
#include "core/stage/signature.h"

using namespace paraproof;

namespace {

struct Counts {
  size_t stages = 0, signatures = 0, hashes = 0;
};

// Lowers every stage and returns the first stage pair with equal signatures but different problems, if any.
QString firstMismatch(const Plan& plan, Counts& counts) {
  const stage::ReducedPlan reduced = stage::reducePlan(plan);
  const Plan& work = reduced.plan;
  const std::vector<stage::Stage> stages = stage::cutStages(work);
  const stage::IntDomains domains = stage::intDomains(work);
  std::map<std::string, std::pair<int, std::string>> bySignature;  // signature -> (first stage, its hash)
  std::set<std::string> hashes;
  counts.stages += stages.size();
  for (size_t i = 0; i < stages.size(); ++i) {
    std::string hash;
    try {
      hash = stage::canonicalHash(stage::lowerStage(work, stages[i], domains));
    } catch (const std::exception& e) {
      hash = std::string("error: ") + e.what();
    }
    hashes.insert(hash);
    auto [it, fresh] = bySignature.emplace(stage::stageSignature(work, stages[i], domains),
                                           std::make_pair(static_cast<int>(i), hash));
    if (!fresh && it->second.second != hash && hash.rfind("error", 0) != 0)
      return QString("%1: stages %2 and %3 have one signature but lower differently")
          .arg(QString::fromStdString(plan.name))
          .arg(it->second.first)
          .arg(i);
  }
  counts.signatures += bySignature.size();
  counts.hashes += hashes.size();
  return {};
}

Plan generated(const std::string& model, const std::string& par, int layers) {
  parallel::GenerateOptions o;
  o.layers = layers;
  return parallel::generatePlan(*models::findModel(model), parallel::parseParallel(par), o);
}

}  // namespace

class TestSignature : public QObject {
  Q_OBJECT
 private slots:
  void equalSignaturesMeanEqualProblemsOnGeneratedPlans_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<int>("layers");
    for (const char* p : {"dp=2", "tp=2", "dp=2,tp=2,pp=2,mb=2", "dp=2,tp=2,sp,zero=1",
                          "pp=2,mb=3,schedule=gpipe", "dp=2,cp=2", "dp=2,zero=3"})
      QTest::newRow((std::string("llama-micro ") + p).c_str()) << "llama-micro" << p << 2;
    QTest::newRow("gpt-micro tp=2 pp=2 mb=2") << "gpt-micro"
                                              << "tp=2,pp=2,mb=2" << 2;
    QTest::newRow("dsv3-micro dp=2 ep=2 tp=2") << "dsv3-micro"
                                               << "dp=2,ep=2,tp=2" << 2;
    QTest::newRow("dsv3-micro dp=2 pp=2 mb=2 ep=2") << "dsv3-micro"
                                                    << "dp=2,pp=2,mb=2,ep=2" << 2;
  }
  void equalSignaturesMeanEqualProblemsOnGeneratedPlans() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    QFETCH(int, layers);
    Counts c;
    const QString mismatch = firstMismatch(generated(model.toStdString(), parallel.toStdString(), layers), c);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    // Signatures are what makes the dedup cheap: they must find most of what the canonical hash finds.
    qInfo("%zu stages, %zu signatures, %zu canonical problems", c.stages, c.signatures, c.hashes);
    QVERIFY(c.signatures < c.stages);
  }

  // A bug makes one rank's stages differ from their replicas': these must not share a signature.
  void equalSignaturesMeanEqualProblemsWithEveryCatalogBug_data() {
    QTest::addColumn<QString>("bug");
    for (const parallel::BugEntry& bug : parallel::bugCatalog())
      QTest::newRow(bug.id.c_str()) << QString::fromStdString(bug.id);
  }
  void equalSignaturesMeanEqualProblemsWithEveryCatalogBug() {
    QFETCH(QString, bug);
    const parallel::BugEntry& entry = *parallel::findBug(bug.toStdString());
    parallel::GenerateOptions o;
    o.layers = 2;
    o.inject = entry.id;
    Plan plan =
        parallel::generatePlan(*models::findModel(entry.model), parallel::parseParallel(entry.parallel), o);
    Counts c;
    const QString mismatch = firstMismatch(plan, c);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
  }

  void equalSignaturesMeanEqualProblemsOnFixtures() {
    Counts c;
    for (const char* dir : {"plans", "soundness"})
      for (const auto& e : std::filesystem::directory_iterator(std::string(PARAPROOF_FIXTURES) + "/" + dir)) {
        if (e.path().extension() != ".json") continue;
        Plan plan;
        try {
          plan = loadPlan(e.path().string());
          if (!validatePlan(plan).empty()) continue;
        } catch (const std::exception&) {
          continue;  // the invalid fixtures of this folder
        }
        const QString mismatch = firstMismatch(plan, c);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
      }
    QVERIFY(c.stages > 100);
  }

  // The other direction: what tells two stages apart must reach the signature.
  void oneChangedAttributeRankOrOffsetChangesTheSignature() {
    const Plan base = generated("llama-micro", "dp=2,tp=2", 2);
    const stage::IntDomains domains = stage::intDomains(base);
    const std::vector<stage::Stage> stages = stage::cutStages(base);
    auto signatures = [&](const Plan& p) {
      std::vector<std::string> s;
      for (const auto& st : stages)
        s.push_back(stage::stageSignature(p, st, domains));
      return s;
    };
    const std::vector<std::string> before = signatures(base);
    auto changedStages = [&](const Plan& p) {
      const std::vector<std::string> after = signatures(p);
      int n = 0;
      for (size_t i = 0; i < after.size(); ++i)
        n += after[i] != before[i];
      return n;
    };
    // Find one op of rank 1 with an `eps`, one collective and one sliced input.
    Plan eps = base, group = base, offset = base;
    bool haveEps = false, haveGroup = false, haveOffset = false;
    for (Op& op : eps.devices[1].graph.ops)
      if (!haveEps && op.attrs.contains("eps")) {
        op.attrs.set("eps", 1e-3);
        haveEps = true;
      }
    for (Op& op : group.devices[1].graph.ops)
      if (!haveGroup && op.attrs.contains("group") && op.attrs["group"].size() == 2) {
        Json& g = op.attrs.edit()["group"];
        std::swap(g[0], g[1]);
        haveGroup = true;
      }
    for (auto& [v, lin] : offset.devices[1].lineage)
      if (!haveOffset && !lin.box.ranges.empty() && lin.box.ranges[0].second - lin.box.ranges[0].first > 1) {
        lin.box.ranges[0].first += 1;
        haveOffset = true;
      }
    QVERIFY(haveEps && haveGroup && haveOffset);
    QVERIFY(changedStages(eps) >= 1);
    QVERIFY(changedStages(group) >= 1);
    QVERIFY(changedStages(offset) >= 1);
  }
};

QTEST_GUILESS_MAIN(TestSignature)
#include "test_signature.moc"
