#pragma once
// The collectives real tensor parallelism needs (issue 11), behind one small interface so the
// engine and the CLI do not see MPI: rank and size of the group, an in-place f32 sum
// all-reduce, a broadcast of bytes from a root, a barrier, and point-to-point f32 send/recv
// (pipeline parallelism's residual between stages and the last stage's logits).
//
// Two implementations:
//   - single-process (size 1): every collective is the identity; what a binary started
//     without mpirun gets, so it runs exactly as before; a send to rank 0 (itself) is queued
//     and the next recv from rank 0 takes it (FIFO);
//   - MPI (built when CMake finds Open MPI, DUET_HAVE_MPI): MPI_COMM_WORLD, chosen when the
//     process was started by mpirun (OMPI_COMM_WORLD_SIZE is set). MPI_Init runs on first
//     use, MPI_Finalize at exit.
// Every rank must call the same collectives in the same order with the same sizes (MPI's
// rule); a failing MPI call aborts the job (MPI_ERRORS_ARE_FATAL, Open MPI's default).
//
// Thread safety: one thread at a time per process (MPI_THREAD_SERIALIZED is requested).
#include <cstdint>
#include <memory>

namespace duet::parallel {

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // x[i] = sum over ranks of x[i], i < n, on every rank.
    virtual void all_reduce_sum(float* x, int64_t n) = 0;
    // Rank `root`'s bytes [data, data + n_bytes) copied to every rank.
    virtual void broadcast(void* data, int64_t n_bytes, int root) = 0;
    virtual void barrier() = 0;
    // Blocking point-to-point: x[0, n) to rank `to`; recv fills x[0, n) from rank `from`. The
    // two sides must agree on n (a recv of a different length is an error). Messages between
    // one pair of ranks arrive in the order they were sent.
    virtual void send(const float* x, int64_t n, int to) = 0;
    virtual void recv(float* x, int64_t n, int from) = 0;
    // Ends every rank of the job with `code` (a rank that failed while the others wait in a
    // collective); single-process: std::exit(code).
    [[noreturn]] virtual void abort(int code) = 0;
    // "MPI" or "single-process", for messages and timing lines.
    virtual const char* kind() const = 0;
};

// Size 1, every collective the identity.
std::unique_ptr<Communicator> make_single_process_communicator();

// The world of this process: MPI when started by mpirun and built with MPI, else single-process.
std::unique_ptr<Communicator> make_world_communicator();

// True when an MPI launcher started this process (Open MPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE
// of Hydra/Slurm launchers).
bool launched_by_mpirun();

// True when this binary was built with MPI.
bool built_with_mpi();

}  // namespace duet::parallel
