// Several processes verify one plan together (`paraproof verify --mpi`): each checks its share of the
// distinct stages, then all exchange what they found, so every process ends with the report one process
// would have written. The transport (MPI) lives in the app; the pipeline only sees this interface.
#pragma once

#include <string>
#include <vector>

#include "core/verify/report.h"

namespace paraproof::verify {

class StageShare {
 public:
  virtual ~StageShare() = default;
  virtual int index() const = 0;  // this process, 0 .. count()-1
  virtual int count() const = 0;
  // Collective: every process passes its bytes and receives every process's, in process order.
  virtual std::vector<std::string> allGather(const std::string& mine) = 0;
};

// What one process found, as the others need it: its stages' results and canonical hashes (StageInfo::hash,
// empty when not lowered) and the ops lowering rejected.
struct SharedFindings {
  std::vector<StageResult> results;
  std::vector<std::string> hashes;  // hashes[k] belongs to results[k]
  std::vector<Diagnostic> invalid;
};

// Exact (doubles bit for bit) and compact: CBOR.
std::string encodeFindings(const SharedFindings& f);
SharedFindings decodeFindings(const std::string& bytes);

}  // namespace paraproof::verify
