// `paraproof verify --mpi`: the processes of one `mpirun` verify a plan together, each checking its share of
// the distinct stages (verify::StageShare over MPI); rank 0 writes the report.
#pragma once

#include <memory>

#include "core/verify/stage_share.h"

namespace paraproof::cli {

// Joins the MPI job of this process (MPI_Init on first use, MPI_Finalize when the share is destroyed).
// Throws UsageError when this build has no MPI.
std::unique_ptr<verify::StageShare> joinMpi();

}  // namespace paraproof::cli
