// `mpirun -n 2 paraproof verify PLAN --mpi`: the two processes share the stages and rank 0 writes the same
// report one process writes (timings aside), for equivalent, failing and generated plans.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_run.h"

namespace {

// A report without its timings: what must be identical between one process and many.
QJsonValue withoutTimings(const QJsonValue& v) {
  if (v.isObject()) {
    QJsonObject o;
    const QJsonObject in = v.toObject();
    for (auto it = in.begin(); it != in.end(); ++it)
      if (it.key() != "seconds" && it.key() != "phases") o.insert(it.key(), withoutTimings(it.value()));
    return o;
  }
  if (v.isArray()) {
    QJsonArray a;
    for (const QJsonValue& x : v.toArray())
      a.append(withoutTimings(x));
    return a;
  }
  return v;
}

QJsonValue readReport(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return withoutTimings(QJsonDocument::fromJson(f.readAll()).object());
}

// mpirun as CI runs it: as root, and with 2 ranks even where fewer cores are free.
CliRun run(const QString& program, const QStringList& args) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
  env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  env.insert("OMPI_MCA_rmaps_base_oversubscribe", "1");
  return runProgram(program, args, 600000, env);
}

}  // namespace

class TestMpi : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifndef PARAPROOF_MPIEXEC
    QSKIP("built without MPI (libopenmpi-dev)");
#endif
  }

  void sameReportAsOneProcess_data() {
    QTest::addColumn<QStringList>("plan");
    QTest::addColumn<int>("expected");
    const QString fx = PARAPROOF_FIXTURES "/plans/";
    QTest::newRow("equivalent dp2tp2") << QStringList{fx + "mlp_dp2tp2.json"} << 0;
    QTest::newRow("missing all-reduce") << QStringList{fx + "mlp_tp2_missing_allreduce.json"} << 1;
    QTest::newRow("wrong group") << QStringList{fx + "mlp_dp2tp2_wrong_group.json"} << 1;
    QTest::newRow("generated llama, far micro-batch bug")
        << QStringList{"--model",    "llama-micro",
                       "--parallel", "dp=2,tp=2,pp=2,mb=4",
                       "--inject",   "tv07-eps@layer=1,rank=5,mb=3"}
        << 1;
    QTest::newRow("generated gpt, no dedup")
        << QStringList{"--model", "gpt-tiny", "--parallel", "dp=2,tp=2", "--no-dedup"} << 0;
    QTest::newRow("reduction artefact re-checked at full size")
        << QStringList{PARAPROOF_FIXTURES "/soundness/count-six-constants.json"} << 0;
    QTest::newRow("wrong count, full size") << QStringList{fx + "newcomer_dp2tp2_wrong_count.json"} << 1;
    QTest::newRow("invalid input") << QStringList{PARAPROOF_FIXTURES "/invalid/cycle.json"} << 2;
  }

  void sameReportAsOneProcess() {
#ifdef PARAPROOF_MPIEXEC
    QFETCH(QStringList, plan);
    QFETCH(int, expected);
    QTemporaryDir dir;
    const QString one = dir.filePath("one.json"), many = dir.filePath("many.json");
    const CliRun single =
        run(PARAPROOF_CLI, QStringList{"verify"} + plan + QStringList{"--json", one, "--jobs", "1"});
    QCOMPARE(single.exitCode, expected);
    const CliRun shared = run(PARAPROOF_MPIEXEC, QStringList{"-n", "2", PARAPROOF_CLI, "verify"} + plan +
                                                     QStringList{"--json", many, "--jobs", "1", "--mpi"});
    QVERIFY2(shared.exitCode == expected, qPrintable(shared.err));
    const QJsonValue a = readReport(one), b = readReport(many);
    QVERIFY(!a.toObject().isEmpty());
    QCOMPARE(b, a);
    if (expected != 2) QVERIFY2(shared.err.contains("2 processes"), qPrintable(shared.err));
#endif
  }
};

QTEST_GUILESS_MAIN(TestMpi)
#include "test_mpi.moc"
