#include "ui/theme.h"

#include <QApplication>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <cmath>

namespace paraproof::ui {
namespace {

Theme lightTheme() {
  Theme t;
  t.dark = false;
  t.canvas = QColor(0xFC, 0xFD, 0xFE);
  t.placeholder = QColor(0x54, 0x6E, 0x7A);
  t.opFill = Qt::white;
  t.groupFill = QColor(0xF3, 0xF6, 0xFA);
  t.communicationFill = QColor(0xF5, 0xEE, 0xFA);
  t.inputFill = QColor(0xFA, 0xFA, 0xFA);
  t.text = QColor(0x21, 0x21, 0x21);
  t.detailText = QColor(0x55, 0x60, 0x68);
  t.communicationText = QColor(0x6A, 0x1B, 0x9A);
  t.neutralBorder = QColor(0x78, 0x90, 0x9C);
  t.clusterFill = QColor(0xF7, 0xF9, 0xFC);
  t.clusterBorder = QColor(0xB0, 0xBE, 0xC5);
  t.clusterText = QColor(0x37, 0x47, 0x4F);
  t.failedClusterFill = QColor(0xFF, 0xF1, 0xF2);
  t.edge = QColor(0x90, 0xA4, 0xAE);
  t.edgeText = QColor(0x54, 0x6E, 0x7A);
  t.header = QColor(0xEC, 0xEF, 0xF1);
  t.headerBorder = QColor(0xCF, 0xD8, 0xDC);
  t.dimText = QColor(0x54, 0x6E, 0x7A);
  t.bad = QColor(0xB7, 0x1C, 0x1C);
  t.badFill = QColor(0xFF, 0xCD, 0xD2);
  t.good = QColor(0x2E, 0x7D, 0x32);
  t.bugFill = QColor(0xFF, 0xF8, 0xE1);
  t.bugBorder = QColor(0xFF, 0xB3, 0x00);
  t.gridLine = QColor(0xE0, 0xE0, 0xE0);
  t.deviantFill = QColor(0xFF, 0xCD, 0x96);
  t.deviantText = Qt::black;
  t.stateFills = {t.opFill,
                  QColor(0xE3, 0xF4, 0xE4),
                  QColor(0xEE, 0xEE, 0xEE),
                  QColor(0xFF, 0xEC, 0xB3),
                  QColor(0xD6, 0xEA, 0xFB),
                  QColor(0xFF, 0xCD, 0xD2)};
  return t;
}

Theme darkTheme() {
  Theme t;
  t.dark = true;
  t.canvas = QColor(0x1E, 0x21, 0x25);
  t.placeholder = QColor(0x9A, 0xAB, 0xB5);
  t.opFill = QColor(0x2B, 0x30, 0x36);
  t.groupFill = QColor(0x28, 0x2E, 0x38);
  t.communicationFill = QColor(0x33, 0x2A, 0x3D);
  t.inputFill = QColor(0x26, 0x29, 0x2D);
  t.text = QColor(0xEC, 0xEF, 0xF1);
  t.detailText = QColor(0xB0, 0xBE, 0xC5);
  t.communicationText = QColor(0xD1, 0xA4, 0xF0);
  t.neutralBorder = QColor(0x8A, 0x9B, 0xA5);
  t.clusterFill = QColor(0x25, 0x29, 0x2F);
  t.clusterBorder = QColor(0x55, 0x63, 0x6B);
  t.clusterText = QColor(0xCF, 0xD8, 0xDC);
  t.failedClusterFill = QColor(0x3A, 0x22, 0x25);
  t.edge = QColor(0x78, 0x8C, 0x96);
  t.edgeText = QColor(0xB0, 0xBE, 0xC5);
  t.header = QColor(0x2A, 0x2F, 0x35);
  t.headerBorder = QColor(0x44, 0x4C, 0x54);
  t.dimText = QColor(0xA7, 0xB6, 0xBE);
  t.bad = QColor(0xFF, 0x8A, 0x80);
  t.badFill = QColor(0x5C, 0x1F, 0x24);
  t.good = QColor(0x81, 0xC7, 0x84);
  t.bugFill = QColor(0x3D, 0x33, 0x1A);
  t.bugBorder = QColor(0xFF, 0xB3, 0x00);
  t.gridLine = QColor(0x44, 0x4C, 0x54);
  t.deviantFill = QColor(0x7A, 0x4A, 0x12);
  t.deviantText = QColor(0xFF, 0xF3, 0xE0);
  t.stateFills = {t.opFill,
                  QColor(0x1E, 0x36, 0x22),
                  QColor(0x33, 0x36, 0x3A),
                  QColor(0x45, 0x37, 0x14),
                  QColor(0x1A, 0x33, 0x4D),
                  QColor(0x4D, 0x1F, 0x22)};
  return t;
}

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2B, 0x2D, 0x30), base(0x1E, 0x1F, 0x22), text(0xE6, 0xE8, 0xEA);
  const QColor button(0x3A, 0x3D, 0x41), disabled(0x7F, 0x84, 0x8A), highlight(0x3D, 0x6F, 0xD1);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2B));
  p.setColor(QPalette::ToolTipBase, QColor(0x32, 0x35, 0x39));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xFF, 0x6E, 0x6E));
  p.setColor(QPalette::Light, button.lighter(140));
  p.setColor(QPalette::Midlight, button.lighter(120));
  p.setColor(QPalette::Mid, button.darker(120));
  p.setColor(QPalette::Dark, button.darker(160));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x8A, 0xB4, 0xF8));
  p.setColor(QPalette::LinkVisited, QColor(0xC5, 0x8A, 0xF9));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

