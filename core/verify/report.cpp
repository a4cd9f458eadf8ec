#include "core/verify/report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/verify/report_annotate.h"

namespace paraproof::verify {

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Equivalent:
      return "equivalent";
    case Verdict::NotEquivalent:
      return "not_equivalent";
    case Verdict::Invalid:
      return "invalid";
    case Verdict::Inconclusive:
      return "inconclusive";
  }
  return "?";
}

int exitCode(Verdict v) {
  switch (v) {
    case Verdict::Equivalent:
      return 0;
    case Verdict::NotEquivalent:
      return 1;
    case Verdict::Invalid:
      return 2;
    case Verdict::Inconclusive:
      return 3;
  }
  return 3;
}

const char* stageKindName(StageKind k) {
  switch (k) {
    case StageKind::Compute:
      return "compute";
    case StageKind::Communication:
      return "communication";
    case StageKind::State:
      return "state";
  }
  return "?";
}

namespace {

Json tensorJson(const TensorValues& t) {
  Json j{{"name", t.name}, {"shape", t.shape}, {"values", t.values}};
  if (t.device != kNone) j["device"] = t.device;
  return j;
}

Json communicationJson(const CommunicationRef& c) {
  Json j{{"kind", c.kind}, {"op", c.op}, {"ranks", c.ranks}};
  if (!c.instance.empty()) j["instance"] = c.instance;
  if (!c.group.empty()) j["group"] = c.group;
  if (c.peer != kNone) j["peer"] = c.peer;
  if (!c.reduce.empty()) j["reduce"] = c.reduce;
  return j;
}

// "all_reduce 'grad_avg' (instance 'grad_w', group [0,1], reduce avg) on ranks 0,1"
std::string communicationText(const CommunicationRef& c) {
  std::string s = c.kind + " '" + c.op + "' (";
  std::string inner;
  auto add = [&](const std::string& x) { inner += (inner.empty() ? "" : ", ") + x; };
  if (!c.instance.empty()) add("instance '" + c.instance + "'");
  if (!c.group.empty()) {
    std::string g = "group [";
    for (size_t i = 0; i < c.group.size(); ++i)
      g += (i ? "," : "") + std::to_string(c.group[i]);
    add(g + "]");
  }
  if (c.peer != kNone) add((c.kind == "send" ? "to rank " : "from rank ") + std::to_string(c.peer));
  if (!c.reduce.empty()) add("reduce " + c.reduce);
  s += inner + ") on rank" + (c.ranks.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < c.ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(c.ranks[i]);
  return s;
}

Json counterexampleJson(const CounterexampleReport& c, const std::vector<CommunicationRef>& comm) {
  Json j{{"confirmed", c.confirmed}, {"reduced_confirmed", c.reducedConfirmed}, {"full_size", c.fullSize}};
  j["hints"] = counterexampleHints(c, comm);
  j["logical_inputs"] = Json::array();
  for (const auto& t : c.logicalInputs)
    j["logical_inputs"].push_back(tensorJson(t));
  j["parallel_inputs"] = Json::array();
  for (const auto& t : c.parallelInputs)
    j["parallel_inputs"].push_back(tensorJson(t));
  j["diffs"] = Json::array();
  for (const auto& d : c.diffs) {
    Json dj{{"tensor", d.tensor},
            {"logical_tensor", d.logicalTensor},
            {"index", d.index},
            {"expected", d.expected},
            {"actual", d.actual}};
    dj["device"] = d.device == kNone ? Json(nullptr) : Json(d.device);
    if (!d.fullIndex.empty()) {
      dj["full_index"] = Json::array();
      for (const auto& [b, e] : d.fullIndex)
        dj["full_index"].push_back({b, e});
      dj["full_shape"] = d.fullShape;
    }
    j["diffs"].push_back(dj);
  }
  return j;
}

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

std::string idx(const std::vector<int64_t>& i) {
  std::string s = "[";
  for (size_t k = 0; k < i.size(); ++k)
    s += (k ? "," : "") + std::to_string(i[k]);
  return s + "]";
}

// "o[4,2:4] of [8,8]": a single index where a reduced element stands for one full-size element.
std::string fullIndexText(const ElementDiff& d) {
  std::string s = d.logicalTensor + "[";
  for (size_t k = 0; k < d.fullIndex.size(); ++k) {
    const auto [b, e] = d.fullIndex[k];
    s += (k ? "," : "") + std::to_string(b) + (e - b == 1 ? "" : ":" + std::to_string(e));
  }
  std::vector<int64_t> shape(d.fullShape.begin(), d.fullShape.end());
  return s + "] of " + idx(shape);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + v[i];
  return s;
}

std::string devicesString(const std::vector<int>& d) {
  std::vector<std::string> s;
  for (int r : d)
    s.push_back(std::to_string(r));
  return s.empty() ? "-" : join(s, ",");
}

}  // namespace

Json reportToJson(const Report& r) {
  Json j{{"format", "paraproof-report"},         {"version", 1},         {"plan", r.plan},
         {"verdict", verdictName(r.verdict)},    {"seconds", r.seconds}, {"cancelled", r.cancelled},
         {"deadline_reached", r.deadlineReached}};
  j["errors"] = Json::array();
  for (const auto& e : r.errors)
    j["errors"].push_back({{"where", e.where}, {"message", e.message}});
  j["notes"] = r.notes;
  int counts[3] = {0, 0, 0}, reused = 0, notRun = 0;
  j["stages"] = Json::array();
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageInfo& s = r.stages[i];
    Json sj{{"id", s.id},         {"kind", stageKindName(s.kind)}, {"devices", s.devices},
            {"scopes", s.scopes}, {"logical_ops", s.logicalOps},   {"outputs", s.outputs},
            {"hash", s.hash}};
    if (s.firstDifference)
      sj["first_difference"] = {{"rank", s.firstDifference->rank},
                                {"op", s.firstDifference->op},
                                {"tensor", s.firstDifference->tensor},
                                {"scope", s.firstDifference->scope},
                                {"why", s.firstDifference->why}};
    sj["parallel_ops"] = Json::array();
    for (const auto& p : s.parallelOps)
      sj["parallel_ops"].push_back({{"rank", p.rank}, {"op", p.op}});
    sj["communication"] = Json::array();
    for (const auto& c : s.communication)
      sj["communication"].push_back(communicationJson(c));
    if (i < r.results.size()) {
      const StageResult& res = r.results[i];
      sj["verdict"] = solver::statusName(res.status);
      sj["reason"] = res.reason;
      sj["engine"] = res.engine;
      sj["seconds"] = res.seconds;
      if (res.reusedFrom != kNone) {
        sj["reused_from"] = res.reusedFrom;
        ++reused;
      }
      sj["full_size_check"] = res.fullSizeCheck;
      if (!res.ran) {
        sj["ran"] = false;
        ++notRun;
      }
      if (res.counterexample) sj["counterexample"] = counterexampleJson(*res.counterexample, s.communication);
      ++counts[static_cast<int>(res.status)];
    } else {
      sj["verdict"] = "pending";
      sj["seconds"] = 0.0;
    }
    j["stages"].push_back(std::move(sj));
  }
  j["summary"] = {{"stages", r.stages.size()},   {"verified", counts[0]}, {"failed", counts[1]},
                  {"inconclusive", counts[2]},   {"not_run", notRun},     {"reused", reused},
                  {"distinct", r.distinctStages}};
  j["phases"] = Json::array();
  for (const auto& [name, secs] : r.phases)
    j["phases"].push_back({{"name", name}, {"seconds", secs}});
  return j;
}

