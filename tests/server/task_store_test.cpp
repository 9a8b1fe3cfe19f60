#include "server/task_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "server/api_error.h"
#include "server/task_service.h"

#include <atomic>
#include <thread>

namespace duet::server {
namespace {

namespace fs = std::filesystem;

class TaskStoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / fmt::format("duet_task_store_{}_{}", ::getpid(),
                                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = (dir_ / "tasks.db").string();
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
    std::string path_;
};

// The database holds task parameters and results: created readable by its owner only.
TEST_F(TaskStoreTest, DatabaseIsCreatedOwnerOnly) {
    const mode_t old = ::umask(0022);  // a usual umask would leave it 0644
    { TaskStore store(path_); store.create("bench", {}); }
    ::umask(old);
    EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(TaskStoreTest, LifeCycleAndResult) {
    TaskStore store(path_);
    const std::string id = store.create("bench", {{"seq_len", 2048}});
    EXPECT_EQ(id.rfind("task-", 0), 0u);
    EXPECT_EQ(id.size(), 21u);
    auto t = store.get(id);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->status, "queued");
    EXPECT_EQ(t->params["seq_len"], 2048);
    EXPECT_TRUE(t->result.is_null());

    EXPECT_FALSE(store.finish(id, {{"x", 1}}));  // not running yet
    EXPECT_TRUE(store.start(id));
    EXPECT_FALSE(store.start(id));
    EXPECT_TRUE(store.set_progress(id, 0.5));
    EXPECT_TRUE(store.set_progress(id, 0.25));  // progress never goes backwards
    EXPECT_DOUBLE_EQ(store.get(id)->progress, 0.5);
    EXPECT_TRUE(store.finish(id, {{"tbt_ratio", 0.31}}));
    t = store.get(id);
    EXPECT_EQ(t->status, "done");
    EXPECT_DOUBLE_EQ(t->progress, 1.0);
    EXPECT_DOUBLE_EQ(t->result["tbt_ratio"].get<double>(), 0.31);
    EXPECT_FALSE(store.cancel(id));  // finished tasks stay finished
    EXPECT_FALSE(store.get("task-0000000000000000"));
}

TEST_F(TaskStoreTest, CancelStopsLaterTransitions) {
    TaskStore store(path_);
    const std::string id = store.create("bench", nlohmann::json::object());
    ASSERT_TRUE(store.start(id));
    EXPECT_TRUE(store.cancel(id));
    EXPECT_TRUE(store.is_cancelled(id));
    EXPECT_FALSE(store.finish(id, {{"late", true}}));
    EXPECT_FALSE(store.mark_failed(id, "late"));
    EXPECT_EQ(store.get(id)->status, "cancelled");
}

TEST_F(TaskStoreTest, ReopenKeepsEveryTaskAndMarksUnfinishedInterrupted) {
    std::string done, running, queued;
    {
        TaskStore store(path_);
        done = store.create("bench", {{"n", 1}});
        running = store.create("npu_pim_gemv_optimize", {{"n", 2}});
        queued = store.create("bench", {{"n", 3}});
        store.start(done);
        store.finish(done, {{"ok", true}});
        store.start(running);
        store.set_progress(running, 0.4);
    }
    TaskStore reopened(path_);
    EXPECT_EQ(reopened.interrupted_at_open(), 2);
    auto all = reopened.list();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(reopened.get(done)->status, "done");
    EXPECT_EQ(reopened.get(done)->result["ok"], true);
    auto r = reopened.get(running);
    EXPECT_EQ(r->status, "interrupted");
    EXPECT_EQ(r->error, "the server stopped while the task was running");
    EXPECT_DOUBLE_EQ(r->progress, 0.4);
    EXPECT_EQ(reopened.get(queued)->error, "the server stopped while the task was queued");
}

TEST_F(TaskStoreTest, NotADatabaseIsAClearError) {
    std::ofstream(path_) << "this is not an sqlite file, just some text that is long enough to be read as a header";
    try {
        TaskStore store(path_);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), path_ + ": task store is not usable: file is not a database");
    }
}

