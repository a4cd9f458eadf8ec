// The zoo commands as a user types them: generate -o, verify of the written plan and of an in-memory
// plan with an injected bug, bugs --json / models --json for scripts, and impossible combinations (exit 2).
#include <signal.h>
#include <sys/types.h>

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_run.h"

#include <nlohmann/json.hpp>

namespace {

using Run = CliRun;

Run cli(const QStringList& args) {
  return runCli(args, 300000);
}

nlohmann::json readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return nullptr;
  return nlohmann::json::parse(f.readAll().toStdString());
}

// Timing fields are the only part of a report that may differ between runs.
void dropTimings(nlohmann::json& j) {
  if (j.is_object()) {
    j.erase("seconds");
    for (auto& [k, v] : j.items())
      dropTimings(v);
  } else if (j.is_array()) {
    for (auto& v : j)
      dropTimings(v);
  }
}

}  // namespace

class TestCliZoo : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void generateWritesAPlanThatVerifies() {
    const QString plan = tmp_.filePath("gpt-tiny.json");
    Run g = cli({"generate", "--model", "gpt-tiny", "--parallel", "dp=2,tp=2", "-o", plan});
    QVERIFY2(g.exitCode == 0, qPrintable(g.out + g.err));
    QVERIFY(QFile::exists(plan));
    Run v = cli({"verify", plan, "--jobs", "2"});
    QVERIFY2(v.exitCode == 0, qPrintable(v.out + v.err));
  }

  // A generated file is compact (implied micro-batch copies and replicas): inspect checks it written out,
  // and leaves one too large for that to verify, instead of calling the implied parts missing.
  void inspectChecksACompactPlanWrittenOut() {
    const QString small = tmp_.filePath("micro-compact.json");
    Run g = cli({"generate", "--model", "llama-micro", "--parallel", "dp=4,tp=2,pp=2,mb=4", "--layers", "2",
                 "-o", small});
    QVERIFY2(g.exitCode == 0, qPrintable(g.out + g.err));
    Run i = cli({"inspect", small});
    QVERIFY2(i.exitCode == 0, qPrintable(i.out + i.err));
    QVERIFY2(i.out.contains("compact:") && i.out.contains("stages:"), qPrintable(i.out));
    QVERIFY2(i.err.isEmpty(), qPrintable(i.err));
    const QString large = tmp_.filePath("large-compact.json");
    g = cli(
        {"generate", "--model", "llama-micro", "--parallel", "dp=512,tp=2", "--layers", "2", "-o", large});
    QVERIFY2(g.exitCode == 0, qPrintable(g.out + g.err));
    i = cli({"inspect", large});
    QVERIFY2(i.exitCode == 0 && i.out.contains("'paraproof verify' checks it folded"),
             qPrintable(i.out + i.err));
  }

  // Running out of memory is neither a verdict nor bad input, and never an abort: exit 3 with a message, and
  // no partial plan file. (A 400 MB address-space limit; the sanitizers need far more address space.)
  void outOfMemoryIsAClearErrorNotACrash() {
#ifdef __SANITIZE_ADDRESS__
    QSKIP("AddressSanitizer reserves more address space than the limit this test sets");
#endif
    const QString plan = tmp_.filePath("l3-oom.json");
    for (const QString& command :
         {QString("generate --model llama3-405b --parallel dp=64,tp=8,pp=16,mb=16 -o ") + plan,
          QString("verify --model llama3-405b --parallel dp=64,tp=8,pp=16,mb=16")}) {
      const Run r = runProgram("bash", {"-c", "ulimit -v 400000; exec " PARAPROOF_CLI " " + command}, 300000);
      QVERIFY2(r.exitCode == 3, qPrintable(command + ": " + r.err));
      QVERIFY2(r.err.contains("out of memory"), qPrintable(r.err));
    }
    QVERIFY(QDir(tmp_.path()).entryList({"l3-oom*"}, QDir::Files).isEmpty());
  }

  void verifyGeneratesInMemoryAndFindsAnInjectedBug() {
    const QString report = tmp_.filePath("tv01.report.json");
    Run v = cli({"verify", "--model", "gpt-tiny", "--parallel", "tp=2", "--inject", "tv01-allreduce-missing",
                 "--json", report, "--jobs", "2"});
    QVERIFY2(v.exitCode == 1, qPrintable(v.out + v.err));
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto json = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(QString::fromStdString(json.at("verdict").get<std::string>()), QString("not_equivalent"));
  }

  // --deadline ends the run with a partial report: stage 0 is held at a gate until the deadline, so the run
  // cannot finish first on any machine.
  void deadlineWritesAPartialReport() {
    const QString report = tmp_.filePath("deadline.report.json");
    Run v = cli({"verify", "--model", "gpt-tiny", "--parallel", "dp=2,tp=2", "--deadline", "0.5",
                 "--hold-stage", "0", "--json", report, "--jobs", "2"});
    QVERIFY2(v.exitCode == 3, qPrintable(v.out + v.err));
    QVERIFY2(v.out.contains("deadline of 0.5 s reached: partial report"), qPrintable(v.out));
    const auto json = readJson(report);
    QCOMPARE(QString::fromStdString(json.at("verdict").get<std::string>()), QString("inconclusive"));
    QVERIFY(json.at("deadline_reached").get<bool>());
    QVERIFY(!json.at("cancelled").get<bool>());
    const auto& held = json.at("stages").at(0);
    QCOMPARE(QString::fromStdString(held.at("reason").get<std::string>()), QString("deadline reached"));
  }

  // SIGINT: the run stops, writes the partial report and exits 3. The signal comes while stage 0 is held.
  void interruptWritesAPartialReport() {
    const QString report = tmp_.filePath("sigint.report.json");
    QProcess p;
    p.start(PARAPROOF_CLI, {"verify", "--model", "gpt-tiny", "--parallel", "dp=2,tp=2", "--hold-stage", "0",
                            "--json", report, "--jobs", "2"});
    QVERIFY(p.waitForStarted(10000));
    QByteArray err;
    while (!err.contains("held until") && p.state() == QProcess::Running) {
      p.waitForReadyRead(1000);
      err += p.readAllStandardError();
    }
    QVERIFY2(err.contains("held until"), err.constData());
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    QVERIFY(p.waitForFinished(300000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 3);
    QVERIFY(p.readAllStandardOutput().contains("cancelled: partial report"));
    const auto json = readJson(report);
    QCOMPARE(QString::fromStdString(json.at("verdict").get<std::string>()), QString("inconclusive"));
    QVERIFY(json.at("cancelled").get<bool>());
  }

  // The report is a function of the plan, not of the number of workers or their timing.
  void reportDoesNotDependOnJobs() {
    const QString plan = tmp_.filePath("jobs.json");
    Run g = cli({"generate", "--model", "gpt-tiny", "--parallel", "dp=2,tp=2,pp=2", "-o", plan});
    QVERIFY2(g.exitCode == 0, qPrintable(g.out + g.err));
    std::vector<nlohmann::json> reports;
    for (const char* jobs : {"1", "2"}) {
      const QString out = tmp_.filePath(QString("jobs-%1.report.json").arg(jobs));
      Run v = cli({"verify", plan, "--jobs", jobs, "--json", out});
      QVERIFY2(v.exitCode == 0, qPrintable(v.out + v.err));
      reports.push_back(readJson(out));
      dropTimings(reports.back());
    }
    QVERIFY2(reports[0] == reports[1], (reports[0].dump(1) + "\n---\n" + reports[1].dump(1)).c_str());
  }

  void bugsJsonListsWhereEachBugApplies() {
    Run b = cli({"bugs", "--json"});
    QCOMPARE(b.exitCode, 0);
    const auto bugs = nlohmann::json::parse(b.out.toStdString());
    QVERIFY(bugs.is_array() && bugs.size() >= 14);
    for (const auto& e : bugs)
      for (const char* key : {"id", "class", "description", "source", "model", "parallel"})
        QVERIFY2(e.contains(key) && e.at(key).is_string() && !e.at(key).get<std::string>().empty(), key);
  }

  void modelsJsonHasTheRealConfigs() {
    Run m = cli({"models", "--json"});
    QCOMPARE(m.exitCode, 0);
    const auto models = nlohmann::json::parse(m.out.toStdString());
    bool found = false;
    for (const auto& e : models)
      if (e.at("name") == "llama3-405b") {
        found = true;
        QCOMPARE(e.at("layers").get<int>(), 126);
        QCOMPARE(e.at("hidden").get<int>(), 16384);
      }
    QVERIFY(found);
  }

  // paraproof diff: each fixture's bug is exactly what the diff names (exit 1); a plan against itself is
  // identical (exit 0); a generated plan against its injected bug names the bug's op.
  void diffNamesWhatDiffers_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("expected");
    const QString plans = QString(PARAPROOF_FIXTURES) + "/plans/";
    QTest::newRow("eps") << QStringList{plans + "mlp_tp2.json", plans + "mlp_tp2_eps.json"} << 1
                         << "rank 1 op 'norm' changed: attribute eps: 1e-05 -> 1e-06\n"
                            "1 difference(s): 1 changed, 0 added, 0 removed\n";
    QTest::newRow("slice offset")
        << QStringList{plans + "mlp_tp2_slice.json", plans + "mlp_tp2_slice_offset.json"} << 1
        << "rank 1 op 'fc1.shard' changed: attribute end: 4 -> 2; attribute start: 2 -> 0\n"
           "1 difference(s): 1 changed, 0 added, 0 removed\n";
    QTest::newRow("wrong group") << QStringList{plans + "mlp_dp2tp2.json",
                                                plans + "mlp_dp2tp2_wrong_group.json"}
                                 << 1
                                 << "rank 0 op 'fc1.dw.ar' changed: attribute group: [0,2] -> [0,1]; "
                                    "attribute instance: \"fc1.dw.tp0\" -> "
                                    "\"fc1.dw.dp0\"\n";
    QTest::newRow("identical") << QStringList{plans + "mlp_tp2.json", plans + "mlp_tp2.json"} << 0
                               << "identical\n";
    QTest::newRow("generated with its bug")
        << QStringList{"--model",  "llama3-8b", "--parallel", "dp=8,tp=2,pp=2,mb=4",
                       "--layers", "2",         "--inject",   "tv07-eps@layer=1,rank=21"}
        << 1
        << "rank 21 op 'layers.1.attention_norm.out#0' changed: attribute eps: 1e-05 -> 0.001\n"
           "1 difference(s): 1 changed, 0 added, 0 removed\n";
    QTest::newRow("missing plan") << QStringList{plans + "mlp_tp2.json", plans + "nope.json"} << 2 << "";
  }
  void diffNamesWhatDiffers() {
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);
    QFETCH(QString, expected);
    Run r = cli(QStringList{"diff"} + args);
    QVERIFY2(r.exitCode == exitCode, qPrintable(r.out + r.err));
    QVERIFY2(expected.isEmpty() || r.out.startsWith(expected), qPrintable(r.out));
    if (exitCode == 2) QVERIFY2(r.err.contains("nope.json"), qPrintable(r.err));
  }

  void impossibleCombinationsAreRejectedWithExitCode2_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("tp does not divide heads")
        << QStringList{"--model", "gpt-tiny", "--parallel", "tp=3"} << "does not divide";
    QTest::newRow("pp exceeds layers")
        << QStringList{"--model", "gpt-tiny", "--parallel", "pp=4", "--layers", "2"}
        << "exceeds the number of layers";
    QTest::newRow("unknown key") << QStringList{"--model", "gpt-tiny", "--parallel", "xp=2"} << "unknown key";
    QTest::newRow("unknown model") << QStringList{"--model", "gpt-huge", "--parallel", "dp=2"}
                                   << "unknown model";
    QTest::newRow("bug without its site")
        << QStringList{"--model", "gpt-tiny", "--parallel", "dp=2", "--inject", "tv01-allreduce-missing"}
        << "needs tp";
  }
  void impossibleCombinationsAreRejectedWithExitCode2() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    for (const QString& command : {QString("generate"), QString("verify")}) {
      QStringList a = QStringList{command} + args;
      if (command == "generate") a << "-o" << tmp_.filePath("never.json");
      Run r = cli(a);
      QVERIFY2(r.exitCode == 2, qPrintable(command + ": " + r.out + r.err));
      QVERIFY2(r.err.contains(message), qPrintable(r.err));
    }
    QVERIFY(!QFile::exists(tmp_.filePath("never.json")));
  }
};

QTEST_APPLESS_MAIN(TestCliZoo)
#include "test_cli_zoo.moc"
