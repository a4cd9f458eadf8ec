// Stage signatures decide which stages share one check without lowering them. The soundness condition:
// equal signatures must mean equal lowered problems (equal canonical hashes). Checked here on generated plans
// of every strategy and on every fixture, by lowering every stage; and a signature must tell apart stages
// that differ in one attribute, one rank or one lineage offset.
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/stage/canonical.h"
#include "core/stage/count_degree.h"
#include "core/stage/fold.h"
#include "core/stage/lower.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/reduce.h"
#include "core/stage/signature.h"
#include "fixture_plans.h"

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

// Condition D for the folds is computed once per class of equal signature and fold marks (verify.cpp,
// `foldCountsNeeded`): the plan folded and reduced as the verifier does, every stage's counts computed, and
// the first class whose stages need different counts returned, if any.
QString firstFoldCountMismatch(const Plan& given, size_t& stagesSeen, size_t& classes) {
  const stage::FoldedPlan replicas = stage::foldReplicas(given, "dp", 0);
  const Plan& r = replicas.folded ? replicas.plan : given;
  const stage::FoldedPlan copies = stage::foldMicroBatches(r, 0, &replicas.parameter);
  const Plan& folded = copies.folded ? copies.plan : r;
  std::vector<std::pair<ValueId, int>> keep;
  for (const stage::FoldedPlan* f : {&replicas, &copies})
    if (f->folded) keep.insert(keep.end(), f->scaled.begin(), f->scaled.end());
  const stage::ReducedPlan reduced = stage::reducePlan(folded, 0, keep);
  const Plan& work = reduced.plan;
  const std::vector<stage::Stage> stages = stage::cutStages(work);
  const stage::IntDomains domains = stage::intDomains(work);
  for (const stage::FoldParameter* t :
       {copies.folded ? &copies.carried : &replicas.parameter, &copies.parameter}) {
    if (t->empty()) continue;
    const stage::FoldIndex index(*t);
    std::map<std::string, std::pair<size_t, int>> byClass;  // signature + marks -> (first stage, its counts)
    for (size_t i = 0; i < stages.size(); ++i) {
      const stage::MarkedSignature m = stage::markedSignature(work, stages[i], domains, {&index});
      if (m.plain != stage::stageSignature(work, stages[i], domains))
        return QString("stage %1: the marked signature's plain part is not the signature").arg(i);
      const int need = stage::countsNeeded(work, stages[i], index);
      const auto [it, fresh] = byClass.emplace(m.plain + m.marks.at(0), std::pair{i, need});
      if (!fresh && it->second.second != need)
        return QString("%1: stages %2 and %3 have one signature and fold marks but need %4 and %5 counts")
            .arg(QString::fromStdString(given.name))
            .arg(it->second.first)
            .arg(i)
            .arg(it->second.second)
            .arg(need);
    }
    stagesSeen += stages.size();
    classes += byClass.size();
  }
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
    testing::forEachValidFixturePlan([&](const Plan& plan) {
      const QString mismatch = firstMismatch(plan, c);
      QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    });
    QVERIFY(c.stages > 100);
  }

  // Stages of one class (signature and fold marks) need the same fold counts: generated plans whose
  // replicas and micro-batches fold, with every strategy, and every catalog bug at dp=8.
  void equalFoldMarksMeanEqualFoldCounts_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<QString>("bug");
    for (const char* p : {"dp=4,tp=2,pp=2,mb=4", "dp=8,tp=2,mb=4", "dp=4,cp=2,mb=2", "dp=4,tp=2,sp,mb=2",
                          "dp=4,pp=2,mb=4,schedule=gpipe"})
      QTest::newRow((std::string("llama-micro ") + p).c_str()) << "llama-micro" << p << "";
    QTest::newRow("gpt-micro dp=4 tp=2 pp=2 mb=2") << "gpt-micro"
                                                   << "dp=4,tp=2,pp=2,mb=2"
                                                   << "";
    QTest::newRow("dsv3-micro dp=4 tp=2 mb=2") << "dsv3-micro"
                                               << "dp=4,tp=2,mb=2"
                                               << "";
    for (const parallel::BugEntry& bug : parallel::bugCatalog())
      QTest::newRow(bug.id.c_str()) << QString::fromStdString(bug.model)
                                    << QString::fromStdString(bug.parallel) << QString::fromStdString(bug.id);
  }
  void equalFoldMarksMeanEqualFoldCounts() {
    QFETCH(QString, model);
    QFETCH(QString, parallel);
    QFETCH(QString, bug);
    parallel::GenerateOptions o;
    o.layers = 2;
    o.inject = bug.toStdString();
    parallel::ParallelSpec spec = parallel::parseParallel(parallel.toStdString());
    if (!bug.isEmpty() && spec.dp < 8) spec.dp = 8;  // a bug on one replica folds from eight (test_fold)
    Plan plan;
    try {
      plan = parallel::generatePlan(*models::findModel(model.toStdString()), spec, o);
    } catch (const std::exception& e) {
      QSKIP(e.what());  // a bug whose site needs the catalog's own mesh
    }
    size_t stages = 0, classes = 0;
    const QString mismatch = firstFoldCountMismatch(plan, stages, classes);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    qInfo("%zu stages in %zu classes", stages, classes);
    if (bug.isEmpty())  // the strategies fold: one analysis serves several stages
      QVERIFY2(classes > 0 && classes < stages, qPrintable(QString("%1 of %2").arg(classes).arg(stages)));
  }

  // What condition D reads beyond the signature must reach the marks: one varying value, one scaled logical
  // axis or one summing collective more changes the marks of the stages that hold it, never the signature.
  void oneChangedFoldMarkChangesTheMarks() {
    const Plan plan = generated("llama-micro", "dp=4,tp=2,mb=2", 2);
    const stage::FoldedPlan replicas = stage::foldReplicas(plan, "dp", 0);
    QVERIFY(replicas.folded);
    const Plan& work = replicas.plan;
    const std::vector<stage::Stage> stages = stage::cutStages(work);
    const stage::IntDomains domains = stage::intDomains(work);
    const stage::FoldParameter base = replicas.parameter;
    auto marksChanged = [&](const stage::FoldParameter& changed) {
      const stage::FoldIndex a(base), b(changed);
      int n = 0;
      for (const stage::Stage& st : stages) {
        const stage::MarkedSignature ma = stage::markedSignature(work, st, domains, {&a, &b});
        if (ma.plain != stage::stageSignature(work, st, domains)) return -1;
        n += ma.marks[0] != ma.marks[1];
      }
      return n;
    };
    // A device value produced by a stage op, a logical value read by one, a device op: flipped.
    const stage::Stage& st = *std::find_if(stages.begin(), stages.end(), [](const stage::Stage& s) {
      return !s.deviceOps.empty() && !s.logicalOps.empty();
    });
    const stage::DeviceOp dop = st.deviceOps.front();
    const Op& op = work.devices[static_cast<size_t>(dop.device)].graph.ops[static_cast<size_t>(dop.op)];
    const ValueId lv = work.logical.ops[static_cast<size_t>(st.logicalOps.front())].outputs.front();
    stage::FoldParameter varying = base, axis = base, sums = base;
    const std::pair<size_t, ValueId> dv{static_cast<size_t>(dop.device), op.outputs.front()};
    varying.varying.count(dv) ? (void)varying.varying.erase(dv) : (void)varying.varying.insert(dv);
    const std::pair<ValueId, int> la{lv, 0};
    axis.logicalAxes.count(la) ? (void)axis.logicalAxes.erase(la) : (void)axis.logicalAxes.insert(la);
    const std::pair<size_t, OpId> so{static_cast<size_t>(dop.device), dop.op};
    sums.sums.count(so) ? (void)sums.sums.erase(so) : (void)sums.sums.insert(so);
    QCOMPARE(marksChanged(base), 0);
    QVERIFY(marksChanged(varying) >= 1);
    QVERIFY(marksChanged(axis) >= 1);
    QVERIFY(marksChanged(sums) >= 1);

    // A varying value inside the stage (not checked, so its lineage is not signed) whose lineage names one
    // logical tensor the stage reads or another: condition D sums the one it names over the members.
    const stage::Stage* at = nullptr;
    stage::DeviceValue inside{};
    for (const stage::Stage& s : stages)
      for (const stage::DeviceOp& o : s.deviceOps)
        for (ValueId v :
             work.devices[static_cast<size_t>(o.device)].graph.ops[static_cast<size_t>(o.op)].outputs)
          if (!at && !s.logicalOps.empty() &&
              std::none_of(s.checked.begin(), s.checked.end(),
                           [&](const auto& c) { return c.device == o.device && c.value == v; })) {
            at = &s;
            inside = {o.device, v};
          }
    QVERIFY(at);
    const Op& lop = work.logical.ops[static_cast<size_t>(at->logicalOps.front())];
    stage::FoldParameter own = base;
    own.varying.insert({static_cast<size_t>(inside.device), inside.value});
    const stage::FoldIndex index(own);
    std::vector<stage::MarkedSignature> named;
    for (ValueId tensor : {lop.inputs.front(), lop.outputs.front()}) {
      Plan p = work;
      const Shape& shape = p.logical.values[static_cast<size_t>(tensor)].type.shape;
      Lineage l{p.logical.values[static_cast<size_t>(tensor)].name, {}, 0, 1};
      for (int64_t e : shape)
        l.box.ranges.push_back({0, e});
      p.devices[static_cast<size_t>(inside.device)].lineage[inside.value] = l;
      named.push_back(stage::markedSignature(p, *at, domains, {&index}));
    }
    QCOMPARE(named[0].plain, named[1].plain);
    QVERIFY(named[0].marks[0] != named[1].marks[0]);
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
