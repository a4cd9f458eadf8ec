#include "ui/failure_report.h"

#include <QBuffer>
#include <QDateTime>
#include <QSaveFile>

#include "ui/counterexample_panel.h"
#include "ui/model/stage_state.h"
#include "ui/theme.h"

namespace paraproof::ui {
namespace {

QString esc(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

struct Counts {
  int verified = 0, failed = 0, inconclusive = 0, notRun = 0;
};

Counts countOf(const verify::Report& r) {
  Counts c;
  for (const verify::StageResult& res : r.results) {
    const StageState s = stateOf(res);
    c.verified += s == StageState::Verified;
    c.failed += s == StageState::Failed;
    c.inconclusive += s == StageState::Inconclusive;
    c.notRun += s == StageState::None;
  }
  return c;
}

// Stages that did not verify, failing ones first, in stage order.
std::vector<size_t> unprovedStages(const verify::Report& r) {
  std::vector<size_t> failed, inconclusive;
  for (size_t i = 0; i < r.results.size() && i < r.stages.size(); ++i) {
    const StageState s = stateOf(r.results[i]);
    if (s == StageState::Failed) failed.push_back(i);
    if (s == StageState::Inconclusive) inconclusive.push_back(i);
  }
  failed.insert(failed.end(), inconclusive.begin(), inconclusive.end());
  return failed;
}

QString firstDifference(const verify::StageInfo& s) {
  if (!s.firstDifference) return {};
  const auto& d = *s.firstDifference;
  return QStringLiteral("rank %1: %2")
      .arg(d.rank)
      .arg(QString::fromStdString(d.tensor.empty() ? d.op : d.tensor));
}

QString scopeOf(const verify::StageInfo& s) {
  return s.scopes.empty() ? QString() : QString::fromStdString(s.scopes.front());
}

QString ranksOf(const verify::StageInfo& s) {
  if (s.devices.empty()) return QStringLiteral("-");
  if (s.devices.size() == 1) return QString::number(s.devices.front());
  return QStringLiteral("%1 (%2..%3)").arg(s.devices.size()).arg(s.devices.front()).arg(s.devices.back());
}

QString verdictOf(const verify::Report& r) {
  return QString::fromLatin1(verify::verdictName(r.verdict)).replace('_', ' ').toUpper() +
         (r.cancelled ? QStringLiteral(" (cancelled)") : QString());
}

QString phasesOf(const verify::Report& r) {
  QStringList parts;
  for (const auto& [name, seconds] : r.phases)
    parts << QStringLiteral("%1 %2 s").arg(QString::fromStdString(name)).arg(seconds, 0, 'f', 2);
  return parts.join(", ");
}

// "25 stages: 23 verified, 2 failed, 0 inconclusive, 0 not run; 0.41 s (validate 0.01 s, ...)"
QString summaryOf(const verify::Report& r) {
  const Counts c = countOf(r);
  return QStringLiteral("%1 stages: %2 verified, %3 failed, %4 inconclusive, %5 not run; %6 s (%7)")
      .arg(r.results.size())
      .arg(c.verified)
      .arg(c.failed)
      .arg(c.inconclusive)
      .arg(c.notRun)
      .arg(r.seconds, 0, 'f', 2)
      .arg(phasesOf(r));
}

QByteArray pngOf(const QImage& image) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  image.save(&buffer, "PNG");
  return bytes;
}

// An SVG document without its XML declaration, to inline in HTML.
QString inlineSvg(const QByteArray& svg) {
  QString s = QString::fromUtf8(svg);
  if (const int start = s.indexOf(QStringLiteral("<svg")); start > 0) s.remove(0, start);
  return s;
}

}  // namespace

QString failureReportHtml(const FailureReport& r) {
  const verify::Report& rep = *r.report;
  const Theme& t = theme();
  QString h;
  h += QStringLiteral(
           "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>ParaProof: %1</title>\n"
           "<style>body { font-family: sans-serif; margin: 24px; background: %2; color: %3; }\n"
           "table.stages { border-collapse: collapse; } table.stages td, table.stages th "
           "{ border: 1px solid %4; padding: 2px 8px; text-align: left; }\n"
           "pre { background: %5; padding: 8px; overflow-x: auto; }\n"
           "figure { margin: 12px 0; overflow-x: auto; border: 1px solid %4; }\n%6</style></head><body>\n")
           .arg(r.planName.toHtmlEscaped(), t.canvas.name(), t.text.name(), t.gridLine.name(),
                t.header.name(), t.css());
  h += QStringLiteral("<h1>%1</h1>\n").arg(r.planName.toHtmlEscaped());
  h += QStringLiteral("<p class='dim'>%1 &middot; written by ParaProof Inspector on %2</p>\n")
           .arg(r.planSource.toHtmlEscaped(), QDateTime::currentDateTime().toString(Qt::ISODate));
  h += QStringLiteral("<h2>Verdict: <span style='color:%1'>%2</span></h2>\n")
           .arg(t.stateText(rep.verdict == verify::Verdict::Equivalent      ? StageState::Verified
                            : rep.verdict == verify::Verdict::NotEquivalent ? StageState::Failed
                                                                            : StageState::Inconclusive)
                    .name(),
                verdictOf(rep));
  h += QStringLiteral("<p>%1</p>\n").arg(summaryOf(rep).toHtmlEscaped());
  if (!r.bugNote.isEmpty())
    h += QStringLiteral("<table class='bug' width='100%'><tr><td><b>Injected bug:</b> %1</td></tr></table>\n")
             .arg(r.bugNote.toHtmlEscaped());
  for (const auto& e : rep.errors)
    h += QStringLiteral("<p class='err'>%1</p>\n").arg(esc(e.str()));

  const std::vector<size_t> unproved = unprovedStages(rep);
  if (!unproved.empty()) {
    h += QStringLiteral(
        "<h2>Stages not proved</h2>\n<table class='stages'><tr><th>stage</th><th>status</th>"
        "<th>kind</th><th>scope</th><th>ranks</th><th>differs first at</th></tr>\n");
    for (size_t i : unproved) {
      const verify::StageInfo& s = rep.stages[i];
      const StageState st = stateOf(rep.results[i]);
      h += QStringLiteral(
               "<tr><td><a href='#stage-%1'>%1</a></td><td style='color:%2'>%3</td><td>%4</td>"
               "<td>%5</td><td>%6</td><td>%7</td></tr>\n")
               .arg(s.id)
               .arg(t.stateText(st).name(), stateName(st), QString::fromLatin1(verify::stageKindName(s.kind)),
                    scopeOf(s).toHtmlEscaped(), ranksOf(s), firstDifference(s).toHtmlEscaped());
    }
    h += "</table>\n";
    h += QStringLiteral("<h2>Counterexamples</h2>\n");
    int written = 0;
    for (size_t i : unproved) {
      if (stateOf(rep.results[i]) != StageState::Failed || written++ >= FailureReport::kMaxCounterexamples)
        continue;
      h += QStringLiteral("<section id='stage-%1'>%2</section>\n")
               .arg(rep.stages[i].id)
               .arg(counterexampleHtml(rep.stages[i], rep.results[i], r.bugNote));
    }
  }
  h += QStringLiteral("<h2>The plan as drawn</h2>\n");
  for (auto [title, svg] :
       {std::pair{QStringLiteral("Logical"), &r.logicalSvg}, {QStringLiteral("Parallel"), &r.parallelSvg}})
    if (!svg->isEmpty()) h += QStringLiteral("<h3>%1</h3><figure>%2</figure>\n").arg(title, inlineSvg(*svg));
  h += QStringLiteral("<h2>Text report</h2>\n<pre>%1</pre>\n</body></html>\n")
           .arg(QString::fromStdString(verify::reportToText(rep)).toHtmlEscaped());
  return h;
}

QString failureReportMarkdown(const FailureReport& r) {
  const verify::Report& rep = *r.report;
  auto cell = [](QString s) { return s.replace('|', QStringLiteral("\\|")).replace('\n', ' '); };
  QString m;
  m += QStringLiteral("# %1\n\n").arg(r.planName);
  m += QStringLiteral("%1, written by ParaProof Inspector on %2\n\n")
           .arg(r.planSource, QDateTime::currentDateTime().toString(Qt::ISODate));
  m += QStringLiteral("## Verdict: %1\n\n").arg(verdictOf(rep));
  m += summaryOf(rep) + "\n\n";
  if (!r.bugNote.isEmpty()) m += QStringLiteral("> **Injected bug:** %1\n\n").arg(r.bugNote);
  for (const auto& e : rep.errors)
    m += QStringLiteral("- %1\n").arg(QString::fromStdString(e.str()));
  const std::vector<size_t> unproved = unprovedStages(rep);
  if (!unproved.empty()) {
    m += QStringLiteral(
        "## Stages not proved\n\n| stage | status | kind | scope | ranks | differs first at |\n"
        "|---|---|---|---|---|---|\n");
    for (size_t i : unproved) {
      const verify::StageInfo& s = rep.stages[i];
      m += QStringLiteral("| %1 | %2 | %3 | %4 | %5 | %6 |\n")
               .arg(s.id)
               .arg(stateName(stateOf(rep.results[i])), QString::fromLatin1(verify::stageKindName(s.kind)),
                    cell(scopeOf(s)), ranksOf(s), cell(firstDifference(s)));
    }
    m += "\n";
  }
  m += QStringLiteral("## The plan as drawn\n\n");
  for (auto [title, image] : {std::pair{QStringLiteral("logical"), &r.logicalImage},
                              {QStringLiteral("parallel"), &r.parallelImage}})
    if (!image->isNull())
      m += QStringLiteral("![%1 view](data:image/png;base64,%2)\n\n")
               .arg(title, QString::fromLatin1(pngOf(*image).toBase64()));
  m += QStringLiteral("## Report (counterexamples included)\n\n```\n%1```\n")
           .arg(QString::fromStdString(verify::reportToText(rep, true)));
  return m;
}

bool writeFailureReport(const QString& path, const FailureReport& r, QString* error) {
  const bool markdown =
      path.endsWith(".md", Qt::CaseInsensitive) || path.endsWith(".markdown", Qt::CaseInsensitive);
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  file.write((markdown ? failureReportMarkdown(r) : failureReportHtml(r)).toUtf8());
  if (!file.commit()) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

}  // namespace paraproof::ui
