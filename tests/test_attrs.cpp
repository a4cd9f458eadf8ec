// Op attributes as shared, interned objects (core/ir/attrs.h; docs/scale.md, "Memory per op"): equal objects
// become one, objects equal only as JSON values stay apart, a write never reaches another op, and a
// generated plan's ops share their attribute objects and are written as before. A graph's name index is
// likewise shared by its copies until one of them is written. Names (core/ir/name.h) are interned: equal
// texts are one name from any thread, ordered and hashed as their strings, and a lookup interns nothing.
#include <QtTest>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/ir/ir.h"
#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"

using namespace paraproof;

class TestAttrs : public QObject {
  Q_OBJECT
 private slots:
  void equalObjectsAreInternedAsOne() {
    AttrsPool pool;
    Attrs a = Json{{"dim", 1}, {"group", {0, 1, 2, 3}}};
    Attrs b = Json{{"group", {0, 1, 2, 3}}, {"dim", 1}};
    QVERIFY(!a.sharesWith(b));
    pool.intern(a);
    pool.intern(b);
    QVERIFY(a.sharesWith(b));
    QCOMPARE(pool.distinct(), size_t(1));
  }

  void objectsEqualOnlyAsValuesStayApart() {
    // JSON's == holds for these; the plan writes them differently.
    const std::vector<std::pair<Json, Json>> pairs = {
        {Json{{"value", 1}}, Json{{"value", 1.0}}},
        {Json{{"value", 0.0}}, Json{{"value", -0.0}}},
        {Json{{"value", Json(1)}}, Json{{"value", Json(1u)}}},
        {Json{{"shape", {1, 2}}}, Json{{"shape", {1.0, 2}}}},
    };
    for (const auto& [x, y] : pairs) {
      QVERIFY(x == y);
      AttrsPool pool;
      Attrs a = x, b = y;
      pool.intern(a);
      pool.intern(b);
      QVERIFY2(!a.sharesWith(b), (x.dump() + " " + y.dump()).c_str());
      QCOMPARE(a.dump(), x.dump());
      QCOMPARE(b.dump(), y.dump());
    }
  }

  void aWriteCopiesASharedObject() {
    AttrsPool pool;
    Attrs a = Json{{"reduce", "sum"}}, b = Json{{"reduce", "sum"}};
    pool.intern(a);
    pool.intern(b);
    b.set("reduce", "avg");
    QCOMPARE(a.at("reduce").get<std::string>(), std::string("sum"));
    QCOMPARE(b.at("reduce").get<std::string>(), std::string("avg"));
    Attrs c = a;
    c.erase("reduce");
    QVERIFY(c.empty());
    QVERIFY(a.contains("reduce"));
    c.edit()["eps"] = 1e-5;
    QCOMPARE(c.dump(), std::string("{\"eps\":1e-05}"));
    QCOMPARE(a.dump(), std::string("{\"reduce\":\"sum\"}"));
  }

  // A graph's name index is shared with its copies (core/ir/ir.h) until one of them adds a value or an op:
  // what a copy adds, or renames and reindexes, is found in that copy only.
  void aGraphCopyKeepsItsOwnNames() {
    Graph g;
    g.addInput("x", TensorType{{4}, DType::F32});
    Op neg;
    neg.id = "neg";
    neg.kind = "neg";
    neg.inputs = {g.findValue("x")};
    g.addOp(neg, {{"y", TensorType{{4}, DType::F32}}});
    Graph copy = g;
    QCOMPARE(copy.findValue("y"), g.findValue("y"));
    QCOMPARE(copy.findOp("neg"), g.findOp("neg"));
    neg.id = "neg2";
    neg.inputs = {copy.findValue("y")};
    copy.addOp(neg, {{"z", TensorType{{4}, DType::F32}}});
    copy.addInput("w", TensorType{{4}, DType::F32});
    QCOMPARE(copy.findValue("z"), 2);
    QCOMPARE(copy.findOp("neg2"), 1);
    QCOMPARE(copy.findValue("w"), 3);
    QCOMPARE(g.findValue("z"), kNone);
    QCOMPARE(g.findOp("neg2"), kNone);
    QCOMPARE(g.findValue("w"), kNone);
    Graph renamed = g;
    renamed.values[1].name = "y2";
    renamed.reindex();
    QCOMPARE(renamed.findValue("y2"), 1);
    QCOMPARE(renamed.findValue("y"), kNone);
    QCOMPARE(g.findValue("y"), 1);
    QCOMPARE(g.findValue("y2"), kNone);
    const Graph moved = std::move(renamed);
    QCOMPARE(moved.findValue("y2"), 1);
  }

