#include "core/plan/json_io.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <system_error>

#include "core/ir/limits.h"
#include "core/plan/graph_json.h"
#include "core/plan/gzip.h"
#include "core/plan/input_boxes.h"
#include "core/plan/json_reader.h"
#include "core/plan/json_text.h"

namespace paraproof {

using namespace planjson;

namespace {

constexpr const char* kFormat = "paraproof-plan";
constexpr int kVersion = 1;

int readInt(const Json& v, const std::string& source, const std::string& ptr, std::string_view what) {
  int64_t x = readInteger(v, source, ptr, what);
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    fail(source, ptr, std::string(what) + " is out of range: " + std::to_string(x));
  return static_cast<int>(x);
}

Box fullBox(const Shape& s) {
  Box b;
  for (int64_t d : s)
    b.ranges.emplace_back(0, d);
  return b;
}

class PlanReader {
 public:
  explicit PlanReader(const std::string& source) : source_(source) {}

  Plan read(const Json& j) {
    ObjectReader top(
        j, "", source_, "plan",
        {"format", "version", "name", "mesh", "replicas", "microbatches", "metadata", "logical", "devices"});
    guarded([&] { readHeader(top); });
    guarded([&] {
      ObjectReader r(top.required("logical"), "/logical", source_, "logical graph",
                     {"inputs", "ops", "outputs", "state"});
      plan_.logical.name = "logical";
      readGraph(top.required("logical"), "/logical", source_, plan_.logical);
      internAttrs(plan_.logical, attrsPool_);
      tally(plan_.logical, "/logical");
      logicalOk_ = true;
    });
    guarded([&] {
      const Json* logical = top.find("logical");
      if (logical && logical->is_object() && logical->contains("state")) readState(logical->at("state"));
    });
    guarded([&] {
      const Json& devices = top.array("devices");
      if (static_cast<int64_t>(devices.size()) > limits::kMaxDevices)
        fail(source_, "/devices",
             "the plan has " + std::to_string(devices.size()) + " devices, above the limit of " +
                 std::to_string(limits::kMaxDevices));
      plan_.devices.resize(devices.size());
      for (size_t i = 0; i < devices.size(); ++i)
        guarded([&] { readDevice(devices[i], i); });
    });
    if (!diags_.empty()) throw PlanError(std::move(diags_));
    return std::move(plan_);
  }

 private:
  template <class F>
  void guarded(F&& fn) {
    try {
      fn();
    } catch (const ReadFailure& f) {
      diags_.push_back(f.diag);
    }
  }

  // The plan-wide element total, checked as each graph is read (each tensor is bounded by readShape).
  void tally(const Graph& g, const std::string& at) {
    for (const Value& v : g.values) {
      planElements_ += numElements(v.type.shape);  // each <= kMaxTensorElements: no overflow
      if (planElements_ > limits::kMaxPlanElements)
        fail(source_, at,
             "the plan's tensors hold more than " + std::to_string(limits::kMaxPlanElements) +
                 " elements in all (the limit)");
    }
  }

  // Checked against the mesh once it is read (readHeader reads the mesh first).
  void readReplicas(const Json& j) {
    ObjectReader r(j, "/replicas", source_, "replicas", {"axis", "template"});
    Replicas rep;
    rep.axis = readString(r.required("axis"), source_, "/replicas/axis", "replica axis name");
    const Json& t = r.array("template");
    if (t.size() != 2 || !t[0].is_number_integer() || !t[1].is_number_integer())
      fail(source_, "/replicas/template", "template must list two coordinates of the replica axis");
    rep.from = t[0].get<int64_t>();
    rep.to = t[1].get<int64_t>();
    auto axis = std::find(plan_.mesh.axes.begin(), plan_.mesh.axes.end(), rep.axis);
    if (axis == plan_.mesh.axes.end())
      fail(source_, "/replicas/axis", "replica axis '" + rep.axis + "' is not an axis of the mesh");
    const int64_t n = plan_.mesh.shape.at(static_cast<size_t>(axis - plan_.mesh.axes.begin()));
    if (rep.from < 0 || rep.to < 0 || rep.from >= n || rep.to >= n || rep.from == rep.to)
      fail(source_, "/replicas/template",
           "template coordinates must be two different coordinates below " + std::to_string(n));
    plan_.replicas = rep;
  }

