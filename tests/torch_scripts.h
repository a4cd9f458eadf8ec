// Helpers of the tests that import PyTorch scripts (test_import_torch, ui/test_inspector_torch).
#pragma once

#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

// Debian's python3 with python3-torch; the tests skip without it.
inline bool torchAvailable() {
  QProcess p;
  p.start("/usr/bin/python3", {"-c", "import torch"});
  return p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

inline QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The line of an error-case script marked "# ERROR-LINE" (1-based; -1: none), the line its error must name;
// "# ERROR-LINE-2" marks a second one the same error must name.
inline int markedLine(const QString& script, const QString& marker = "# ERROR-LINE") {
  const QStringList lines = readText(script).split('\n');
  for (int i = 0; i < lines.size(); ++i)
    if (lines[i].contains(marker)) return i + 1;
  return -1;
}

// CTest runs a long data-driven test as several processes ("PARAPROOF_TEST_SHARD=i/n", tests/CMakeLists.txt)
// so that `ctest -j` spreads its rows over the cores: row `row` belongs to shard i when row % n == i. Without
// the variable every row runs.
inline bool inTestShard(int row) {
  const QStringList shard = qEnvironmentVariable("PARAPROOF_TEST_SHARD").split('/');
  if (shard.size() != 2) return true;
  const int n = shard[1].toInt();
  return n <= 1 || row % n == shard[0].toInt();
}