  void equalTextsAreOneNameOrderedAndHashedAsStrings() {
    const std::string text = "layers.3.attention.wq.out#5";
    const Name a = text, b = std::string_view(text), c = text.c_str();
    QVERIFY(a == b && b == c);
    QCOMPARE(a.data(), c.data());  // one stored text
    QVERIFY(a == text && text == a && a == "layers.3.attention.wq.out#5");
    QVERIFY(!(a == "layers.3.attention.wq.out#6"));
    QCOMPARE(a.hash(), std::hash<std::string_view>{}(text));
    QCOMPARE(a + "/ar", text + "/ar");
    QVERIFY(Name().empty() && Name() == Name("") && Name() == "");
    // Sorted as names, sorted as strings: maps and sorts keyed by names keep the order they had.
    std::vector<std::string> texts = {"b", "a.10", "a.9", "", "a", "B", "a.1"};
    std::vector<Name> names(texts.begin(), texts.end());
    std::sort(texts.begin(), texts.end());
    std::sort(names.begin(), names.end());
    QCOMPARE(std::vector<std::string>(names.begin(), names.end()), texts);
    Json j = a;
    QCOMPARE(j.get<std::string>(), text);
    QVERIFY(j.get<Name>() == a);
  }

  void namesInternedOnTwoThreadsAreOne() {
    std::vector<Name> first(5000), second(5000);
    auto intern = [](std::vector<Name>& out) {
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = "two.threads." + std::to_string(i);
    };
    std::thread t(intern, std::ref(first));
    intern(second);
    t.join();
    for (size_t i = 0; i < first.size(); ++i)
      QVERIFY(first[i] == second[i] && first[i].data() == second[i].data());
  }

  void aLookupInternsNothing() {
    Graph g;
    g.addInput("x", TensorType{{4}, DType::F32});
    const size_t before = Name::pooled();
    QCOMPARE(g.findValue("a name no graph has had"), kNone);
    QCOMPARE(g.findOp(std::string("an id no graph has had")), kNone);
    QCOMPARE(Name::pooled(), before);
    QCOMPARE(g.findValue(std::string("x")), 0);
  }

  void convertsToTheObjectItself() {
    // A non-const Attrs, as in an aggregate's JSON member: the object, not an array of its values.
    Op op;
    op.attrs = Json{{"causal", true}, {"scale", 0.5}};
    const Json copied = op.attrs;
    struct Holder {
      std::string id;
      Json attrs;
    };
    const Holder held{"x", op.attrs};
    QCOMPARE(copied.dump(), std::string("{\"causal\":true,\"scale\":0.5}"));
    QCOMPARE(held.attrs.dump(), copied.dump());
  }

  void anAbsentKeyReadsNullAndIsNotInserted() {
    const Attrs empty;
    QVERIFY(empty.is_object() && empty.empty());
    Attrs a = Json{{"dim", 0}};
    QVERIFY(a["axis"].is_null());
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a.value("axis", 7), 7);
    QCOMPARE(a.value("dim", 7), 0);
    QVERIFY(Attrs(Json::object()) == empty);
  }

  void aGeneratedPlanSharesItsAttributesAndReadsBackTheSame() {
    parallel::GenerateOptions o;
    o.compact = true;
    const Plan plan = parallel::generatePlan(*models::findModel("llama3-8b"),
                                             parallel::parseParallel("dp=8,tp=2,pp=2,mb=4"), o);
    // The devices' ops share the attribute objects of equal ops (other devices', other layers').
    size_t ops = 0;
    std::set<const Json*> objects;
    for (const Device& d : plan.devices)
      for (const Op& op : d.graph.ops) {
        ++ops;
        objects.insert(&op.attrs.json());
      }
    QVERIFY2(objects.size() * 4 < ops,
             (std::to_string(objects.size()) + " of " + std::to_string(ops)).c_str());
    // Loaded back, the plan is written the same (the loader interns too).
    const Json written = planToJson(plan);
    const Plan loaded = planFromJson(written);
    QCOMPARE(planToJson(loaded).dump(), written.dump());
  }
};

QTEST_GUILESS_MAIN(TestAttrs)
#include "test_attrs.moc"
