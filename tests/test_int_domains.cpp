// Integer values index an axis: free integer inputs range over that axis (at the size checked), computed
// integers over their op's range, and shape reduction scales the values with the axis they index.
#include <QtTest>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/stage/int_domains.h"
#include "core/stage/reduce.h"

using namespace paraproof;
using ops::IntRange;

namespace {

Plan fixture(const std::string& name) {
  return loadPlan(std::string(PARAPROOF_FIXTURES) + "/soundness/" + name + ".json");
}

IntRange domainOf(const Plan& p, const std::string& logical) {
  return stage::intDomains(p).logical.at(p.logical.findValue(logical));
}

const Op& deviceOp(const Plan& p, int rank, const std::string& id) {
  const Graph& g = p.deviceByRank(rank)->graph;
  return g.ops[g.findOp(id)];
}

// x[2] i64 -> embedding(x + y, table): x and y index nothing themselves.
Plan sumOfIds(const std::string& idsOp) {
  Json j = {{"mesh", {{"axes", {"dp"}}, {"shape", {1}}}},
            {"logical",
             {{"inputs",
               {{{"name", "x"}, {"shape", {2}}, {"dtype", "i64"}},
                {{"name", "y"}, {"shape", {2}}, {"dtype", "i64"}},
                {{"name", "table"}, {"shape", {16, 4}}, {"dtype", "f32"}}}},
              {"ops",
               {{{"id", "ids"}, {"op", idsOp}, {"inputs", {"x", "y"}}, {"outputs", {"ids"}}},
                {{"id", "e"}, {"op", "embedding"}, {"inputs", {"ids", "table"}}, {"outputs", {"e"}}}}},
              {"outputs", {"e"}}}},
            {"devices", Json::array()}};
  return planFromJson(j);
}

}  // namespace

class TestIntDomains : public QObject {
  Q_OBJECT
 private slots:
  // Labels index the vocabulary (one_hot's class axis), not the largest extent of the stage's shapes.
  void labelsRangeOverTheVocabulary() {
    const Plan p = fixture("onehot-vocab-start");
    QCOMPARE(domainOf(p, "labels"), IntRange::of(0, 8));
  }

  void generatedIdsRangeOverTheVocabularyAtTheSizeChecked() {
    const models::ModelConfig& m = *models::findModel("mlp");
    parallel::GenerateOptions o;
    o.layers = 2;
    const Plan p = parallel::generatePlan(m, parallel::parseParallel("tp=2"), o);
    const int64_t vocab = p.logical.values[p.logical.findValue("embed.weight")].type.shape[0];
    QCOMPARE(domainOf(p, "tokens"), IntRange::of(0, vocab));
    QCOMPARE(domainOf(p, "labels"), IntRange::of(0, vocab));
    const stage::ReducedPlan r = stage::reducePlan(p);
    QVERIFY(r.reduced);
    const int64_t reducedVocab =
        r.plan.logical.values[r.plan.logical.findValue("embed.weight")].type.shape[0];
    QVERIFY(reducedVocab < vocab);
    QCOMPARE(domainOf(r.plan, "tokens"), IntRange::of(0, reducedVocab));
    QCOMPARE(domainOf(r.plan, "labels"), IntRange::of(0, reducedVocab));
  }

  // The model alone decides what an id may be: a device op over fewer values (one_hot(num_classes=2)) never
  // narrows the domain, whether the model indexes a vocabulary of 8 with the ids or nothing at all.
  void deviceOpsNeverNarrowTheDomain() {
    QCOMPARE(domainOf(fixture("device-narrows-int-domain-vocab"), "ids"), IntRange::of(0, 8));
    QCOMPARE(domainOf(fixture("device-narrows-int-domain"), "ids"), IntRange::any());
    // Reduced: the domain is still the logical vocabulary, at the size checked.
    const stage::ReducedPlan r = stage::reducePlan(fixture("device-narrows-int-domain-correct"));
    const int64_t rows = r.plan.logical.values[r.plan.logical.findValue("table")].type.shape[0];
    QCOMPARE(domainOf(r.plan, "ids"), IntRange::of(0, rows));
  }

  // Computed integers: iota's positions; integer arithmetic by intervals. Inputs that only feed
  // arithmetic index nothing and may hold any integer.
  void computedIntegersHoldTheirOpsRange() {
    QCOMPARE(domainOf(fixture("position-embedding-iota"), "pos"), IntRange::of(0, 8));
    const Plan p = sumOfIds("add");
    QCOMPARE(domainOf(p, "x"), IntRange::any());
    QCOMPARE(domainOf(p, "ids"), IntRange::any());
  }

  // Positions index the position table's rows: both shrink by the same factor, with the iota offsets.
  void positionsAndTheTableTheyIndexShrinkTogether() {
    const stage::ReducedPlan r = stage::reducePlan(fixture("position-embedding-iota"));
    QVERIFY(r.reduced);
    const int64_t rows = r.plan.logical.values[r.plan.logical.findValue("table")].type.shape[0];
    const int64_t f = 16 / rows;
    QVERIFY(f > 1);
    QCOMPARE(r.plan.logical.ops[r.plan.logical.findOp("pos")].attrs.at("n").get<int64_t>(), 8 / f);
    QCOMPARE(deviceOp(r.plan, 1, "pos").attrs.at("start").get<int64_t>(), 4 / f);
    QCOMPARE(deviceOp(r.plan, 1, "pos").attrs.at("n").get<int64_t>(), 4 / f);
  }

  // An op without a rule for its integers (a sum of ids is no id) keeps the table it indexes at full size.
  void integersWithoutARulePinTheAxisTheyIndex() {
    const stage::ReducedPlan r = stage::reducePlan(sumOfIds("add"));
    QCOMPARE(r.plan.logical.values[r.plan.logical.findValue("table")].type.shape[0], int64_t{16});
    // integer maximum has no rule either (conservative: pinned)
    const stage::ReducedPlan m = stage::reducePlan(sumOfIds("maximum"));
    QCOMPARE(m.plan.logical.values[m.plan.logical.findValue("table")].type.shape[0], int64_t{16});
  }
};

QTEST_GUILESS_MAIN(TestIntDomains)
#include "test_int_domains.moc"
