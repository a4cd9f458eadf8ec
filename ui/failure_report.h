// File > Export Failure Report: one self-contained file an engineer attaches to a bug report. It holds the
// plan's name and source, the verdict with its counts and phase timings, the injected bug if any, a table of
// the failing (and inconclusive) stages with the op each counterexample names first, each failing stage's
// counterexample (expected vs actual, the inputs), both views as drawn, and the full text report. HTML
// inlines the views as SVG; Markdown embeds them as PNG data URIs. Written atomically.
#pragma once

#include <QByteArray>
#include <QImage>
#include <QString>

#include "core/verify/report.h"

namespace paraproof::ui {

struct FailureReport {
  const verify::Report* report = nullptr;
  QString planName, planSource;
  QString bugNote;                               // the injected catalog bug, empty if none
  QByteArray logicalSvg, parallelSvg;            // HTML
  QImage logicalImage, parallelImage;            // Markdown
  static constexpr int kMaxCounterexamples = 5;  // failing stages whose counterexample is written out
};

QString failureReportHtml(const FailureReport& r);
QString failureReportMarkdown(const FailureReport& r);
// Markdown for *.md / *.markdown, HTML otherwise. False with `error` set when the file cannot be written.
bool writeFailureReport(const QString& path, const FailureReport& r, QString* error);

}  // namespace paraproof::ui
