#include "parallel/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <vector>

#include "core/error.h"

namespace duet::parallel {

#if DUET_HAVE_MPI
std::unique_ptr<Communicator> make_mpi_communicator();  // communicator_mpi.cpp
#endif

namespace {

class SingleProcess : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void all_reduce_sum(float*, int64_t) override {}
    void broadcast(void*, int64_t, int root) override {
        DUET_CHECK(root == 0, "broadcast from rank {} in a group of one", root);
    }
    void barrier() override {}
    void send(const float* x, int64_t n, int to) override {
        DUET_CHECK(to == 0, "send to rank {} in a group of one", to);
        queued_.emplace_back(x, x + n);
    }
    void recv(float* x, int64_t n, int from) override {
        DUET_CHECK(from == 0, "recv from rank {} in a group of one", from);
        DUET_CHECK(!queued_.empty(), "recv from rank 0 with no message sent");
        const std::vector<float>& m = queued_.front();
        DUET_CHECK(int64_t(m.size()) == n, "recv of {} floats, but the message has {}", n, m.size());
        std::copy(m.begin(), m.end(), x);
        queued_.pop_front();
    }
    [[noreturn]] void abort(int code) override { std::exit(code); }
    const char* kind() const override { return "single-process"; }

private:
    std::deque<std::vector<float>> queued_;  // sends to self, oldest first
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }

bool launched_by_mpirun() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

bool built_with_mpi() {
#if DUET_HAVE_MPI
    return true;
#else
    return false;
#endif
}

std::unique_ptr<Communicator> make_world_communicator() {
#if DUET_HAVE_MPI
    if (launched_by_mpirun()) return make_mpi_communicator();
#endif
    return make_single_process_communicator();
}

}  // namespace duet::parallel
