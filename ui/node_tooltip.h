// The rich-text tooltip of a hierarchy node: a group's size, replicas and identical groups; an op's or
// input's kind, device, scope, origin, values with their types and lineage, and attributes.
#pragma once

#include <QString>

#include "ui/model/graph_model.h"

namespace paraproof::ui {

QString nodeTooltip(const GraphModel& model, int node);

}  // namespace paraproof::ui
