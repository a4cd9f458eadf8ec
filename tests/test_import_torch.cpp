// paraproof import-torch / verify SCRIPT.py as a user runs them: every bundled PyTorch example
// (resources/examples/torch) imports into a valid plan and gets the verdict its docstring states, a broken
// one with a counterexample naming its script; each error case exits 2 naming the SCRIPT.py line marked
// "# ERROR-LINE" (tests/fixtures/torch). Skipped when /usr/bin/python3 cannot import torch.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_run.h"
#include "torch_scripts.h"

namespace {

const QString kExamples = QStringLiteral(PARAPROOF_FIXTURES "/../../resources/examples/torch");
const QString kErrors = QStringLiteral(PARAPROOF_FIXTURES "/torch");

// The verdict an example states in its docstring: "Expected verdict: equivalent" / "not equivalent".
int expectedExit(const QString& script) {
  const QString text = readText(script);
  if (text.contains("Expected verdict: not equivalent")) return 1;
  if (text.contains("Expected verdict: equivalent")) return 0;
  return -1;
}

// The line a broken example marks "# BUG" (a comment of its own: the next line of code, where the missing
// statement belonged), or -1.
int bugLine(const QString& script) {
  const QStringList lines = readText(script).split('\n');
  for (int i = 0; i < lines.size(); ++i) {
    if (!lines[i].contains("# BUG")) continue;
    for (int j = i; j < lines.size(); ++j) {
      const QString code = lines[j].trimmed();
      if (!code.isEmpty() && !code.startsWith('#')) return j + 1;
    }
  }
  return -1;
}

}  // namespace