std::string reportToText(const Report& r, bool verbose) {
  std::ostringstream os;
  os << "ParaProof report for " << r.plan << "\n";
  if (r.verdict == Verdict::Invalid) {
    os << "verdict: INVALID INPUT (" << r.errors.size() << " error" << (r.errors.size() == 1 ? "" : "s")
       << ")\n";
    for (const auto& e : r.errors)
      os << "  error: " << e.str() << "\n";
    return os.str();
  }
  int verified = 0, failed = 0, inconclusive = 0, reused = 0;
  for (const auto& res : r.results) {
    verified += res.status == solver::Status::Verified;
    failed += res.status == solver::Status::Failed;
    inconclusive += res.status == solver::Status::Inconclusive;
    reused += res.reusedFrom != kNone;
  }
  os << "stages: " << r.stages.size() << " (" << verified << " verified, " << failed << " failed, "
     << inconclusive << " inconclusive; " << reused << " reused from identical stages) in " << fmt(r.seconds)
     << " s\n";
  if (verbose && !r.phases.empty()) {
    os << "phases:";
    for (const auto& [name, secs] : r.phases)
      os << " " << name << " " << fmt(secs) << " s";
    os << " (" << r.distinctStages << " distinct stages lowered)\n";
  }
  for (const auto& n : r.notes)
    os << "note: " << n << "\n";
  for (size_t i = 0; i < r.results.size() && i < r.stages.size(); ++i) {
    const StageResult& res = r.results[i];
    const StageInfo& s = r.stages[i];
    if (!verbose && res.status == solver::Status::Verified) continue;
    os << "\nstage " << s.id << " [" << stageKindName(s.kind) << "] " << solver::statusName(res.status)
       << " (" << res.engine << ", " << fmt(res.seconds) << " s)\n";
    if (s.firstDifference)
      os << "  first difference: " << (s.firstDifference->scope.empty() ? "-" : s.firstDifference->scope)
         << " (rank " << s.firstDifference->rank << " op '" << s.firstDifference->op << "', value '"
         << s.firstDifference->tensor << "')\n";
    if (s.firstDifference && !s.firstDifference->why.empty())
      os << "    why: " << s.firstDifference->why << "\n";
    os << "  scopes:  " << (s.scopes.empty() ? "-" : join(s.scopes, ", ")) << "\n";
    os << "  devices: " << devicesString(s.devices) << "\n";
    os << "  logical ops: " << (s.logicalOps.empty() ? "-" : join(s.logicalOps, ", ")) << "\n";
    for (const auto& c : s.communication)
      os << "  communication: " << communicationText(c) << "\n";
    if (!res.reason.empty()) os << "  reason:  " << res.reason << "\n";
    if (res.fullSizeCheck != "not needed") os << "  full-size re-check: " << res.fullSizeCheck << "\n";
    if (!res.counterexample) continue;
    const CounterexampleReport& c = *res.counterexample;
    os << "  counterexample ("
       << (c.confirmed ? "confirmed by concrete re-evaluation at full size"
           : c.reducedConfirmed
               ? "confirmed at reduced shape only, not at full size: may be a reduction artefact"
               : "not confirmed")
       << "):\n";
    for (const auto& t : c.logicalInputs)
      os << "    logical " << t.name << ": " << shapedValues(t.shape, t.values) << "\n";
    for (const auto& t : c.parallelInputs)
      os << "    rank " << t.device << " " << t.name << ": " << shapedValues(t.shape, t.values) << "\n";
    for (const auto& d : c.diffs) {
      os << "    MISMATCH "
         << (d.device == kNone ? std::string("(sum of parts)") : "rank " + std::to_string(d.device)) << " "
         << d.tensor << " vs logical " << d.logicalTensor << idx(d.index);
      if (!d.fullIndex.empty()) os << " (full size: " << fullIndexText(d) << ")";
      os << ": expected " << fmt(d.expected) << ", actual " << fmt(d.actual) << "\n";
    }
    for (const std::string& h : counterexampleHints(c, s.communication))
      os << "    hint: " << h << "\n";
  }
  os << "\nverdict: ";
  switch (r.verdict) {
    case Verdict::Equivalent:
      os << "EQUIVALENT (the plan computes the logical model, over the reals)\n";
      break;
    case Verdict::NotEquivalent:
      os << "NOT EQUIVALENT (" << failed << " failing stage(s))\n";
      break;
    case Verdict::Inconclusive:
      os << "INCONCLUSIVE";
      if (r.cancelled) os << " (cancelled: partial report)";
      if (r.deadlineReached) {
        size_t notRun = 0;
        for (const auto& res : r.results)
          notRun += !res.ran;
        os << " (deadline of " << fmt(r.deadlineSeconds) << " s reached: partial report, " << notRun
           << " stage(s) not run)";
      }
      os << "\n";
      break;
    case Verdict::Invalid:
      break;
  }
  return os.str();
}

void saveReportJson(const Report& r, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << reportToJson(r).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, target);
}

}  // namespace paraproof::verify
