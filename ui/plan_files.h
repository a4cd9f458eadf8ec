// Reading a plan for a window: a plan JSON file, or a PyTorch SCRIPT.py imported by a child Python process
// (docs/torch-import.md; seconds: call it on a pool thread). One place for both windows, so the main window
// and compare mode read the same files the same way and name the same errors.
#pragma once

#include <QString>
#include <memory>

#include "core/plan/plan.h"

namespace paraproof::ui {

bool isScript(const QString& path);  // a SCRIPT.py to import, by its name

enum class Checked { AsLoaded, Validated };
// The plan, or none and `error` with one diagnostic a line (a script's naming its SCRIPT.py line; an importer
// traceback kept for the report). `Validated` also runs validatePlan and fails on its diagnostics (compare
// mode diffs plans it can trust; the main window shows an invalid plan and lets verification report it).
std::shared_ptr<Plan> readPlan(const QString& path, QString* error, Checked checked = Checked::AsLoaded);

}  // namespace paraproof::ui