class TestImportTorch : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    if (!torchAvailable()) QSKIP("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
  }

  void examples_data() {
    QTest::addColumn<QString>("script");
    QTest::addColumn<int>("expected");
    // The bundled examples, and the fixtures that state a verdict (other ways of writing a step).
    int n = 0, row = 0;
    for (const QString& dir : {kExamples, kErrors}) {
      for (const QString& f : QDir(dir).entryList({"*.py"}, QDir::Files, QDir::Name)) {
        const QString path = dir + "/" + f;
        const int e = expectedExit(path);
        if (e < 0) continue;  // a helper module (mappings.py) or an error case
        n += dir == kExamples;
        if (inTestShard(row++)) QTest::newRow(qPrintable(f)) << path << e;
      }
    }
    QVERIFY2(n >= 5, "expected the bundled examples under resources/examples/torch");
  }

  // import-torch writes a plan that loads and validates; verify SCRIPT.py gives the stated verdict.
  void examples() {
    QFETCH(QString, script);
    QFETCH(int, expected);
    QTemporaryDir dir;
    const QString plan = dir.filePath("plan.json");
    const CliRun imported = runCli({"import-torch", script, "-o", plan}, 300000);
    QVERIFY2(imported.exitCode == 0, qPrintable(imported.err));
    QVERIFY(QFile::exists(plan));
    const CliRun inspected = runCli({"inspect", plan}, 120000);
    QVERIFY2(inspected.exitCode == 0, qPrintable(inspected.err + inspected.out));

    QVERIFY2(imported.err.isEmpty(), qPrintable(imported.err));  // the mapping's self-check is silent

    const CliRun verified = runCli({"verify", script, "--jobs", "2", "--check-numerics"}, 600000);
    QVERIFY2(verified.exitCode == expected, qPrintable(QString("exit %1, expected %2\n%3\n%4")
                                                           .arg(verified.exitCode)
                                                           .arg(expected)
                                                           .arg(verified.out, verified.err)));
    // The differential test beside the proof agrees with it.
    const QString numerics = expected == 0 ? "check-numerics: logical and parallel agree"
                                           : "check-numerics: logical and parallel DISAGREE";
    QVERIFY2(verified.out.contains(numerics), qPrintable(verified.out));
    // ...run on SCRIPT.py's own functions, not on the importer's reading of them.
    QVERIFY2(verified.out.contains("SCRIPT.py's functions run eagerly"), qPrintable(verified.out));
    if (expected == 1) {
      // The failing stage's scopes are SCRIPT.py lines ("mlp_tp2.py:40 parallel").
      const QString base = QFileInfo(script).fileName();
      QVERIFY2(QRegularExpression(QRegularExpression::escape(base) + ":\\d+").match(verified.out).hasMatch(),
               qPrintable(verified.out));
      // ...led by the line of the op whose value differs first.
      QVERIFY2(QRegularExpression("first difference: [^(\\n]*\\b" + QRegularExpression::escape(base) +
                                  ":\\d+ (<|\\(rank)")
                   .match(verified.out)
                   .hasMatch(),
               qPrintable(verified.out));
      // A bug marked "# BUG" is that line (report_annotate, first_difference.h), for every bundled example.
      if (const int bug = bugLine(script); bug > 0 && script.startsWith(kExamples))
        // The line is the op's own, a line that called it ("rope f.py:24 < block f.py:73"), where a missing
        // collective belongs, or where a wrong tensor sent was made.
        QVERIFY2(QRegularExpression("first difference: [^(\\n]*\\b" + QRegularExpression::escape(base) + ":" +
                                    QString::number(bug) + " (<|\\(rank)")
                     .match(verified.out)
                     .hasMatch(),
                 qPrintable(QString("line %1 expected first\n").arg(bug) + verified.out));
    }
  }

  // Ops an nn.Module runs are scoped by its path (the module-level MODEL -> "model.fc1"), forward and on
  // every rank; the rest by the SCRIPT.py function; each keeps its line after a space.
  void moduleScopes() {
    if (!inTestShard(1)) QSKIP("in another shard");
    QTemporaryDir dir;
    const QString plan = dir.filePath("plan.json");
    const CliRun imported =
        runCli({"import-torch", kErrors + "/module_functional_call.py", "-o", plan}, 300000);
    QVERIFY2(imported.exitCode == 0, qPrintable(imported.err));
    const QJsonObject root = QJsonDocument::fromJson(readText(plan).toUtf8()).object();
    QList<QJsonArray> graphs = {root["logical"].toObject()["ops"].toArray()};
    for (const QJsonValue& d : root["devices"].toArray())
      graphs.push_back(d.toObject()["ops"].toArray());
    QCOMPARE(graphs.size(), 3);
    const QRegularExpression line(" module_functional_call\\.py:\\d+$");
    for (const QJsonArray& ops : graphs) {
      QSet<QString> levels;
      for (const QJsonValue& op : ops) {
        const QString scope = op.toObject()["scope"].toString();
        if (scope.isEmpty()) continue;
        QVERIFY2(line.match(scope).hasMatch(), qPrintable(scope));
        levels.insert(scope.section(' ', 0, 0));
      }
      for (const char* want : {"model.fc1", "model.fc2", "model.ln", "step"})
        QVERIFY2(levels.contains(want), qPrintable(QStringList(levels.values()).join(", ")));
    }
  }

  void errors_data() {
    if (!inTestShard(1)) QSKIP("in another shard");
    QTest::addColumn<QString>("script");
    QTest::addColumn<QString>("what");
    QTest::newRow("unsupported aten ops") << kErrors + "/unsupported_op.py"
                                          << "unsupported aten op 'aten.floor";
    QTest::newRow("precondition broken by the step")
        << kErrors + "/precondition_broken_by_step.py"
        << "logical's 'v.new' breaks NonNegative(), which INPUTS declares for 'v'";
    QTest::newRow("placement does not divide") << kErrors + "/bad_placement.py"
                                               << "placement of 'w' does not divide its shape";
    QTest::newRow("collective on a group without the rank")
        << kErrors + "/not_in_group.py"
        << "all_reduce on group [0, 1], which does not contain rank 2";
    QTest::newRow("output missing from parallel") << kErrors + "/missing_output.py"
                                                  << "output 'w2.grad' of logical is missing from parallel";
    // A backward op is named at the line of the forward op it differentiates, not at autograd.grad.
    QTest::newRow("unsupported backward op at its forward line") << kErrors + "/backward_unsupported_line.py"
                                                                 << "'aten.embedding_dense_backward.default'";
  }

  // Both commands exit 2 with one error line naming the op or tensor and SCRIPT.py:LINE.
  void errors() {
    QFETCH(QString, script);
    QFETCH(QString, what);
    const int line = markedLine(script);
    QVERIFY(line > 0);
    const QString where = script + ":" + QString::number(line) + ": ";
    QTemporaryDir dir;
    const CliRun imported = runCli({"import-torch", script, "-o", dir.filePath("plan.json")}, 300000);
    QCOMPARE(imported.exitCode, 2);
    QVERIFY2(imported.err.contains("error: " + where) && imported.err.contains(what),
             qPrintable(imported.err));
    // Every unsupported op the outputs need is named at once, each on its own line.
    if (const int second = markedLine(script, "# ERROR-LINE-2"); second > 0)
      QVERIFY2(imported.err.contains("error: " + script + ":" + QString::number(second) + ": "),
               qPrintable(imported.err));
    QVERIFY(!QFile::exists(dir.filePath("plan.json")));

    const QString report = dir.filePath("report.json");
    const CliRun verified = runCli({"verify", script, "--json", report}, 300000);
    QCOMPARE(verified.exitCode, 2);
    QVERIFY2(verified.err.contains(where) && verified.err.contains(what), qPrintable(verified.err));
    QVERIFY2(verified.out.contains("INVALID INPUT"), qPrintable(verified.out));
    QVERIFY2(readText(report).contains(what), qPrintable(readText(report)));
  }

  // --check-numerics runs SCRIPT.py's functions eagerly (every rank a thread with real storage and
  // collectives) and stores its verdict in metadata.check_numerics: a correct bundled example agrees;
  // gradients bucketed with torch.cat (a copy, so the all-reduce misses them) disagree; a step that cannot
  // run (a recv never sent) says so with the line, and gives no verdict. One import each.
  void eagerCheckNumerics_data() {
    QTest::addColumn<QString>("script");
    QTest::addColumn<QString>("verdict");  // agree, DISAGREE or not run
    QTest::addColumn<QString>("detail");
    QTest::newRow("correct bundled example") << kExamples + "/mlp_dp2_tp2.py"
                                             << "agree"
                                             << "agree";
    QTest::newRow("bucket copied, not viewed") << kErrors + "/grad_bucket_views_dp2_copied.py"
                                               << "DISAGREE"
                                               << "output 'w1.grad' differs";
    QTest::newRow("recv never sent") << kErrors + "/recv_never_sent.py"
                                     << "not run"
                                     << "the ranks would hang when run eagerly: rank 0 waits for recv";
  }

  void eagerCheckNumerics() {
    // Three imports in all, in the first CTest shard (the second runs the other single tests).
    if (!inTestShard(0)) QSKIP("in another shard");
    QFETCH(QString, script);
    QFETCH(QString, verdict);
    QFETCH(QString, detail);
    QTemporaryDir dir;
    const QString plan = dir.filePath("plan.json");
    const CliRun imported = runCli({"import-torch", script, "-o", plan, "--check-numerics"}, 300000);
    QVERIFY2(imported.exitCode == 0, qPrintable(imported.err));
    const QString line = verdict == "not run" ? "check-numerics: not run, no verdict: "
                                              : "check-numerics: logical and parallel " + verdict;
    QVERIFY2(imported.out.contains(line) && imported.out.contains(detail), qPrintable(imported.out));
    const QJsonObject check = QJsonDocument::fromJson(readText(plan).toUtf8())
                                  .object()["metadata"]
                                  .toObject()["check_numerics"]
                                  .toObject();
    QCOMPARE(check["eager"].toBool(), true);
    QCOMPARE(check["agree"].toBool(), verdict == "agree");
    QCOMPARE(check["ran"].toBool(), verdict != "not run");
    QVERIFY2(check["note"].toString().startsWith(line), qPrintable(check["note"].toString()));
    if (verdict == "agree") {
      QVERIFY(imported.out.contains("SCRIPT.py's functions run eagerly"));
      QCOMPARE(check["draws"].toInt(), 3);
    } else if (verdict == "not run") {
      // The hang is named at the recv's SCRIPT.py line.
      QVERIFY2(
          imported.out.contains(QFileInfo(script).fileName() + ":" + QString::number(markedLine(script))),
          qPrintable(imported.out));
    }
  }

  void usage() {
    if (!inTestShard(1)) QSKIP("in another shard");
    QCOMPARE(runCli({"import-torch", kExamples + "/mlp_tp2.py"}, 60000).exitCode, 2);  // no -o
    const CliRun missing = runCli({"import-torch", kErrors + "/no_such_script.py", "-o", "/dev/null"}, 60000);
    QCOMPARE(missing.exitCode, 2);
    QVERIFY2(missing.err.contains("no_such_script.py"), qPrintable(missing.err));
  }
};

QTEST_GUILESS_MAIN(TestImportTorch)
#include "test_import_torch.moc"
