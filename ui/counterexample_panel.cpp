#include "ui/counterexample_panel.h"

#include <QEvent>
#include <QStringList>
#include <cmath>

#include "ui/model/stage_state.h"
#include "ui/stage_table.h"
#include "ui/theme.h"

namespace paraproof::ui {
namespace {

constexpr size_t kMaxShownElements = 64;

QString num(double v) {
  if (std::abs(v - std::round(v)) < 1e-12 && std::abs(v) < 1e9)
    return QString::number(static_cast<long long>(std::round(v)));
  return QString::number(v, 'g', 6);
}

QString indexString(const std::vector<int64_t>& index) {
  QStringList parts;
  for (int64_t i : index)
    parts << QString::number(i);
  return "[" + parts.join(", ") + "]";
}

// " (full size [4:6, 0:4] of [8, 8])" for a diff found at reduced shape; empty otherwise.
QString fullRange(const verify::ElementDiff& d) {
  if (d.fullIndex.empty()) return {};
  QStringList parts, shape;
  for (const auto& [b, e] : d.fullIndex)
    parts << (e - b == 1 ? QString::number(b) : QStringLiteral("%1:%2").arg(b).arg(e));
  for (int64_t n : d.fullShape)
    shape << QString::number(n);
  return QStringLiteral(" (full size [%1] of [%2])").arg(parts.join(", "), shape.join(", "));
}

QString where(int device) {
  return device == kNone ? QStringLiteral("logical") : QStringLiteral("rank %1").arg(device);
}

// A tensor's values: a grid for matrices, a flat list otherwise; long tensors are cut.
QString tensorHtml(const verify::TensorValues& t) {
  QString html = QStringLiteral("<p class='tensor'><b>%1</b> <span class='dim'>%2 %3</span></p>")
                     .arg(QString::fromStdString(t.name).toHtmlEscaped(), where(t.device),
                          QString::fromStdString(shapeString(t.shape)));
  const size_t n = std::min(t.values.size(), kMaxShownElements);
  const size_t cols = t.shape.size() >= 2 ? static_cast<size_t>(std::max<int64_t>(1, t.shape.back())) : 16;
  html += "<table class='grid'>";
  for (size_t i = 0; i < n; i += cols) {
    html += "<tr>";
    for (size_t j = i; j < std::min(n, i + cols); ++j)
      html += "<td>" + num(t.values[j]) + "</td>";
    html += "</tr>";
  }
  html += "</table>";
  if (t.values.size() > n)
    html += QStringLiteral("<p class='dim'>&hellip; %1 more</p>").arg(t.values.size() - n);
  return html;
}

}  // namespace

CounterexamplePanel::CounterexamplePanel(QWidget* parent) : QTextBrowser(parent) {
  document()->setDefaultStyleSheet(theme().css());
  // Break lines between words only, and never inside a cell of the differences table: a tensor name
  // ("layers.1.attention_norm.out#0") is never split; a narrow dock scrolls sideways instead.
  setWordWrapMode(QTextOption::WordWrap);
  setOpenLinks(false);
  showNothing(tr("Select a stage to see its verdict. Failed stages show a counterexample here."));
}

void CounterexamplePanel::showHtml(const QString& html) {
  html_ = html;
  setHtml(html);
}

// The style sheet is the theme's: a palette change re-renders what is shown with the new colours.
void CounterexamplePanel::changeEvent(QEvent* event) {
  QTextBrowser::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  document()->setDefaultStyleSheet(theme().css());
  setHtml(html_);
}

void CounterexamplePanel::showNothing(const QString& hint) {
  diffCount_ = 0;
  showHtml(QStringLiteral("<p class='dim'>%1</p>").arg(hint.toHtmlEscaped()));
}

QString counterexampleHtml(const verify::StageInfo& stage, const std::optional<verify::StageResult>& result,
                           const QString& bugNote) {
  QString html;
  StageState state = result ? stateOf(*result) : StageState::Pending;
  html += QStringLiteral("<h3>Stage %1 &mdash; <span style='color:%2'>%3</span></h3>")
              .arg(stage.id)
              .arg(theme().stateText(state).name(), stateName(state));
  QStringList scopes;
  for (const auto& s : stage.scopes)
    scopes << QString::fromStdString(s).toHtmlEscaped();
  html += QStringLiteral("<p class='dim'>%1 stage on ranks %2; %3 logical / %4 device ops%5</p>")
              .arg(verify::stageKindName(stage.kind))
              .arg(compactRanks(stage.devices))
              .arg(stage.logicalOps.size())
              .arg(stage.parallelOps.size())
              .arg(scopes.isEmpty() ? QString() : "; scopes " + scopes.join(", "));
  if (!bugNote.isEmpty())
    html +=
        QStringLiteral("<table class='bug' width='100%'><tr><td><b>Injected bug:</b> %1</td></tr></table>")
            .arg(bugNote.toHtmlEscaped());
  if (!result) return html + QObject::tr("<p class='dim'>Not checked yet.</p>");
  if (!result->reason.empty())
    html += QStringLiteral("<p>%1</p>").arg(QString::fromStdString(result->reason).toHtmlEscaped());
  if (result->reusedFrom != kNone)
    html += QObject::tr("<p class='dim'>Identical to stage %1 (same canonical form), verdict reused.</p>")
                .arg(result->reusedFrom);
  html += QStringLiteral("<p class='dim'>engine %1, %2 s</p>")
              .arg(QString::fromStdString(result->engine).toHtmlEscaped())
              .arg(result->seconds, 0, 'f', 3);
  if (!result->counterexample) {
    if (result->status == solver::Status::Verified)
      html += QObject::tr(
          "<p class='ok'>Every output element equals its logical counterpart for all inputs.</p>");
    return html;
  }
  const verify::CounterexampleReport& cex = *result->counterexample;
  if (cex.confirmed)
    html += QObject::tr("<p><b>Counterexample</b> (confirmed by concrete evaluation at full size)</p>");
  else if (cex.reducedConfirmed)
    html += QObject::tr(
                "<p><b>Counterexample</b> (confirmed at reduced shape only, full-size re-check %1: may be a "
                "reduction artefact)</p>")
                .arg(QString::fromStdString(result->fullSizeCheck).toHtmlEscaped());
  else
    html += QObject::tr("<p><b>Counterexample</b> (not confirmed: may rely on an abstraction)</p>");
  html += QObject::tr("<p><b>Expected vs actual</b> &mdash; %1 differing elements</p>").arg(cex.diffs.size());
  html +=
      "<table class='diffs' cellspacing='0'><tr><th>where</th><th>tensor</th><th>logical</th><th>index</th>"
      "<th>expected</th><th>actual</th></tr>";
  for (size_t i = 0; i < cex.diffs.size() && i < kMaxShownElements; ++i) {
    const verify::ElementDiff& d = cex.diffs[i];
    html += QStringLiteral(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td class='bad'>%6</td></tr>")
                .arg(d.device == kNone ? QObject::tr("sum of parts") : where(d.device),
                     QString::fromStdString(d.tensor).toHtmlEscaped(),
                     QString::fromStdString(d.logicalTensor).toHtmlEscaped(),
                     indexString(d.index) + fullRange(d), num(d.expected), num(d.actual));
  }
  html += "</table>";
  if (cex.diffs.size() > kMaxShownElements)
    html += QStringLiteral("<p class='dim'>&hellip; %1 more</p>").arg(cex.diffs.size() - kMaxShownElements);
  if (!cex.logicalInputs.empty()) {
    html += QObject::tr("<p><b>Logical inputs</b></p>");
    for (const auto& t : cex.logicalInputs)
      html += tensorHtml(t);
  }
  if (!cex.parallelInputs.empty()) {
    html += QObject::tr("<p><b>Device inputs</b></p>");
    for (const auto& t : cex.parallelInputs)
      html += tensorHtml(t);
  }
  return html;
}

void CounterexamplePanel::showStage(const verify::StageInfo& stage,
                                    const std::optional<verify::StageResult>& result,
                                    const QString& bugNote) {
  diffCount_ = result && result->counterexample ? static_cast<int>(result->counterexample->diffs.size()) : 0;
  showHtml(counterexampleHtml(stage, result, bugNote));
}

}  // namespace paraproof::ui
