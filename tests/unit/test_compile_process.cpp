// NVRTC in child processes (eval/cuda/compile_process.hpp), without a GPU: the exchange over a
// socket pair, a pool of processes whose server is this test binary acting as a stand-in
// (ISLETUNE_FAKE_COMPILE_SERVER=1: a fake compile that a source "crash" kills), and, where the
// worker is built, the worker's real compile mode (NVRTC, no GPU needed).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eval/cuda/compile_process.hpp"

namespace {

using isletune::cuda::CompileProcesses;
using isletune::cuda::CompileResult;
using isletune::cuda::request_compile;
using isletune::cuda::serve_compiles;

// The fake compile: the "cubin" is the source reversed behind a NUL byte (binary data must
// survive), a source containing "error" fails, the time is the source's length.
CompileResult fake_compile(const std::string& source) {
  if (source == "crash")
    std::abort();
  if (source == "hang")
    std::this_thread::sleep_for(std::chrono::seconds(60));
  CompileResult r;
  r.ok = source.find("error") == std::string::npos;
  r.cubin = r.ok ? std::string(1, '\0') + std::string(source.rbegin(), source.rend()) : "";
  r.log = "compiled " + std::to_string(source.size()) + " bytes";
  r.ms = static_cast<double>(source.size());
  return r;
}

// The stand-in server: runs before gtest's main when the variable is set.
const bool fake_server = [] {
  if (const char* v = std::getenv("ISLETUNE_FAKE_COMPILE_SERVER"); v && *v == '1') {
    serve_compiles(0, 1, fake_compile);
    std::_Exit(0);
  }
  return false;
}();

void expect_fake_result(const CompileResult& r, const std::string& source) {
  const CompileResult want = fake_compile(source);
  EXPECT_EQ(r.ok, want.ok) << source;
  EXPECT_EQ(r.cubin, want.cubin) << source;
  EXPECT_EQ(r.log, want.log) << source;
  EXPECT_EQ(r.ms, want.ms) << source;
}

TEST(CompileExchange, ResultsCrossTheSocketIntact) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::thread server([&] {
    serve_compiles(sv[1], sv[1], fake_compile);
    ::close(sv[1]);
  });
  const std::vector<std::string> sources = {"__global__ void k() {}", "a syntax error here",
                                            std::string(300000, 'x'), ""};
  for (const std::string& s : sources) {
    const auto r = request_compile(sv[0], s);
    ASSERT_TRUE(r.has_value()) << s.substr(0, 20);
    expect_fake_result(*r, s);
  }
  ::close(sv[0]);  // the server sees the end of its requests and returns
  server.join();
}

TEST(CompileExchange, AServerGoneBeforeItAnswersGivesNothing) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::thread server([&] {
    char c;
    (void)::read(sv[1], &c, 1);  // takes the start of the request, then is gone
    ::close(sv[1]);
  });
  EXPECT_FALSE(request_compile(sv[0], "__global__ void k() {}").has_value());
  server.join();
  ::close(sv[0]);
}

class FakeServers : public testing::Test {
 protected:
  void SetUp() override { ::setenv("ISLETUNE_FAKE_COMPILE_SERVER", "1", 1); }
  void TearDown() override { ::unsetenv("ISLETUNE_FAKE_COMPILE_SERVER"); }
};

// Six threads share three processes (a thread that finds none idle compiles itself: nullopt);
// a process that dies mid-compile gives a failed result that says so and is replaced.
TEST_F(FakeServers, ProcessesCompileForManyThreadsAndOneThatDiesIsReplaced) {
  CompileProcesses procs({"/proc/self/exe"});
  procs.reserve(3);
  EXPECT_EQ(procs.alive(), 3);
  std::vector<int> served(6, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const std::string src = "kernel " + std::to_string(t) + "/" + std::to_string(k);
        if (auto r = procs.compile(src)) {
          expect_fake_result(*r, src);
          ++served[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (std::thread& th : threads)
    th.join();
  int total = 0;
  for (const int s : served)
    total += s;
  EXPECT_GT(total, 0);
  EXPECT_EQ(procs.alive(), 3);

  const auto crashed = procs.compile("crash");
  ASSERT_TRUE(crashed.has_value());
  EXPECT_FALSE(crashed->ok);
  EXPECT_NE(crashed->log.find("signal " + std::to_string(SIGABRT)), std::string::npos)
      << crashed->log;
  EXPECT_EQ(procs.alive(), 2);
  procs.reserve(3);
  EXPECT_EQ(procs.alive(), 3);
  const auto again = procs.compile("after the crash");
  ASSERT_TRUE(again.has_value());
  expect_fake_result(*again, "after the crash");
}

TEST_F(FakeServers, WithNoProcessIdleTheCallerCompiles) {
  CompileProcesses procs({"/proc/self/exe"});
  EXPECT_FALSE(procs.compile("kernel").has_value());
  procs.reserve(1);
  EXPECT_TRUE(procs.compile("kernel").has_value());
}

// A compile the worker gave up on: its process is ended and the caller gets a failed result at
// once; a compile younger than the limit is left alone.
TEST_F(FakeServers, AnOverdueCompileIsEndedAndItsCallerReturns) {
  CompileProcesses procs({"/proc/self/exe"});
  procs.reserve(2);
  std::optional<CompileResult> hung;
  std::thread caller([&] { hung = procs.compile("hang"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(procs.kill_overdue(30.0), 0);  // not 30 s yet
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(procs.kill_overdue(0.2), 1);
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(hung.has_value());
  EXPECT_FALSE(hung->ok);
  EXPECT_NE(hung->log.find("signal " + std::to_string(SIGKILL)), std::string::npos) << hung->log;
  EXPECT_EQ(procs.alive(), 1);
  const auto next = procs.compile("next");
  ASSERT_TRUE(next.has_value());
  expect_fake_result(*next, "next");
}

// The worker's compile mode: NVRTC for sm_90 in a process of its own (no GPU needed).
TEST(WorkerCompileMode, CompilesWithNvrtcAndReportsErrors) {
#ifndef ISLETUNE_WORKER_PATH
  GTEST_SKIP() << "the CUDA worker is not built (no CUDA Toolkit)";
#else
  CompileProcesses procs({ISLETUNE_WORKER_PATH, "--compile-server", "90"});
  procs.reserve(2);
  const auto ok = procs.compile(
      "extern \"C\" __global__ void isl_kernel(const double* in, double* out) {\n"
      "  out[threadIdx.x] = 2.0 * in[threadIdx.x];\n}\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(ok->ok) << ok->log;
  ASSERT_GE(ok->cubin.size(), 4u);
  EXPECT_EQ(ok->cubin.substr(0, 4), std::string("\x7f\x45\x4c\x46"));  // "\x7fELF"
  EXPECT_GT(ok->ms, 0);
  const auto bad = procs.compile("extern \"C\" __global__ void isl_kernel( { }\n");
  ASSERT_TRUE(bad.has_value());
  EXPECT_FALSE(bad->ok);
  EXPECT_NE(bad->log.find("error"), std::string::npos) << bad->log;
  EXPECT_EQ(procs.alive(), 2);
#endif
}

}  // namespace
