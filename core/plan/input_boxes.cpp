#include "core/plan/input_boxes.h"

#include "core/ir/limits.h"
#include "core/plan/json_reader.h"

namespace paraproof::planjson {

namespace {
bool intList(const Json& j, Shape& out) {
  if (!j.is_array()) return false;
  for (const Json& e : j) {
    if (!e.is_number_integer()) return false;
    out.push_back(e.get<int64_t>());
  }
  return true;
}
}  // namespace

void checkInputBoxes(const Json& device, const std::string& at, const std::string& source,
                     const Graph& logical) {
  if (!device.is_object() || !device.contains("inputs") || !device["inputs"].is_array() ||
      !device.contains("lineage") || !device["lineage"].is_object())
    return;
  const Json& lineage = device["lineage"];
  const std::string who = device.contains("rank") && device["rank"].is_number_integer()
                              ? "rank " + std::to_string(device["rank"].get<int64_t>()) + ": "
                              : "";
  const Json& inputs = device["inputs"];
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Json& in = inputs[k];
    if (!in.is_object() || !in.contains("name") || !in["name"].is_string() || !in.contains("shape")) continue;
    const std::string name = in["name"].get<std::string>();
    Shape declared;
    if (!intList(in["shape"], declared) || !lineage.contains(name) || !lineage[name].is_object()) continue;
    const Json& l = lineage[name];
    if (!l.contains("tensor") || !l["tensor"].is_string()) continue;
    const std::string tensor = l["tensor"].get<std::string>();
    Shape extent;
    std::string boxText;
    if (l.contains("box")) {
      // Only a well-formed box within the limits: anything else is the lineage reader's to report.
      if (!l["box"].is_array() || static_cast<int64_t>(l["box"].size()) > limits::kMaxRank) continue;
      for (const Json& r : l["box"]) {
        Shape pair;
        if (!intList(r, pair) || pair.size() != 2 || pair[0] >= pair[1]) return;
        extent.push_back(pair[1] - pair[0]);
        boxText +=
            (boxText.empty() ? "[" : "x[") + std::to_string(pair[0]) + "," + std::to_string(pair[1]) + ")";
      }
      boxText = "box " + boxText;
    } else {
      ValueId t = logical.findValue(tensor);
      if (t == kNone) continue;
      extent = logical.values[t].type.shape;
      boxText = "box (the whole tensor)";
    }
    if (declared != extent)
      fail(source, child(child(child(at, "inputs"), k), "shape"),
           who + "device input '" + name + "' is declared " + shapeString(declared) + " but its lineage " +
               boxText + " of '" + tensor + "' has extent " + shapeString(extent));
  }
}

}  // namespace paraproof::planjson