TEST_F(TaskStoreTest, UnopenablePathIsAClearError) {
    const std::string bad = (dir_ / "missing-dir" / "tasks.db").string();
    try {
        TaskStore store(bad);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), bad + ": cannot open task store: No such file or directory");
    }
}

// Two servers on one store: the second marked the first's running task interrupted and its
// result was lost. Now the second store on the file is refused, naming it.
TEST_F(TaskStoreTest, ASecondStoreOnTheSameFileIsRefused) {
    TaskStore first(path_);
    const std::string id = first.create("bench", {});
    first.start(id);
    try {
        TaskStore second(path_);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  path_ + ": the task store is in use by another duet serve (each server needs its own --tasks-db)");
    }
    EXPECT_EQ(first.get(id)->status, "running");  // untouched
}

TEST_F(TaskStoreTest, TheLockIsReleasedWithTheStore) {
    { TaskStore first(path_); }
    TaskStore again(path_);  // no error
    EXPECT_TRUE(again.list().empty());
}

// A store created by an older duet (or by hand) with 0644 stayed 0644.
TEST_F(TaskStoreTest, AWorldReadableStoreIsTightenedAtOpen) {
    { TaskStore store(path_); store.create("bench", {}); }
    fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
    { TaskStore store(path_); }
    EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(TaskStoreTest, ListPagesNewestFirst) {
    TaskStore store(path_);
    std::vector<std::string> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(store.create("bench", {{"i", i}}));
    bool more = false;
    auto page = store.list_page(2, "", more);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_TRUE(more);
    EXPECT_EQ(page[0].id, ids[4]);
    EXPECT_EQ(page[1].id, ids[3]);
    page = store.list_page(2, ids[3], more);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, ids[2]);
    EXPECT_EQ(page[1].id, ids[1]);
    EXPECT_TRUE(more);
    page = store.list_page(2, ids[1], more);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, ids[0]);
    EXPECT_FALSE(more);
}

TEST_F(TaskStoreTest, PurgeKeepsUnfinishedAndTheNewestFinished) {
    TaskStore store(path_);
    std::vector<std::string> ids;
    for (int i = 0; i < 6; ++i) {
        ids.push_back(store.create("bench", {{"i", i}}));
        if (i < 5) {
            store.start(ids.back());
            store.finish(ids.back(), {});
        }
    }
    EXPECT_EQ(store.purge(2, TaskStore::kMaxFinishedAgeMs), 3);  // finished 0, 1, 2 go
    EXPECT_FALSE(store.get(ids[0]));
    EXPECT_FALSE(store.get(ids[2]));
    EXPECT_TRUE(store.get(ids[3]));
    EXPECT_TRUE(store.get(ids[4]));
    EXPECT_EQ(store.get(ids[5])->status, "queued");
    EXPECT_EQ(store.purge(2, -1000), 2);  // max age in the past: every finished one is too old
    EXPECT_EQ(store.list().size(), 1u);
}

// Tasks had no limit: each POST queued another. Now the 65th unfinished one is a 429.
TEST_F(TaskStoreTest, UnfinishedTasksAreLimited) {
    TaskStore store(path_);
    std::atomic<bool> release{false};
    {
        TaskService svc(store);
        svc.register_kind("block", {nullptr, [&](const nlohmann::json&, const TaskKind::Progress&,
                                                  const std::function<bool()>& cancelled) {
                                        while (!release.load() && !cancelled())
                                            std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                        return nlohmann::json::object();
                                    }});
        for (size_t i = 0; i < TaskService::kMaxUnfinished; ++i) svc.submit({{"task", "block"}});
        try {
            svc.submit({{"task", "block"}});
            FAIL() << "expected a 429";
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 429);
            EXPECT_EQ(std::string(e.what()), "The server has 64 unfinished tasks, its limit; wait for one to finish "
                                             "or cancel one (DELETE /v1/tasks/ID)");
        }
        release = true;
    }
}

}  // namespace
}  // namespace duet::server
