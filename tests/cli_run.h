// Runs the `paraproof` CLI under test (PARAPROOF_CLI) as a user types it: exit code, stdout and stderr.
#pragma once

#include <QProcess>
#include <QStringList>

struct CliRun {
  int exitCode = -1;  // -1: crashed or did not finish
  QString out, err;
};

inline CliRun runCli(const QStringList& args, int waitMs) {
  QProcess p;
  p.start(PARAPROOF_CLI, args);
  CliRun r;
  if (!p.waitForStarted(10000) || !p.waitForFinished(waitMs)) {
    p.kill();
    p.waitForFinished();
    r.err = "did not finish";
    return r;
  }
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}
