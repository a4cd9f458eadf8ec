// Report types carried by queued signals; declared before any class that uses them in a signal.
#pragma once

#include <QMetaType>
#include <vector>

#include "core/verify/report.h"

Q_DECLARE_METATYPE(paraproof::verify::StageResult)
Q_DECLARE_METATYPE(paraproof::verify::Report)
