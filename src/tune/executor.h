#pragma once
// Evaluates batches of tune points, in this process (threads) or spread over the ranks of an
// `mpirun` job. Every rank receives every result of a batch, in batch order, so all ranks run
// the same deterministic search and pick the same best point; only the root rank writes files
// and prints.
//
// MPI is optional twice over: at build time (DUET_HAVE_MPI, when CMake finds Open MPI) and at
// run time (MPI_Init is called only when the process was started by mpirun, detected by its
// OMPI_COMM_WORLD_SIZE variable), so the same binary runs single-process without mpirun.
// Thread safety: one executor per search; run() is called from one thread.
#include <cstdint>
#include <memory>
#include <vector>

#include "tune/evaluator.h"

namespace duet::tune {

class Executor {
public:
    virtual ~Executor() = default;
    virtual std::vector<PointResult> run(const std::vector<Point>& batch) = 0;
    virtual bool is_root() const { return true; }
    virtual int ranks() const { return 1; }
    virtual int rigs_built() const = 0;  // on this rank
};

// `threads` evaluators in this process (each with its own rig cache of at most `cache_bytes` of
// plans besides the setup in use; 0 = only Evaluator::kMaxCachedSetups).
std::unique_ptr<Executor> make_local_executor(const Space& space, const Candidate& base, Objective o, int threads,
                                              uint64_t cache_bytes = 0);
// The MPI executor when started under mpirun with MPI built in, else the local one.
std::unique_ptr<Executor> make_executor(const Space& space, const Candidate& base, Objective o, int threads,
                                        uint64_t cache_bytes = 0);
// True when this process runs under mpirun (OMPI_COMM_WORLD_SIZE set) and MPI is built in.
bool mpi_launched();

}  // namespace duet::tune
