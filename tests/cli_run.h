// Runs the `paraproof` CLI under test (PARAPROOF_CLI) as a user types it: exit code, stdout and stderr.
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QStringList>

struct CliRun {
  int exitCode = -1;  // -1: crashed or did not finish
  QString out, err;
};

// Any program (mpirun, ...) the same way, with `env` added to the environment.
inline CliRun runProgram(const QString& program, const QStringList& args, int waitMs,
                         const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
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

inline CliRun runCli(const QStringList& args, int waitMs) {
  return runProgram(PARAPROOF_CLI, args, waitMs);
}
