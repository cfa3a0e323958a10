// The CUDA worker's process hygiene (issue 14.1), without a GPU: the worker is spawned the
// way CudaEvaluator spawns it, but the program is this test binary acting as a stand-in
// (ISLETUNE_FD_STANDIN=1 in its environment) that writes the list of its open descriptors to
// its socket and waits for the parent to close it. The child must hold nothing but the
// socket (fds 0 and 1) and stderr, so no lock of a file open in the parent (the rank file)
// outlives the parent's close, and an HDF5 file can be reopened read-write during a
// worker's life.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/file.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "eval/cuda/cuda_evaluator.hpp"
#include "eval/cuda/worker_compile.hpp"
#include "eval/cuda/worker_process.hpp"
#include "eval/cuda/worker_protocol.hpp"

namespace {

// The stand-in: runs before gtest's main when ISLETUNE_FD_STANDIN is set, writes
// "fds 0 1 2\n" (its open descriptors, the listing's own excluded) to fd 1, then blocks on
// fd 0 until the parent closes the socket.
const bool standin = [] {
  const char* on = std::getenv("ISLETUNE_FD_STANDIN");
  if (!on || std::strcmp(on, "1") != 0)
    return false;
  std::string line = "fds";
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    std::vector<int> fds;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != own)
        fds.push_back(std::atoi(e->d_name));
    }
    ::closedir(d);
    std::sort(fds.begin(), fds.end());
    for (int fd : fds)
      line += " " + std::to_string(fd);
  }
  line += "\n";
  if (::write(1, line.data(), line.size()) < 0)
    ::_exit(2);
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  ::_exit(0);
}();

std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

// Spawns the stand-in and returns it with the descriptor list it reported.
isletune::cuda::WorkerProcess spawn_standin(std::string& fds) {
  ::setenv("ISLETUNE_FD_STANDIN", "1", 1);
  isletune::cuda::WorkerProcess child({self_exe(), "--stand-in"});
  ::unsetenv("ISLETUNE_FD_STANDIN");
  fds.clear();
  char c;
  while (::read(child.fd(), &c, 1) == 1 && c != '\n')
    fds += c;
  return child;
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("isletune-spawn-" + std::to_string(::getpid()) + "-" + name);
}

TEST(WorkerSpawn, OnlyTheSocketAndStderrCrossIntoTheWorker) {
  // A file held open and flock-locked by the parent, opened without O_CLOEXEC as HDF5 does.
  const auto path = temp_file("locked");
  const int held = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  std::string fds;
  isletune::cuda::WorkerProcess child = spawn_standin(fds);
  EXPECT_EQ(fds, "fds 0 1 2");
  // The parent's close releases the lock: nothing in the child still holds it.
  ::close(held);
  const int again = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(again, 0);
  EXPECT_EQ(::flock(again, LOCK_EX | LOCK_NB), 0) << std::strerror(errno);
  ::close(again);
  child.stop(true);
  std::filesystem::remove(path);
}

TEST(WorkerSpawn, AnHdf5FileReopensReadWriteWhileAWorkerRestartedDuringItsLifeRuns) {
  const auto path = temp_file("trace.h5");
  // Generation k: the file is open (created) when the worker is (re)started.
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  std::string fds;
  isletune::cuda::WorkerProcess first = spawn_standin(fds);
  EXPECT_EQ(fds, "fds 0 1 2");
  ASSERT_GE(H5Fclose(f), 0);
  // Between batches: reopen read-write, restart the worker with the file open, close again.
  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0) << "the worker holds the file's lock";
  first = spawn_standin(fds);  // the restart: the old child is killed, a new one spawned
  EXPECT_EQ(fds, "fds 0 1 2");
  ASSERT_GE(H5Fclose(f), 0);
  // Next generation: the file reopens read-write while the restarted worker lives.
  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(f, 0) << "the restarted worker holds the file's lock";
  if (f >= 0)
    H5Fclose(f);
  first.stop(true);
  std::filesystem::remove(path);
}

TEST(WorkerSpawn, AMissingProgramIsOneSentence) {
  try {
    isletune::cuda::WorkerProcess child({"/nonexistent/isletune-worker"});
    FAIL() << "spawned a missing program";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/isletune-worker"), std::string::npos);
  }
}

TEST(WorkerProtocol, LaunchesRoundTripAndBadTextIsRejected) {
  const isletune::cuda::LaunchConfig l{{32, 4, 2}, {3000000000LL, 7, 5}, 98304, 8};
  const auto back = isletune::cuda::parse_launch(isletune::cuda::launch_text(l));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->block, l.block);
  EXPECT_EQ(back->grid, l.grid);
  EXPECT_EQ(back->shared_bytes, l.shared_bytes);
  EXPECT_EQ(back->steps, l.steps);
  EXPECT_FALSE(isletune::cuda::parse_launch("").has_value());
  EXPECT_FALSE(isletune::cuda::parse_launch("1 2 3 4 5 6 7").has_value());
  EXPECT_FALSE(isletune::cuda::parse_launch("1 2 3 4 5 6 7 8 9").has_value());
}