// The palette the application started with: the system's (or the platform theme's).
QPalette& systemPalette() {
  static QPalette p = QApplication::palette();
  return p;
}
const QString& systemStyle() {
  static const QString name = QApplication::style()->name();
  return name;
}

double luminance(const QColor& c) {
  auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

}  // namespace

static_assert(static_cast<size_t>(StageState::Failed) + 1 == std::tuple_size_v<decltype(Theme::stateFills)>);

QColor Theme::stateFill(StageState s) const {
  return stateFills[static_cast<size_t>(s)];
}

QColor Theme::stateText(StageState s) const {
  return dark ? stateColor(s).lighter(125) : stateColor(s).darker(130);
}

QString Theme::css() const {
  return QStringLiteral(R"(
  body { font-size: 9.5pt; }
  h3 { margin: 2px 0 6px 0; }
  .dim { color: %1; }
  .bad { background: %2; color: %3; font-weight: bold; }
  .ok { color: %4; font-weight: bold; }
  .bug { background: %5; border: 1px solid %6; }
  .err { color: %3; }
  table.diffs th { background: %7; text-align: left; padding: 2px 8px; }
  table.diffs td { padding: 2px 8px; white-space: nowrap; }
  table.grid td { padding: 1px 6px; border: 1px solid %8; text-align: right; font-family: monospace; }
  p.tensor { margin: 8px 0 2px 0; }
)")
      .arg(dimText.name(), badFill.name(), bad.name(), good.name(), bugFill.name(), bugBorder.name(),
           header.name(), gridLine.name());
}

QString Theme::dim(const QString& html) const {
  return QStringLiteral("<span style='color:%1'>%2</span>").arg(dimText.name(), html);
}

Theme Theme::forPalette(const QPalette& palette) {
  return palette.color(QPalette::Window).lightness() < 128 ? darkTheme() : lightTheme();
}

const Theme& theme() {
  // Painting asks for the theme of every box: one palette comparison, not a new Theme each time.
  thread_local qint64 key = -1;
  thread_local Theme cached;
  const QPalette palette = QApplication::palette();
  if (palette.cacheKey() != key) {
    key = palette.cacheKey();
    cached = Theme::forPalette(palette);
  }
  return cached;
}

QString themeChoiceName(ThemeChoice c) {
  switch (c) {
    case ThemeChoice::System:
      return QObject::tr("System");
    case ThemeChoice::Light:
      return QObject::tr("Light");
    case ThemeChoice::Dark:
      return QObject::tr("Dark");
  }
  return {};
}

void applyTheme(ThemeChoice c) {
  systemPalette();  // remember the starting palette and style before the first change
  systemStyle();
  if (c == ThemeChoice::System) {
    if (QApplication::style()->name() != systemStyle()) QApplication::setStyle(systemStyle());
    QApplication::setPalette(systemPalette());
    return;
  }
  // Fusion draws every control from the palette, so both forced themes look the same on every platform.
  if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"))) QApplication::setStyle(fusion);
  QApplication::setPalette(c == ThemeChoice::Dark ? darkPalette() : QApplication::style()->standardPalette());
}

ThemeChoice savedThemeChoice() {
  const int v = QSettings().value(QStringLiteral("view/theme"), 0).toInt();
  return v == 1 ? ThemeChoice::Light : v == 2 ? ThemeChoice::Dark : ThemeChoice::System;
}

void saveThemeChoice(ThemeChoice c) {
  QSettings().setValue(QStringLiteral("view/theme"), static_cast<int>(c));
}

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor stateColor(StageState s) {
  switch (s) {
    case StageState::None:
      return QColor(0x90, 0xA4, 0xAE);
    case StageState::Pending:
      return QColor(0x9E, 0x9E, 0x9E);
    case StageState::Running:
      return QColor(0x1E, 0x88, 0xE5);
    case StageState::Verified:
      return QColor(0x43, 0xA0, 0x47);
    case StageState::Failed:
      return QColor(0xE5, 0x39, 0x35);
    case StageState::Inconclusive:
      return QColor(0xFF, 0xA0, 0x00);
  }
  return Qt::gray;
}

QColor stateFillColor(StageState s) {
  return theme().stateFill(s);
}

QColor selectionColor() {
  return QColor(0x28, 0x35, 0x93);
}
QColor linkColor() {
  return QColor(0x8E, 0x24, 0xAA);
}

}  // namespace paraproof::ui
