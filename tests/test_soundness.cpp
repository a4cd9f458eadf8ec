// Soundness fixtures (tests/fixtures/soundness): small hand-written plans, each the smallest instance of a
// class of wrong plan that a verifier could wrongly prove (or of a correct plan it could wrongly reject).
// Every fixture states metadata.expect.verdict (and for a bug, optionally the scope and device that must be
// named); it is verified through the CLI once per mode: by default, at full shapes (--no-reduce), without
// reuse of identical stages, and with each engine alone. A fixture can narrow the modes with
// metadata.expect.modes: a list of argument lists, e.g. [[], ["--no-reduce"]].
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>

#include "core/ir/ir.h"

using namespace paraproof;

namespace {

std::string soundnessDir() {
  return std::string(PARAPROOF_FIXTURES) + "/soundness";
}

Json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return Json::parse(in);
}

int expectedExitCode(const std::string& verdict) {
  if (verdict == "equivalent") return 0;
  if (verdict == "not_equivalent") return 1;
  if (verdict == "invalid") return 2;
  return 3;
}

const Json kDefaultModes =
    Json::array({Json::array(), Json::array({"--no-reduce"}), Json::array({"--no-dedup"}),
                 Json::array({"--engine", "z3"}), Json::array({"--engine", "random"})});

bool namesPlace(const Json& report, const Json& expect) {
  if (!expect.contains("scope")) return true;
  for (const Json& s : report.value("stages", Json::array())) {
    if (s.value("verdict", "") != "failed") continue;
    const Json scopes = s.value("scopes", Json::array());
    if (std::find(scopes.begin(), scopes.end(), expect["scope"]) == scopes.end()) continue;
    if (!expect.contains("device")) return true;
    const Json devices = s.value("devices", Json::array());
    if (std::find(devices.begin(), devices.end(), expect["device"]) != devices.end()) return true;
  }
  return false;
}

}  // namespace

class TestSoundness : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void fixtureReachesItsVerdictInEveryMode_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QStringList>("mode");
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(soundnessDir()))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const Json expect = readJson(f.string())["metadata"]["expect"];
      const Json modes = expect.value("modes", kDefaultModes);
      for (const Json& m : modes) {
        QStringList args;
        for (const Json& a : m)
          args << QString::fromStdString(a.get<std::string>());
        const std::string row = f.stem().string() + " [" + args.join(' ').toStdString() + "]";
        QTest::newRow(row.c_str()) << QString::fromStdString(f.string()) << args;
      }
    }
  }
  void fixtureReachesItsVerdictInEveryMode() {
    QFETCH(QString, path);
    QFETCH(QStringList, mode);
    const Json expect = readJson(path.toStdString())["metadata"]["expect"];
    QVERIFY2(expect.contains("verdict") && expect.contains("why"), "metadata.expect needs verdict and why");
    const std::string verdict = expect["verdict"];
    static int n = 0;
    const QString out = tmp_.filePath(QString("report%1.json").arg(n++));
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(PARAPROOF_CLI,
            QStringList{"verify", path, "--json", out, "--timeout", "60", "--jobs", "2"} + mode);
    QVERIFY(p.waitForStarted(10000));
    QVERIFY2(p.waitForFinished(600000), "verify did not finish within 600 s");
    const QString output = QString::fromUtf8(p.readAll());
    QVERIFY2(p.exitStatus() == QProcess::NormalExit, qPrintable("crashed\n" + output));
    QVERIFY2(p.exitCode() == expectedExitCode(verdict),
             qPrintable(QString("expected %1 (exit %2), got exit %3 - %4\n%5")
                            .arg(QString::fromStdString(verdict))
                            .arg(expectedExitCode(verdict))
                            .arg(p.exitCode())
                            .arg(QString::fromStdString(expect["why"].get<std::string>()))
                            .arg(output)));
    if (verdict == "not_equivalent") {
      QVERIFY2(QFile::exists(out), "no JSON report written");
      QVERIFY2(namesPlace(readJson(out.toStdString()), expect),
               qPrintable("no failed stage names the expected scope/device\n" + output));
    }
  }
};

QTEST_APPLESS_MAIN(TestSoundness)
#include "test_soundness.moc"