  void readMicroBatches(const Json& j) {
    ObjectReader r(j, "/microbatches", source_, "microbatches", {"count", "template"});
    MicroBatches mb;
    const Json& c = r.required("count");
    if (!c.is_number_integer() || c.get<int64_t>() < 2 || c.get<int64_t>() > limits::kMaxMicroBatches)
      fail(source_, "/microbatches/count",
           "count must be an integer from 2 to " + std::to_string(limits::kMaxMicroBatches));
    mb.count = c.get<int>();
    const Json& t = r.array("template");
    if (t.size() != 2 || !t[0].is_number_integer() || !t[1].is_number_integer() ||
        t[1].get<int64_t>() != t[0].get<int64_t>() + 1 || t[0].get<int64_t>() < 0 ||
        t[1].get<int64_t>() >= mb.count)
      fail(source_, "/microbatches/template",
           "template must list two consecutive micro-batches below the count (e.g. [0, 1])");
    mb.from = t[0].get<int>();
    plan_.microbatches = mb;
  }

  void readHeader(const ObjectReader& top) {
    if (const Json* f = top.find("format")) {
      std::string format = readString(*f, source_, "/format", "field 'format'");
      if (format != kFormat)
        fail(source_, "/format", "not a plan file: format is '" + format + "', expected '" + kFormat + "'");
    }
    if (top.find("version")) {
      int64_t v = top.integer("version");
      if (v != kVersion)
        fail(source_, "/version",
             "unsupported plan format version " + std::to_string(v) + " (this build reads version 1)");
    }
    plan_.name = top.stringOr("name", "");
    if (const Json* m = top.find("metadata")) {
      if (!m->is_object())
        fail(source_, "/metadata", std::string("metadata must be an object, got ") + jsonTypeName(*m));
      plan_.metadata = *m;
    }
    ObjectReader mesh(top.required("mesh"), "/mesh", source_, "mesh", {"axes", "shape"});
    const Json& axes = mesh.array("axes");
    if (static_cast<int64_t>(axes.size()) > limits::kMaxRank)
      fail(source_, "/mesh/axes",
           "the mesh has " + std::to_string(axes.size()) + " axes, above the limit of " +
               std::to_string(limits::kMaxRank));
    for (size_t k = 0; k < axes.size(); ++k)
      plan_.mesh.axes.push_back(readString(axes[k], source_, child("/mesh/axes", k), "mesh axis name"));
    plan_.mesh.shape = readShape(mesh.required("shape"), source_, "/mesh/shape");
    if (const Json* r = top.find("replicas")) readReplicas(*r);
    if (const Json* r = top.find("microbatches")) readMicroBatches(*r);
    if (plan_.mesh.shape.size() != plan_.mesh.axes.size())
      fail(source_, "/mesh/shape",
           "mesh shape " + shapeString(plan_.mesh.shape) + " has " + std::to_string(plan_.mesh.shape.size()) +
               " entries but there are " + std::to_string(plan_.mesh.axes.size()) + " axes");
    int64_t positions = 1;
    for (size_t k = 0; k < plan_.mesh.shape.size(); ++k) {
      if (plan_.mesh.shape[k] < 1)
        fail(source_, child("/mesh/shape", k), "mesh axis size must be at least 1");
      positions = limits::cappedProduct(positions, plan_.mesh.shape[k], limits::kMaxDevices);
      if (positions < 0)
        fail(source_, "/mesh/shape",
             "mesh shape " + shapeString(plan_.mesh.shape) + " has more than " +
                 std::to_string(limits::kMaxDevices) + " positions (the device limit)");
    }
  }

  // The names are resolved by validatePlan (a plan built in memory gets the same checks).
  void readState(const Json& j) {
    const std::string at = "/logical/state";
    if (!j.is_array())
      fail(source_, at,
           std::string("state must be a list of {input, output} pairs, got ") + jsonTypeName(j) + " " +
               shortJson(j));
    for (size_t k = 0; k < j.size(); ++k) {
      ObjectReader r(j[k], child(at, k), source_, "state pair", {"input", "output"});
      plan_.state.push_back({r.string("input"), r.string("output")});
    }
  }

