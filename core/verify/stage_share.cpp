#include "core/verify/stage_share.h"

#include <stdexcept>

namespace paraproof::verify {

// Every field of a result is written: a process's findings must read back as the same result (test_mpi).
namespace {

Json tensorJson(const TensorValues& t) {
  return {{"n", t.name}, {"d", t.device}, {"s", t.shape}, {"v", t.values}};
}
TensorValues tensorFrom(const Json& j) {
  return {j.at("n").get<std::string>(), j.at("d").get<int>(), j.at("s").get<Shape>(),
          j.at("v").get<std::vector<double>>()};
}

Json diffJson(const ElementDiff& d) {
  return {{"d", d.device},   {"t", d.tensor}, {"l", d.logicalTensor}, {"i", d.index},
          {"e", d.expected}, {"a", d.actual}, {"fi", d.fullIndex},    {"fs", d.fullShape}};
}
ElementDiff diffFrom(const Json& j) {
  ElementDiff d;
  d.device = j.at("d").get<int>();
  d.tensor = j.at("t").get<std::string>();
  d.logicalTensor = j.at("l").get<std::string>();
  d.index = j.at("i").get<std::vector<int64_t>>();
  d.expected = j.at("e").get<double>();
  d.actual = j.at("a").get<double>();
  d.fullIndex = j.at("fi").get<std::vector<std::pair<int64_t, int64_t>>>();
  d.fullShape = j.at("fs").get<Shape>();
  return d;
}

Json counterexampleJson(const CounterexampleReport& c) {
  Json j{{"c", c.confirmed},    {"rc", c.reducedConfirmed}, {"fs", c.fullSize},    {"li", Json::array()},
         {"pi", Json::array()}, {"df", Json::array()},      {"ag", Json::array()}, {"in", Json::array()}};
  for (const auto& t : c.logicalInputs)
    j["li"].push_back(tensorJson(t));
  for (const auto& t : c.parallelInputs)
    j["pi"].push_back(tensorJson(t));
  for (const auto& d : c.diffs)
    j["df"].push_back(diffJson(d));
  for (const auto& d : c.agreeing)
    j["ag"].push_back(diffJson(d));
  for (const auto& t : c.internals)  // the first difference is found from them, as in one process
    j["in"].push_back(tensorJson(t));
  return j;
}
CounterexampleReport counterexampleFrom(const Json& j) {
  CounterexampleReport c;
  c.confirmed = j.at("c").get<bool>();
  c.reducedConfirmed = j.at("rc").get<bool>();
  c.fullSize = j.at("fs").get<bool>();
  for (const auto& t : j.at("li"))
    c.logicalInputs.push_back(tensorFrom(t));
  for (const auto& t : j.at("pi"))
    c.parallelInputs.push_back(tensorFrom(t));
  for (const auto& d : j.at("df"))
    c.diffs.push_back(diffFrom(d));
  for (const auto& d : j.at("ag"))
    c.agreeing.push_back(diffFrom(d));
  for (const auto& t : j.at("in"))
    c.internals.push_back(tensorFrom(t));
  return c;
}

}  // namespace

std::string encodeFindings(const SharedFindings& f) {
  Json results = Json::array();
  for (size_t k = 0; k < f.results.size(); ++k) {
    const StageResult& r = f.results[k];
    Json j{{"i", r.stage},     {"st", static_cast<int>(r.status)},
           {"r", r.reason},    {"e", r.engine},
           {"t", r.seconds},   {"u", r.reusedFrom},
           {"h", f.hashes[k]}, {"fc", r.fullSizeCheck}};
    if (r.counterexample) j["ce"] = counterexampleJson(*r.counterexample);
    results.push_back(std::move(j));
  }
  Json invalid = Json::array();
  for (const Diagnostic& d : f.invalid)
    invalid.push_back({d.where, d.message});
  const std::vector<std::uint8_t> bytes = Json::to_cbor(Json{{"results", results}, {"invalid", invalid}});
  return {bytes.begin(), bytes.end()};
}

SharedFindings decodeFindings(const std::string& bytes) {
  const Json all = Json::from_cbor(bytes.begin(), bytes.end());
  SharedFindings f;
  for (const Json& j : all.at("results")) {
    StageResult r;
    r.stage = j.at("i").get<int>();
    const int st = j.at("st").get<int>();
    if (st < 0 || st > static_cast<int>(solver::Status::Inconclusive))
      throw std::runtime_error("shared stage result: bad status " + std::to_string(st));
    r.status = static_cast<solver::Status>(st);
    r.reason = j.at("r").get<std::string>();
    r.engine = j.at("e").get<std::string>();
    r.seconds = j.at("t").get<double>();
    r.reusedFrom = j.at("u").get<int>();
    r.fullSizeCheck = j.at("fc").get<std::string>();
    if (j.contains("ce")) r.counterexample = counterexampleFrom(j.at("ce"));
    f.results.push_back(std::move(r));
    f.hashes.push_back(j.at("h").get<std::string>());
  }
  for (const Json& d : all.at("invalid"))
    f.invalid.push_back({d.at(0).get<std::string>(), d.at(1).get<std::string>()});
  return f;
}

}  // namespace paraproof::verify
