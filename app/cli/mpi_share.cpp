#include "app/cli/mpi_share.h"

#include "app/cli/args.h"

#ifdef PARAPROOF_WITH_MPI
#include <mpi.h>

#include <climits>
#include <stdexcept>
#endif

namespace paraproof::cli {

#ifdef PARAPROOF_WITH_MPI
namespace {

class MpiShare : public verify::StageShare {
 public:
  MpiShare() {
    int provided = 0;
    // Only the thread that runs the pipeline calls MPI; the stage workers never do.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiShare() override { MPI_Finalize(); }
  int index() const override { return rank_; }
  int count() const override { return size_; }

  std::vector<std::string> allGather(const std::string& mine) override {
    if (mine.size() > static_cast<size_t>(INT_MAX))
      throw std::runtime_error("--mpi: stage results over 2 GB");
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    long long total = 0;
    for (int p = 0; p < size_; ++p) {
      offsets[static_cast<size_t>(p)] = static_cast<int>(total);
      total += lengths[static_cast<size_t>(p)];
      if (total > INT_MAX) throw std::runtime_error("--mpi: stage results over 2 GB");
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                   MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int p = 0; p < size_; ++p)
      out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(p)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(p)])));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<verify::StageShare> joinMpi() {
  return std::make_unique<MpiShare>();
}
#else
std::unique_ptr<verify::StageShare> joinMpi() {
  throw UsageError("--mpi: this build of paraproof has no MPI (install libopenmpi-dev and rebuild)");
}
#endif

}  // namespace paraproof::cli
