#include "core/ops/op_catalog.h"

#include <sstream>

#include "core/ops/attr_schema.h"
#include "core/ops/registry.h"

namespace paraproof::ops {

namespace {

Json attrJson(const AttrSpec& a) {
  Json j{{"name", a.name}, {"type", attrTypeName(a.type)}, {"required", a.required}, {"doc", a.doc}};
  if (!a.required && !a.dflt.empty()) j["default"] = a.dflt;
  if (!a.choices.empty()) j["choices"] = a.choices;
  if (a.min) j["min"] = *a.min;
  return j;
}

std::string arity(const OpDef& d) {
  if (d.maxInputs < 0) return std::to_string(d.minInputs) + "..n";
  if (d.minInputs == d.maxInputs) return std::to_string(d.minInputs);
  return std::to_string(d.minInputs) + ".." + std::to_string(d.maxInputs);
}

// `name` (type, default D): doc
std::string attrText(const AttrSpec& a, bool markdown) {
  std::string tick = markdown ? "`" : "";
  std::string s = tick + a.name + tick + " (" + attrTypeText(a);
  if (a.required)
    s += ", required";
  else if (!a.dflt.empty())
    s += ", default " + a.dflt;
  return s + "): " + a.doc;
}

std::string escapeCell(std::string s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The prose of docs/operators.md that is not per op: the conventions and, per family, what its table
// does not say.
const char* const kIntro =
    "# Operator reference\n"
    "\n"
    "<!-- Generated from the op registry (core/ops/op_schema.cpp and the op definitions) by\n"
    "     scripts/gen-operators-doc.sh (`paraproof ops --markdown`); tests/test_exporter.cpp fails when "
    "this\n"
    "     page differs from what the registry generates. Edit the registry, not this page. -->\n"
    "\n"
    "Every op kind lives in the registry (`core/ops`). This page is the contract for plan authors, the plan\n"
    "generator and the engines; `paraproof ops [--json]` prints the same. Shapes use numpy conventions; `[]` "
    "is\n"
    "a scalar. Unless stated, float inputs may be any float dtype (`f32`, `bf16`, `f16`, `f64`) and outputs\n"
    "keep the first input's dtype. Integer tensors (`i64`, `i32`) hold token ids or positions and are "
    "handled\n"
    "exactly.\n"
    "\n"
    "Semantics are over the reals. Non-polynomial functions (exp, log, sqrt, sigmoid, tanh, sin, cos, erf, "
    "non-integral\n"
    "pow) are uninterpreted in the proof; everything else (sums, products, division, comparisons, max) is\n"
    "exact. Derivatives are written with the same primitives (e.g. `sigmoid' = s(1-s)`, `sqrt' = 1/(2 "
    "sqrt)`),\n"
    "so a backward op and its hand decomposition are provably equal.\n"
    "\n"
    "## Attributes are strict\n"
    "\n"
    "`attrs` may hold only the attributes listed for the op; each is checked at load against its type and\n"
    "range, and a required one must be present. Errors name the JSON pointer of the attribute and, for a\n"
    "misspelt key, the closest name (`unknown attribute 'keepdims' for sum (did you mean 'keepdim'?)`).\n"
    "Types: *integer* (magnitude at most 2^40), *number* (finite), *bool*, *string*, *one of* a list of\n"
    "strings, *list of integers*, *shape* (non-negative extents), *dtype* (`f32`, `bf16`, `f16`, `f64`, "
    "`i64`,\n"
    "`i32`, `bool`), *axis* (an integer; negative counts from the end), *list of ranks* (non-empty,\n"
    "distinct). Rules that depend on shapes or on several attributes (an axis in range, `sizes` summing to\n"
    "the extent, `src` in `group`) are checked by the op's shape rule and reported as attribute errors.\n";

const char* familyNote(const std::string& family) {
  if (family == "Shape and data movement") return "Negative `dim` counts from the end everywhere.\n";
  if (family == "Communication (device graphs only)")
    return "Every collective names its `group` (ranks, in order: the order of all_gather pieces and\n"
           "reduce_scatter shards) and an `instance` id shared by the matching call on every member. "
           "Instance\n"
           "ids are **plan-wide**: two different calls need two different ids even when their groups are\n"
           "disjoint (name them after the op *and* the group, e.g. `grad_ar@dp0`); a send and its recv "
           "share\n"
           "one id. `reduce` has no default: a sum must be written `\"reduce\": \"sum\"`. Each member must\n"
           "issue its collectives in an order consistent with the other members (otherwise the plan would\n"
           "hang; the validator says where). A `broadcast` without `instance` is the shape op "
           "`broadcast_to`\n"
           "(attribute `shape` only); with `instance` it is the collective (`group`, `instance`, `src`).\n";
  return nullptr;
}

const char* const kReductionNotes =
    "## Shape reduction notes\n"
    "\n"
    "Index-valued attributes (`shape`, `start`, `end`, `sizes`, `n`, `num_classes`, `num_embeddings`) are\n"
    "rescaled with the dimension they index. Integer *values* are indices too, and every op that takes or\n"
    "makes integers says along which axis (docs/soundness.md, \"Integer values\"): `embedding` /\n"
    "`embedding_backward` ids index the table rows, `one_hot` ids the class axis, `cross_entropy` labels "
    "the\n"
    "logits' vocabulary axis, `gather` idx the source axis `dim`, `topk` indices the candidate axis,\n"
    "`causal_mask` / `attention` positions the query and key sequence axes (one class), `iota` values its "
    "own\n"
    "axis (so an integer `iota` and the axis it indexes shrink together; a float `iota` keeps its full\n"
    "extent). Data movement (`identity`, int-to-int `cast`, reshape, transpose, slice, concat, split,\n"
    "broadcast, `gather`'s values, `max` over ids, and the collectives that move data) keeps the kind of "
    "its\n"
    "integers. Everything else that consumes or produces integers (integer `add`/`sub`/`mul`/`maximum`/\n"
    "`minimum`/`neg`, `sum`, `cast` to a float, an integer `constant`, `all_reduce` sum, `reduce_scatter`) "
    "has\n"
    "no rule and keeps the classes it touches at full size. Free integer inputs range over `[0, extent of "
    "the\n"
    "axis they index)` at the size checked, or over every integer when they index nothing. Numeric "
    "constants\n"
    "(`factor`, `divisor`, `value`, `eps`, `scale`, ...) may stand for element counts (a hard-coded mean\n"
    "`sum / 16`, a backward `factor: 0.25`): shape reduction keeps every count equal to such a constant at "
    "its\n"
    "full value and no count equal to one it did not equal (docs/soundness.md, \"Counts keep their relation "
    "to\n"
    "the constants\").\n";

}  // namespace

Json opsToJson() {
  Json out = Json::array();
  for (const OpDef* d : allOps()) {
    Json attrs = Json::array();
    for (const AttrSpec& a : d->attrs)
      attrs.push_back(attrJson(a));
    out.push_back({{"name", d->name},
                   {"family", d->family},
                   {"summary", d->summary},
                   {"inputs", d->inputsDoc},
                   {"outputs", d->outputsDoc},
                   {"min_inputs", d->minInputs},
                   {"max_inputs", d->maxInputs < 0 ? Json(nullptr) : Json(d->maxInputs)},
                   {"communication", d->communication},
                   {"attrs", std::move(attrs)}});
  }
  return out;
}

std::string opsToText() {
  std::ostringstream os;
  std::string family;
  for (const OpDef* d : allOps()) {
    if (d->family != family) {
      family = d->family;
      os << "\n== " << family << " ==\n";
    }
    os << d->name << "  (" << arity(*d) << " inputs)  " << d->summary << "\n";
    os << "    inputs:  " << d->inputsDoc << "\n    outputs: " << d->outputsDoc << "\n";
    for (const AttrSpec& a : d->attrs)
      os << "    attr " << attrText(a, false) << "\n";
  }
  return os.str();
}

std::string opsToMarkdown() {
  std::ostringstream os;
  os << kIntro;
  std::string family;
  for (const OpDef* d : allOps()) {
    if (d->family != family) {
      family = d->family;
      os << "\n## " << family << "\n\n";
      if (const char* note = familyNote(family)) os << note << "\n";
      os << "| op | inputs | outputs | attrs | meaning |\n|---|---|---|---|---|\n";
    }
    std::string attrs;
    for (const AttrSpec& a : d->attrs)
      attrs += (attrs.empty() ? "" : "<br>") + attrText(a, true);
    os << "| `" << d->name << "` | " << escapeCell(d->inputsDoc) << " | " << escapeCell(d->outputsDoc)
       << " | " << escapeCell(attrs) << " | " << escapeCell(d->summary) << " |\n";
  }
  os << "\n" << kReductionNotes;
  return os.str();
}

}  // namespace paraproof::ops
