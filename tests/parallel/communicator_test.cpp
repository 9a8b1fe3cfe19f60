// The communicator: the single-process one (what a binary without mpirun gets), and the MPI one
// under `mpirun -np 2` (this test binary re-runs itself there) against closed-form sums.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "mpirun.h"
#include "parallel/communicator.h"

using namespace duet;

namespace {

TEST(SingleProcess, CollectivesAreTheIdentity) {
    auto c = parallel::make_single_process_communicator();
    EXPECT_EQ(c->rank(), 0);
    EXPECT_EQ(c->size(), 1);
    EXPECT_STREQ(c->kind(), "single-process");
    std::vector<float> x = {1.5f, -2.0f, 3.25f};
    c->all_reduce_sum(x.data(), int64_t(x.size()));
    EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f, 3.25f}));
    int v = 7;
    c->broadcast(&v, sizeof v, 0);
    EXPECT_EQ(v, 7);
    c->barrier();
}

TEST(SingleProcess, SendToSelfIsQueuedInOrder) {
    auto c = parallel::make_single_process_communicator();
    const std::vector<float> a = {1.0f, 2.0f}, b = {3.0f};
    c->send(a.data(), 2, 0);
    c->send(b.data(), 1, 0);
    std::vector<float> x(2), y(1);
    c->recv(x.data(), 2, 0);
    c->recv(y.data(), 1, 0);
    EXPECT_EQ(x, a);
    EXPECT_EQ(y, b);
    // Misuse is an internal check (a programming error): the process stops with its message.
    EXPECT_DEATH(c->recv(y.data(), 1, 0), "recv from rank 0 with no message sent");
    EXPECT_DEATH(c->send(a.data(), 2, 1), "send to rank 1 in a group of one");
}

TEST(SingleProcess, WithoutMpirunTheWorldIsOneProcess) {
    if (parallel::launched_by_mpirun()) GTEST_SKIP() << "running under mpirun";
    auto c = parallel::make_world_communicator();
    EXPECT_EQ(c->size(), 1);
    EXPECT_STREQ(c->kind(), "single-process");
}

// Runs only inside the mpirun job that MpiWorld.TwoRanksUnderMpirun starts.
TEST(MpiRank, SumsAndBroadcasts) {
    if (!parallel::launched_by_mpirun()) GTEST_SKIP() << "only under mpirun (started by TwoRanksUnderMpirun)";
    auto c = parallel::make_world_communicator();
    ASSERT_STREQ(c->kind(), "MPI");
    const int r = c->rank(), n = c->size();
    ASSERT_EQ(n, 2);
    // x[i] = (r + 1) * i on rank r: the sum over ranks is i * n(n+1)/2.
    std::vector<float> x(1000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((r + 1) * int(i));
    c->all_reduce_sum(x.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], float(int(i) * n * (n + 1) / 2)) << i;
    // Rank 1's bytes reach rank 0.
    std::vector<int32_t> v(5, r == 1 ? 42 : -1);
    c->broadcast(v.data(), int64_t(v.size() * sizeof(int32_t)), 1);
    EXPECT_EQ(v, std::vector<int32_t>(5, 42));
    // Point-to-point both ways: rank 0 sends i + 0.5, rank 1 answers with twice each value.
    std::vector<float> m(300);
    if (r == 0) {
        for (size_t i = 0; i < m.size(); ++i) m[i] = float(i) + 0.5f;
        c->send(m.data(), int64_t(m.size()), 1);
        c->recv(m.data(), int64_t(m.size()), 1);
        for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(m[i], 2.0f * (float(i) + 0.5f)) << i;
    } else {
        c->recv(m.data(), int64_t(m.size()), 0);
        for (float& f : m) f *= 2.0f;
        c->send(m.data(), int64_t(m.size()), 0);
    }
    c->barrier();
}

TEST(MpiWorld, TwoRanksUnderMpirun) {
    if (parallel::launched_by_mpirun()) GTEST_SKIP() << "already under mpirun";
    if (test::mpirun_path().empty()) GTEST_SKIP() << "mpirun is not installed";
    ASSERT_TRUE(parallel::built_with_mpi()) << "mpirun is installed but duet was built without MPI";
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    ASSERT_GT(n, 0);
    self[n] = '\0';
    std::string cmd;
    for (const auto& a : test::mpirun_prefix(2)) cmd += "'" + a + "' ";
    cmd += std::string("'") + self + "' --gtest_filter=MpiRank.* > /dev/null";
    const int st = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd;
}

}  // namespace
