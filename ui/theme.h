// The inspector's colours, light or dark. They follow the application palette: a dark system palette (or
// View > Theme > Dark) gives dark canvases, boxes and panels with light text, so every text keeps its
// contrast (tests/ui/test_inspector_theme.cpp measures it). Stage-state border colours are shared by both
// themes.
#pragma once

#include <QColor>
#include <QPalette>
#include <QString>
#include <array>

#include "ui/model/stage_state.h"

namespace paraproof::ui {

struct Theme {
  bool dark = false;
  QColor canvas, placeholder;                              // graph view background, its empty-view text
  QColor opFill, groupFill, communicationFill, inputFill;  // node fills when no stage state colours them
  QColor text, detailText, communicationText;  // node title, second line, a collective's second line
  QColor neutralBorder;                        // a node no stage covers yet
  QColor clusterFill, clusterBorder, clusterText, failedClusterFill;
  QColor edge, edgeText;
  QColor header, headerBorder, dimText;  // view headers; secondary text in labels and rich text
  QColor bad, badFill, good, bugFill, bugBorder, gridLine;
  QColor deviantFill, deviantText;   // a differing property in the properties panel
  std::array<QColor, 6> stateFills;  // per StageState (in its order); None is opFill

  QColor stateFill(StageState s) const;    // a node's fill for its stage state
  QColor stateText(StageState s) const;    // a state's name as text on the palette's base colour
  QString css() const;                     // a style sheet for the rich-text panels
  QString dim(const QString& html) const;  // secondary text, e.g. "12 ops" after a header's title

  static Theme forPalette(const QPalette& palette);
};

// The theme of the application palette now (cached per palette).
const Theme& theme();

QColor stateColor(StageState s);      // strong colour, both themes: borders, table decorations, legend
QColor stateFillColor(StageState s);  // the theme's light tint: node fill
// Colours for selection and lineage links, distinct from every stage state.
QColor selectionColor();
QColor linkColor();

enum class ThemeChoice { System, Light, Dark };
QString themeChoiceName(ThemeChoice c);
// Sets the application palette: the one the application started with (System), or the Fusion style's light
// or dark one. Widgets repaint through their PaletteChange events.
void applyTheme(ThemeChoice c);
ThemeChoice savedThemeChoice();  // View > Theme, from the settings (System when unset)
void saveThemeChoice(ThemeChoice c);

// WCAG contrast ratio of two colours (1 to 21); text wants 4.5 or more.
double contrastRatio(const QColor& a, const QColor& b);

}  // namespace paraproof::ui