  void readDevice(const Json& j, size_t i) {
    std::string at = child("/devices", i);
    ObjectReader r(j, at, source_, "device", {"rank", "coord", "inputs", "ops", "outputs", "lineage"});
    Device& d = plan_.devices[i];
    d.rank = readInt(r.required("rank"), source_, r.ptr("rank"), "rank");
    const Json& coord = r.array("coord");
    if (static_cast<int64_t>(coord.size()) > limits::kMaxRank)
      fail(source_, r.ptr("coord"),
           "coord has " + std::to_string(coord.size()) + " entries, above the limit of " +
               std::to_string(limits::kMaxRank));
    for (size_t k = 0; k < coord.size(); ++k)
      d.coord.push_back(readInteger(coord[k], source_, child(r.ptr("coord"), k), "coord entry"));
    d.graph.name = "rank " + std::to_string(d.rank);
    if (logicalOk_) checkInputBoxes(j, at, source_, plan_.logical);
    readGraph(j, at, source_, d.graph);
    internAttrs(d.graph, attrsPool_);
    tally(d.graph, at);
    if (const Json* lin = r.find("lineage")) {
      if (!lin->is_object())
        fail(source_, r.ptr("lineage"), std::string("lineage must be an object, got ") + jsonTypeName(*lin));
      for (const auto& item : lin->items()) {
        const std::string& name = item.key();  // not a structured binding: clang 14 cannot capture one
        guarded([&] { readLineage(d, name, item.value(), child(r.ptr("lineage"), name)); });
      }
    }
  }

  void readLineage(Device& d, const std::string& name, const Json& j, const std::string& at) {
    std::string who = "rank " + std::to_string(d.rank) + ": ";
    ValueId v = d.graph.findValue(name);
    if (v == kNone)
      fail(source_, at, who + "lineage for '" + name + "', which is not a tensor of this device");
    ObjectReader r(j, at, source_, "lineage", {"tensor", "box", "part", "parts"});
    Lineage l;
    l.tensor = r.string("tensor");
    if (logicalOk_) l.logical = plan_.logical.findValue(l.tensor);
    if (const Json* box = r.find("box")) {
      if (!box->is_array())
        fail(source_, r.ptr("box"), who + "lineage box must be a list of [start, end] pairs");
      if (static_cast<int64_t>(box->size()) > limits::kMaxRank)
        fail(source_, r.ptr("box"),
             who + "lineage box has " + std::to_string(box->size()) + " ranges, above the limit of " +
                 std::to_string(limits::kMaxRank));
      for (size_t k = 0; k < box->size(); ++k) {
        const Json& range = (*box)[k];
        std::string rp = child(r.ptr("box"), k);
        if (!range.is_array() || range.size() != 2)
          fail(source_, rp, who + "lineage box entry must be [start, end], got " + shortJson(range));
        l.box.ranges.emplace_back(readInteger(range[0], source_, child(rp, 0), "box start"),
                                  readInteger(range[1], source_, child(rp, 1), "box end"));
      }
    } else if (logicalOk_) {
      // Omitted box: the whole logical tensor (an unknown tensor is reported by validatePlan).
      if (l.logical != kNone) l.box = fullBox(plan_.logical.values[l.logical].type.shape);
    }
    if (const Json* p = r.find("part")) {
      // Without `parts` the part is of a whole (parts = 1): the exporter forgot the count, and the error
      // would otherwise surface at another rank, as that rank's incomplete value-part group.
      if (!r.find("parts"))
        fail(source_, r.ptr("part"),
             who + "lineage of '" + name + "' has `part` but no `parts` (value part k of n needs both)");
      l.part = readInt(*p, source_, r.ptr("part"), "part");
    }
    if (const Json* p = r.find("parts")) l.parts = readInt(*p, source_, r.ptr("parts"), "parts");
    d.lineage[v] = std::move(l);
  }