// The verification depth (docs/kernels.md, step 4): with the evaluator's 7-step short run, the
// tdeg values of the default space 1-6 are verified by it alone, 8, 12 and 16 (whose 7 steps
// would run only the tail) and 7 (no tail) need the 48-step run too; full verification always.
TEST(Verification, TheShortRunAloneCoversLaunchesOfOneToSixSteps) {
  using isletune::cuda::verification_needs_long_run;
  for (const int k : {1, 2, 3, 4, 5, 6})
    EXPECT_FALSE(verification_needs_long_run(k, 7, false)) << k;
  for (const int k : {7, 8, 12, 16})
    EXPECT_TRUE(verification_needs_long_run(k, 7, false)) << k;
  for (const int k : {1, 2, 4, 16})
    EXPECT_TRUE(verification_needs_long_run(k, 7, true)) << k;
  EXPECT_FALSE(verification_needs_long_run(0, 7, false));  // read as one step per launch
  EXPECT_TRUE(verification_needs_long_run(3, 6, false));   // 6 = 2 * 3: no tail
}

TEST(PlantedFaults, TheTestOnlySpecParsesAndBadTextIsOneSentence) {
  using isletune::cuda::PlantedFault;
  const auto got = isletune::cuda::parse_planted_faults("crash=3,trap=5,hang=7,launch=9,slow=11");
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got.at(3), PlantedFault::crash);
  EXPECT_EQ(got.at(5), PlantedFault::trap);
  EXPECT_EQ(got.at(7), PlantedFault::hang);
  EXPECT_EQ(got.at(9), PlantedFault::launch);
  EXPECT_EQ(got.at(11), PlantedFault::slow);
  for (const char* bad : {"", "crash", "crash=0", "crash=x", "boom=2", "crash=2,", "hang=-1"}) {
    EXPECT_THROW((void)isletune::cuda::parse_planted_faults(bad), isletune::InputError) << bad;
  }
}

TEST(PlantedFaults, APlantedKernelKeepsTheGeometryAndCannotLaunchWhenAskedTo) {
  isletune::cuda::KernelSource real;
  real.launch = {{32, 4, 1}, {10, 20, 1}, 4096, 4};
  real.tail_entry = "isl_tail";
  const auto k = isletune::cuda::planted_kernel(isletune::cuda::PlantedFault::launch, real);
  EXPECT_EQ(k.launch.block, real.launch.block);
  EXPECT_EQ(k.launch.grid, real.launch.grid);
  EXPECT_EQ(k.launch.steps, 1);
  EXPECT_TRUE(k.tail_entry.empty());
  EXPECT_GT(k.launch.shared_bytes, 1 << 29);  // beyond any GPU's opt-in shared memory
  EXPECT_NE(k.source.find(k.entry), std::string::npos);
  const auto hang = isletune::cuda::planted_kernel(isletune::cuda::PlantedFault::hang, real);
  EXPECT_NE(hang.source.find("for (;;)"), std::string::npos);
  // slow: a 1-s spin on one thread, nothing written (verified, it would be a wrong result).
  const auto slow = isletune::cuda::planted_kernel(isletune::cuda::PlantedFault::slow, real);
  EXPECT_NE(slow.source.find("%globaltimer"), std::string::npos);
  EXPECT_NE(slow.source.find("1000000000ULL"), std::string::npos);
  EXPECT_EQ(slow.source.find("out["), std::string::npos);
  EXPECT_EQ(slow.launch.grid, real.launch.grid);
}

