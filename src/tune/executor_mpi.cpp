// The MPI executor (built only with DUET_HAVE_MPI). Point i of a batch runs on rank i % size;
// the results, serialised as JSON, are gathered on every rank with MPI_Allgatherv.
// The C API only: skip Open MPI's deprecated C++ bindings (they warn under -Wextra).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

#include "core/error.h"
#include "tune/executor.h"

namespace duet::tune {
namespace {

struct MpiSession {
    MpiSession() {
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) MPI_Init(nullptr, nullptr);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    ~MpiSession() {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
    int rank = 0, size = 1;
};

MpiSession& session() {
    static MpiSession s;  // finalised at exit
    return s;
}

class MpiExecutor : public Executor {
public:
    MpiExecutor(const Space& space, const Candidate& base, Objective o, int threads, uint64_t cache_bytes)
        : local_(make_local_executor(space, base, o, threads, cache_bytes)) {}
    std::vector<PointResult> run(const std::vector<Point>& batch) override {
        const MpiSession& s = session();
        std::vector<Point> mine;
        for (size_t i = size_t(s.rank); i < batch.size(); i += size_t(s.size)) mine.push_back(batch[i]);
        std::vector<PointResult> done = local_->run(mine);
        nlohmann::json arr = nlohmann::json::array();
        for (size_t k = 0; k < done.size(); ++k) {
            nlohmann::json j = point_to_json(done[k]);
            j["key"] = done[k].key;
            arr.push_back(j);
        }
        const std::string text = arr.dump();
        int len = int(text.size());
        std::vector<int> lens(size_t(s.size)), offs(size_t(s.size));
        MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
        int total = 0;
        for (int r = 0; r < s.size; ++r) offs[size_t(r)] = total, total += lens[size_t(r)];
        std::string all(size_t(total), '\0');
        MPI_Allgatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, MPI_COMM_WORLD);
        std::vector<PointResult> out(batch.size());
        for (int r = 0; r < s.size; ++r) {
            const auto part = nlohmann::json::parse(all.substr(size_t(offs[size_t(r)]), size_t(lens[size_t(r)])));
            for (size_t k = 0; k < part.size(); ++k) {
                PointResult p = point_from_json(part[k]);
                p.key = part[k].at("key").get<std::string>();
                out[size_t(r) + k * size_t(s.size)] = std::move(p);
            }
        }
        return out;
    }
    bool is_root() const override { return session().rank == 0; }
    int ranks() const override { return session().size; }
    int rigs_built() const override { return local_->rigs_built(); }

private:
    std::unique_ptr<Executor> local_;
};

}  // namespace

bool mpi_launched() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

std::unique_ptr<Executor> make_executor(const Space& space, const Candidate& base, Objective o, int threads,
                                        uint64_t cache_bytes) {
    if (!mpi_launched()) return make_local_executor(space, base, o, threads, cache_bytes);
    return std::make_unique<MpiExecutor>(space, base, o, threads, cache_bytes);
}

}  // namespace duet::tune