  const std::string& source_;
  Plan plan_;
  AttrsPool attrsPool_;  // equal attribute objects of all graphs loaded as one
  bool logicalOk_ = false;
  int64_t planElements_ = 0;
  std::vector<Diagnostic> diags_;
};

Json lineageToJson(const Plan& plan, const Lineage& l) {
  Json j{{"tensor", l.tensor}};
  ValueId t = lineageValue(plan.logical, l);
  bool whole = t != kNone && l.box == fullBox(plan.logical.values[t].type.shape);
  if (!whole) {
    Json box = Json::array();
    for (auto [a, b] : l.box.ranges)
      box.push_back({a, b});
    j["box"] = std::move(box);
  }
  if (l.part != 0) j["part"] = l.part;
  if (l.parts != 1) j["parts"] = l.parts;
  return j;
}

}  // namespace

Plan planFromJson(const Json& j, const std::string& source) {
  try {
    return PlanReader(source).read(j);
  } catch (const ReadFailure& f) {  // the document itself is not an object
    throw PlanError({f.diag});
  }
}

Plan loadPlan(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError({Diagnostic{path, "cannot open plan file: " + std::generic_category().message(errno)}});
  std::error_code ec;
  auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > static_cast<uintmax_t>(limits::kMaxPlanFileBytes))
    throw PlanError(
        {Diagnostic{path, "plan file is " + std::to_string(bytes) + " bytes, above the limit of " +
                              std::to_string(limits::kMaxPlanFileBytes)}});
  std::ostringstream read;
  read << in.rdbuf();
  std::string text = std::move(read).str();
  if (isGzip(text)) {
    try {
      text = gzipDecompress(text, limits::kMaxPlanFileBytes);
    } catch (const std::runtime_error& e) {
      throw PlanError({Diagnostic{path, std::string("compressed plan file: ") + e.what()}});
    }
  }
  return planFromJson(parseJsonText(text, path), path);
}

namespace {

// Everything but the devices.
Json planHeadToJson(const Plan& plan) {
  Json j{{"format", kFormat}, {"version", kVersion}, {"name", plan.name}};
  j["mesh"] = Json{{"axes", plan.mesh.axes}, {"shape", plan.mesh.shape}};
  if (plan.replicas)
    j["replicas"] =
        Json{{"axis", plan.replicas->axis}, {"template", {plan.replicas->from, plan.replicas->to}}};
  if (plan.microbatches)
    j["microbatches"] = Json{{"count", plan.microbatches->count},
                             {"template", {plan.microbatches->from, plan.microbatches->from + 1}}};
  j["metadata"] = plan.metadata;
  Json logical = Json::object();
  writeGraph(plan.logical, logical);
  if (!plan.state.empty()) {
    Json state = Json::array();
    for (const StatePair& s : plan.state)
      state.push_back({{"input", s.input}, {"output", s.output}});
    logical["state"] = std::move(state);
  }
  j["logical"] = std::move(logical);
  return j;
}

Json deviceToJson(const Plan& plan, const Device& d) {
  Json dj{{"rank", d.rank}, {"coord", d.coord}};
  writeGraph(d.graph, dj);
  if (!d.lineage.empty()) {
    Json lin = Json::object();
    for (const auto& [v, l] : d.lineage)
      lin[d.graph.values[v].name] = lineageToJson(plan, l);
    dj["lineage"] = std::move(lin);
  }
  return dj;
}

// The plan's text. A large plan is written one device at a time into the layout of the whole document (its
// top level and device list are then surely too long for one line): the document of a frontier plan is
// gigabytes of JSON values, and destroying it when memory runs out allocates again and aborts.
std::string planText(const Plan& plan) {
  constexpr size_t kWholeDocumentOps = 20000;
  if (plan.deviceOps() < kWholeDocumentOps || plan.devices.empty()) return formatJson(planToJson(plan));
  Json head = planHeadToJson(plan);
  const std::string marker = "\u0001devices";  // a string no plan field holds: the devices' place
  head["devices"] = marker;
  const std::string headText = formatJson(head);
  const std::string placeholder = Json(marker).dump();
  const size_t at = headText.find(placeholder);
  std::string out = headText.substr(0, at) + "[\n";
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    out += i ? ",\n    " : "    ";
    formatJsonAt(deviceToJson(plan, plan.devices[i]), 4, out);
  }
  out += "\n  ]" + headText.substr(at + placeholder.size());
  return out;
}

}  // namespace

Json planToJson(const Plan& plan) {
  Json j = planHeadToJson(plan);
  Json devices = Json::array();
  for (const Device& d : plan.devices)
    devices.push_back(deviceToJson(plan, d));
  j["devices"] = std::move(devices);
  return j;
}

void savePlan(const Plan& plan, const std::string& path) {
  namespace fs = std::filesystem;
  std::string text = planText(plan);
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) text = gzipCompress(text);
  // A temporary in the same directory, so the rename is atomic and readers never see a partial plan.
  std::random_device rd;
  fs::path tmp = fs::path(path).concat(".tmp-" + std::to_string(rd()) + std::to_string(rd()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw PlanError({Diagnostic{path, "cannot write plan: cannot write temporary file " + tmp.string()}});
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw PlanError({Diagnostic{path, "cannot write plan: " + ec.message()}});
  }
}

}  // namespace paraproof