// The compile pool with a stand-in compiler: "slow" blocks until the test releases it. The
// slow item comes back as a timeout after the (50 ms) bound, the items around it with their
// results, and the pool reports the abandoned compile until it ends (issue 14.3).
TEST(CompilePool, ACompileOverTheBoundIsAbandonedAndTheOthersComeBack) {
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  auto compiled = std::make_shared<std::atomic<int>>(0);
  auto compile = [gate, compiled](const std::string& src) {
    if (src == "slow") {
      std::unique_lock lock(gate->m);
      gate->cv.wait(lock, [&] { return gate->open; });
    }
    ++*compiled;
    isletune::cuda::CompileResult r;
    r.ok = true;
    r.cubin = "cubin of " + src;
    return r;
  };
  // One thread only: without a replacement thread, items after "slow" would never compile.
  isletune::cuda::CompilePool pool(compile, {"a", "slow", "b", "c"}, 1, 0.05);
  double ms = 0;
  std::size_t i = 99;
  auto first = pool.take_next(i, ms);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(i, 0u);
  EXPECT_EQ(first->cubin, "cubin of a");
  EXPECT_FALSE(pool.take_next(i, ms).has_value());
  EXPECT_EQ(i, 1u);
  EXPECT_GE(ms, 50);
  EXPECT_LT(ms, 5000);
  for (std::size_t want : {2u, 3u}) {
    auto r = pool.take_next(i, ms);
    ASSERT_TRUE(r.has_value()) << want;
    EXPECT_EQ(i, want);
    EXPECT_EQ(r->cubin, std::string("cubin of ") + (want == 2 ? "b" : "c"));
  }
  EXPECT_TRUE(pool.stuck());
  {
    std::lock_guard lock(gate->m);
    gate->open = true;
  }
  gate->cv.notify_all();
  for (int i = 0; i < 5000 && pool.stuck(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(pool.stuck());
  EXPECT_EQ(compiled->load(), 4);
}

// take_next hands items out as their compiles end, not in index order: with item 0 held
// back, items 1 and 2 come first and item 0 once released; an item held past the bound comes
// back as a timeout while the others still come back, and nothing is handed out twice.
TEST(CompilePool, TakeNextHandsItemsOutAsTheirCompilesEnd) {
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    void release() {
      {
        std::lock_guard lock(m);
        open = true;
      }
      cv.notify_all();
    }
  };
  // A compiler whose "held" source waits for the gate.
  const auto gated = [](const std::shared_ptr<Gate>& gate) {
    return [gate](const std::string& src) {
      if (src == "held") {
        std::unique_lock lock(gate->m);
        gate->cv.wait(lock, [&] { return gate->open; });
      }
      isletune::cuda::CompileResult r;
      r.ok = true;
      r.cubin = "cubin of " + src;
      return r;
    };
  };
  std::size_t i = 99;
  double ms = 0;
  {
    auto gate = std::make_shared<Gate>();
    isletune::cuda::CompilePool pool(gated(gate), {"held", "b", "c"}, 3, 30);
    std::set<std::size_t> first_two;
    for (int k = 0; k < 2; ++k) {
      const auto r = pool.take_next(i, ms);
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->cubin, std::string("cubin of ") + (i == 1 ? "b" : "c"));
      first_two.insert(i);
    }
    EXPECT_EQ(first_two, (std::set<std::size_t>{1, 2}));
    gate->release();
    const auto last = pool.take_next(i, ms);
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(i, 0u);
    EXPECT_EQ(last->cubin, "cubin of held");
    EXPECT_THROW((void)pool.take_next(i, ms), std::logic_error);
  }
  // One thread: "x" compiles only on the thread that replaces the abandoned one.
  auto gate = std::make_shared<Gate>();
  isletune::cuda::CompilePool pool(gated(gate), {"held", "x"}, 1, 0.05);
  EXPECT_FALSE(pool.take_next(i, ms).has_value());
  EXPECT_EQ(i, 0u);
  EXPECT_GE(ms, 50);
  const auto x = pool.take_next(i, ms);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(x->cubin, "cubin of x");
  EXPECT_TRUE(pool.stuck());
  gate->release();
  for (int k = 0; k < 5000 && pool.stuck(); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(pool.stuck());
}

}  // namespace

// The worker's queue: sources added while the pool runs compile on its threads as they come
// (no more threads than asked for), wait_next hands each out once, reports `idle` with nothing
// open, blocks for a new item or a wake() when asked to, and a wake() from another thread
// ends a blocked wait at once.
TEST(CompilePool, AddedSourcesCompileAsTheyComeAndAWakeEndsAWait) {
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  auto compile = [running, most](const std::string& src) {
    const int now = ++*running;
    for (int seen = most->load(); now > seen && !most->compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --*running;
    isletune::cuda::CompileResult r;
    r.ok = true;
    r.cubin = "cubin of " + src;
    return r;
  };
  isletune::cuda::CompilePool pool(compile, 2, 30);
  std::size_t i = 99;
  double ms = 0;
  std::optional<isletune::cuda::CompileResult> r;
  EXPECT_EQ(pool.wait_next(i, r, ms), isletune::cuda::CompilePool::Next::idle);
  for (const char* s : {"a", "b", "c", "d", "e"})
    pool.add(s);
  std::set<std::string> got;
  for (int k = 0; k < 5; ++k) {
    ASSERT_EQ(pool.wait_next(i, r, ms), isletune::cuda::CompilePool::Next::compiled);
    got.insert(r->cubin);
    if (k == 1)
      EXPECT_EQ(pool.add("f"), 5u);  // while the others compile
  }
  ASSERT_EQ(pool.wait_next(i, r, ms), isletune::cuda::CompilePool::Next::compiled);
  got.insert(r->cubin);
  EXPECT_EQ(got.size(), 6u);
  EXPECT_LE(most->load(), 2);
  EXPECT_EQ(pool.wait_next(i, r, ms), isletune::cuda::CompilePool::Next::idle);
  std::thread waker([&pool] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool.wake();
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pool.wait_next(i, r, ms, true), isletune::cuda::CompilePool::Next::woken);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  waker.join();
  std::thread adder([&pool] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    pool.add("g");
  });
  EXPECT_EQ(pool.wait_next(i, r, ms, true), isletune::cuda::CompilePool::Next::compiled);
  EXPECT_EQ(r->cubin, "cubin of g");
  adder.join();
}
