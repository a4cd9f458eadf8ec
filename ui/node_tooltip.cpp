#include "ui/node_tooltip.h"

#include <QStringList>

namespace paraproof::ui {
namespace {

QString html(const std::string& text) {
  return QString::fromStdString(text).toHtmlEscaped();
}

QString boxString(const Box& box) {
  QStringList parts;
  for (auto [a, b] : box.ranges)
    parts << QStringLiteral("%1:%2").arg(a).arg(b);
  return parts.isEmpty() ? QStringLiteral("whole") : "[" + parts.join(", ") + "]";
}

QString typeString(const Value& v) {
  return QString::fromStdString(shapeString(v.type.shape)) + " " + dtypeName(v.type.dtype);
}

}  // namespace

QString nodeTooltip(const GraphModel& model, int node) {
  const HierarchyNode& n = model.node(node);
  if (n.isGroup()) {
    QString t = QStringLiteral("<b>%1</b><br>%2 nodes").arg(html(n.label)).arg(n.leafCount);
    if (!n.detail.empty() && n.kind == HierarchyNode::Kind::Device) t += "<br>" + html(n.detail);
    if (n.replicas > 1) t += QStringLiteral("<br>stands for %1 data-parallel replicas").arg(n.replicas);
    if (const GroupIdentity& id = model.identity(node); id.count > 1) {
      // Never "identical to" itself; a namesake on another device is named with its device.
      auto where = [&](int group) {
        QString text = QStringLiteral("<b>%1</b>").arg(html(model.node(group).label));
        for (int p = model.node(group).parent; p > 0; p = model.node(p).parent)
          if (model.node(p).kind == HierarchyNode::Kind::Device)
            return text + QStringLiteral(" of %1").arg(html(model.node(p).label));
        return text;
      };
      t += (id.first == node
                ? QStringLiteral("<br>the first of %2 identical groups (structure hash %3)")
                : QStringLiteral("<br>identical to %1, one of %2 (structure hash %3)").arg(where(id.first)))
               .arg(id.count)
               .arg(id.hash, 16, 16, QLatin1Char('0'));
    }
    return t + QStringLiteral("<br><i>double-click to %1</i>").arg(n.expanded ? "collapse" : "expand");
  }
  const Element& e = model.element(n.element);
  const Graph& g = model.graphOf(e);
  const Device* dev = e.device == kNone ? nullptr : &model.plan()->devices[e.device];
  auto lineage = [&](ValueId v) -> QString {
    if (!dev) return {};
    auto it = dev->lineage.find(v);
    if (it == dev->lineage.end()) return {};
    const Lineage& l = it->second;
    QString s = QStringLiteral(" &rarr; %1 %2").arg(QString::fromStdString(l.tensor), boxString(l.box));
    if (l.parts > 1) s += QStringLiteral(" part %1/%2").arg(l.part + 1).arg(l.parts);
    return s;
  };
  QString where = dev ? QStringLiteral("rank %1").arg(dev->rank) : QStringLiteral("logical");
  if (e.kind == Element::Kind::Input) {
    const Value& v = g.values[e.index];
    return QStringLiteral("<b>%1</b> (input, %2)<br>%3%4")
        .arg(QString::fromStdString(v.name).toHtmlEscaped(), where, typeString(v), lineage(e.index));
  }
  const Op& op = g.ops[e.index];
  QString t = QStringLiteral("<b>%1</b> <i>%2</i> (%3)")
                  .arg(QString::fromStdString(op.id).toHtmlEscaped(), QString::fromStdString(op.kind), where);
  if (n.microBatches > 1)
    t += QStringLiteral("<br>stands for the same op in %1 micro-batches (shown: micro-batch 0)")
             .arg(n.microBatches);
  if (!op.scope.empty()) t += "<br>scope " + QString::fromStdString(op.scope).toHtmlEscaped();
  if (!op.origin.empty()) t += "<br>origin " + QString::fromStdString(op.origin).toHtmlEscaped();
  for (ValueId v : op.inputs)
    t += QStringLiteral("<br>in&nbsp; %1: %2%3")
             .arg(QString::fromStdString(g.values[v].name).toHtmlEscaped(), typeString(g.values[v]),
                  lineage(v));
  for (ValueId v : op.outputs)
    t += QStringLiteral("<br>out %1: %2%3")
             .arg(QString::fromStdString(g.values[v].name).toHtmlEscaped(), typeString(g.values[v]),
                  lineage(v));
  if (!op.attrs.empty())
    t += "<br>attrs " + QString::fromStdString(op.attrs.dump()).toHtmlEscaped().left(300);
  return t;
}

}  // namespace paraproof::ui
