#include "ui/plan_files.h"

#include "core/plan/json_io.h"
#include "core/plan/torch_import.h"
#include "core/plan/validate.h"

namespace paraproof::ui {
namespace {

QString lines(const std::vector<Diagnostic>& diagnostics) {
  QString text;
  for (const Diagnostic& d : diagnostics)
    text += QString::fromStdString(d.str()) + "\n";
  return text;
}

}  // namespace

bool isScript(const QString& path) {
  return isTorchScript(path.toStdString());
}

std::shared_ptr<Plan> readPlan(const QString& path, QString* error, Checked checked) {
  std::string importerStderr;
  try {
    auto plan =
        std::make_shared<Plan>(isScript(path) ? loadTorchPlan(path.toStdString(), false, &importerStderr)
                                              : loadPlan(path.toStdString()));
    if (checked == Checked::AsLoaded) return plan;
    const std::vector<Diagnostic> diagnostics = validatePlan(*plan, path.toStdString());
    if (diagnostics.empty()) return plan;
    *error = lines(diagnostics).trimmed();
  } catch (const PlanError& e) {
    QString text = lines(e.diagnostics());
    if (text.isEmpty()) text = QString::fromUtf8(e.what());
    // A traceback is an importer bug: keep it for the report.
    if (importerStderr.find("Traceback") != std::string::npos)
      text += "\n" + QString::fromStdString(importerStderr);
    *error = text.trimmed();
  } catch (const std::exception& e) {
    *error = QStringLiteral("%1: %2").arg(path, QString::fromUtf8(e.what()));
  }
  return nullptr;
}

}  // namespace paraproof::ui
