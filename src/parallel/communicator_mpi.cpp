// The MPI communicator (built only with DUET_HAVE_MPI): MPI_COMM_WORLD through the C API.
// The C API only: skip Open MPI's deprecated C++ bindings (they warn under -Wextra).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "core/error.h"
#include "parallel/communicator.h"

namespace duet::parallel {
namespace {

// MPI_Init_thread once per process (duet tune's executor may have done it already), MPI_Finalize at
// exit unless someone else did.
struct MpiSession {
    MpiSession() {
        int inited = 0;
        MPI_Initialized(&inited);
        // Serialized: `duet serve` calls the collectives from its batcher thread, one thread at
        // a time, after the main thread initialised MPI.
        int provided = 0;
        if (!inited) MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    }
    ~MpiSession() {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
};

void ensure_session() { static MpiSession s; }

// MPI counts are int: long buffers go in chunks of at most INT_MAX elements.
constexpr int64_t kMaxCount = INT_MAX;
constexpr int kTag = 11;  // every point-to-point message (issue 11); order per pair is MPI's non-overtaking rule

class Mpi : public Communicator {
public:
    Mpi() {
        ensure_session();
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
    }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void all_reduce_sum(float* x, int64_t n) override {
        for (int64_t at = 0; at < n; at += kMaxCount)
            MPI_Allreduce(MPI_IN_PLACE, x + at, int(std::min(kMaxCount, n - at)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    void broadcast(void* data, int64_t n_bytes, int root) override {
        DUET_CHECK(root >= 0 && root < size_, "broadcast from rank {} in a group of {}", root, size_);
        auto* p = static_cast<char*>(data);
        for (int64_t at = 0; at < n_bytes; at += kMaxCount)
            MPI_Bcast(p + at, int(std::min(kMaxCount, n_bytes - at)), MPI_BYTE, root, MPI_COMM_WORLD);
    }
    void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
    void send(const float* x, int64_t n, int to) override {
        DUET_CHECK(to >= 0 && to < size_ && to != rank_, "send to rank {} from rank {} in a group of {}", to, rank_,
                   size_);
        for (int64_t at = 0; at < n; at += kMaxCount)
            MPI_Send(x + at, int(std::min(kMaxCount, n - at)), MPI_FLOAT, to, kTag, MPI_COMM_WORLD);
    }
    void recv(float* x, int64_t n, int from) override {
        DUET_CHECK(from >= 0 && from < size_ && from != rank_, "recv from rank {} on rank {} in a group of {}", from,
                   rank_, size_);
        for (int64_t at = 0; at < n; at += kMaxCount) {
            const int want = int(std::min(kMaxCount, n - at));
            MPI_Status st;
            MPI_Recv(x + at, want, MPI_FLOAT, from, kTag, MPI_COMM_WORLD, &st);
            int got = 0;
            MPI_Get_count(&st, MPI_FLOAT, &got);
            DUET_CHECK(got == want, "recv of {} floats from rank {}, but the message has {}", want, from, got);
        }
    }
    [[noreturn]] void abort(int code) override {
        MPI_Abort(MPI_COMM_WORLD, code);
        std::exit(code);  // MPI_Abort does not return; for the compiler
    }
    const char* kind() const override { return "MPI"; }

private:
    int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<Mpi>(); }

}  // namespace duet::parallel
