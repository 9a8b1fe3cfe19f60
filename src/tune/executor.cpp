#include "tune/executor.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace duet::tune {
namespace {

class LocalExecutor : public Executor {
public:
    LocalExecutor(const Space& space, const Candidate& base, Objective o, int threads, uint64_t cache_bytes) {
        for (int t = 0; t < std::max(1, threads); ++t)
            evals_.push_back(std::make_unique<Evaluator>(space, base, o, cache_bytes));
    }
    std::vector<PointResult> run(const std::vector<Point>& batch) override {
        std::vector<PointResult> out(batch.size());
        const size_t n = evals_.size();
        if (n == 1 || batch.size() < 2) {
            for (size_t i = 0; i < batch.size(); ++i) out[i] = evals_[0]->evaluate(batch[i]);
            return out;
        }
        // Points differ in cost (a PIM placement schedules conversions, NPU-only does not): each
        // thread takes the next point when it is free, so none waits on a fixed share.
        std::atomic<size_t> next{0};
        std::vector<std::thread> th;
        for (size_t t = 0; t < n; ++t)
            th.emplace_back([&, t] {
                for (size_t i; (i = next.fetch_add(1)) < batch.size();) out[i] = evals_[t]->evaluate(batch[i]);
            });
        for (auto& x : th) x.join();
        return out;
    }
    int rigs_built() const override {
        int r = 0;
        for (const auto& e : evals_) r += e->rigs_built();
        return r;
    }

private:
    std::vector<std::unique_ptr<Evaluator>> evals_;
};

}  // namespace

std::unique_ptr<Executor> make_local_executor(const Space& space, const Candidate& base, Objective o, int threads,
                                              uint64_t cache_bytes) {
    return std::make_unique<LocalExecutor>(space, base, o, threads, cache_bytes);
}

#ifndef DUET_HAVE_MPI
bool mpi_launched() { return false; }
std::unique_ptr<Executor> make_executor(const Space& space, const Candidate& base, Objective o, int threads,
                                        uint64_t cache_bytes) {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") && std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")) > 1)
        fail("started by mpirun (OMPI_COMM_WORLD_SIZE = {}) but this duet was built without MPI (allowed: install "
             "libopenmpi-dev and rebuild, or run without mpirun)", std::getenv("OMPI_COMM_WORLD_SIZE"));
    return make_local_executor(space, base, o, threads, cache_bytes);
}
#endif

}  // namespace duet::tune
