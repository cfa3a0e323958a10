// The CUDA worker's CPU share (eval/cuda/compile_cpus.hpp): a rank bound to one core by mpirun
// compiles on its slice of the node; a binding as wide as the share is kept.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "eval/cuda/compile_cpus.hpp"

namespace isletune::cuda {
namespace {

std::vector<int> range(int first, int count) {
  std::vector<int> v(static_cast<std::size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(CompileCpus, ParsesTheNodeShare) {
  const auto s = parse_node_share("3/8");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rank, 3);
  EXPECT_EQ(s->ranks, 8);
  EXPECT_FALSE(s->bindings_overlap);
  const auto o = parse_node_share("1/2:overlap");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->rank, 1);
  EXPECT_EQ(o->ranks, 2);
  EXPECT_TRUE(o->bindings_overlap);
  EXPECT_EQ(node_share_text(*o), "1/2:overlap");
  EXPECT_EQ(node_share_text(*s), "3/8");
  for (const char* bad : {"", "8/8", "-1/4", "1/0", "a/4", "1/", "/4", "1-4", "2/3x", ":overlap",
                          "1/2:overlapx", "1/2overlap"})
    EXPECT_FALSE(parse_node_share(bad).has_value()) << bad;
}

TEST(CompileCpus, SlicesCoverTheNodeExactlyAndEvenly) {
  for (const int cpus : {1, 2, 16, 17, 128}) {
    for (const int ranks : {1, 2, 3, 8}) {
      if (ranks > cpus)
        continue;
      const std::vector<int> node = range(4, cpus);  // ids need not start at 0
      std::vector<int> all;
      std::size_t smallest = node.size(), largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto slice = cpu_slice(node, {r, ranks});
        ASSERT_FALSE(slice.empty());
        smallest = std::min(smallest, slice.size());
        largest = std::max(largest, slice.size());
        all.insert(all.end(), slice.begin(), slice.end());
      }
      EXPECT_EQ(all, node) << cpus << " CPUs, " << ranks << " ranks";
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

TEST(CompileCpus, MoreRanksThanCpusShareThemRoundRobin) {
  const std::vector<int> node{0, 1};
  EXPECT_EQ(cpu_slice(node, {0, 3}), std::vector<int>{0});
  EXPECT_EQ(cpu_slice(node, {1, 3}), std::vector<int>{1});
  EXPECT_EQ(cpu_slice(node, {2, 3}), std::vector<int>{0});
}

TEST(CompileCpus, ANarrowBindingIsWidenedAWideOneKept) {
  const std::vector<int> node = range(0, 16);
  // mpirun -np 1 bound the rank to core 0: the worker takes the whole node.
  EXPECT_EQ(compile_cpus({0}, node, {0, 1}), node);
  // Two ranks bound to one core each: each takes its half.
  EXPECT_EQ(compile_cpus({0}, node, {0, 2}), range(0, 8));
  EXPECT_EQ(compile_cpus({1}, node, {1, 2}), range(8, 8));
  // srun --cpus-per-task=8 (or PE=8): as wide as the share, kept even if not the slice.
  EXPECT_EQ(compile_cpus(range(8, 8), node, {0, 2}), range(8, 8));
  // Unbound (--bind-to none): every CPU already.
  EXPECT_EQ(compile_cpus(node, node, {0, 1}), node);
}

// The node's ranks unbound (--bind-to none, Slurm without task binding) or bound to one
// package by Open MPI (above two ranks): their bindings overlap, so a wide binding is no share
// of its own and each rank takes its slice, also on every node of a multi-node job.
TEST(CompileCpus, OverlappingBindingsTakeTheSlice) {
  const std::vector<int> node = range(0, 16);
  EXPECT_EQ(compile_cpus(node, node, {0, 2, true}), range(0, 8));
  EXPECT_EQ(compile_cpus(node, node, {1, 2, true}), range(8, 8));
  // Package binding, 4 ranks on 2 packages of 8: the slices, not the package.
  EXPECT_EQ(compile_cpus(range(0, 8), node, {1, 4, true}), range(4, 4));
  EXPECT_EQ(compile_cpus(range(8, 8), node, {2, 4, true}), range(8, 4));
  // Alone on its node, an unbound rank keeps every CPU (its slice is the node).
  EXPECT_EQ(compile_cpus(node, node, {0, 1, true}), node);
}

TEST(CompileCpus, OverlapOfBindings) {
  EXPECT_FALSE(any_overlap({}));
  EXPECT_FALSE(any_overlap({range(0, 16)}));
  EXPECT_FALSE(any_overlap({range(0, 8), range(8, 8)}));
  EXPECT_FALSE(any_overlap({{0}, {1}, {2, 3}}));
  EXPECT_TRUE(any_overlap({range(0, 16), range(0, 16)}));
  EXPECT_TRUE(any_overlap({range(0, 8), range(4, 8)}));
  EXPECT_TRUE(any_overlap({{0}, {1}, {2, 1}}));
  EXPECT_FALSE(any_overlap({{0, 0}, {1}}));  // a CPU listed twice in one binding is no overlap
}

TEST(CompileCpus, ListTextIsCompact) {
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({5}), "5");
  EXPECT_EQ(cpu_list_text({}), "");
}

// The real thing in a child process (the affinity is per process): bound to one CPU as mpirun
// binds a rank, take_compile_cpus() of the only rank on the node widens it to every CPU the
// process may use; of rank 1 of as many ranks as CPUs, it keeps its own CPU.
TEST(CompileCpus, TakesTheShareOfABoundProcess) {
  const std::vector<int> allowed = current_cpus();
  ASSERT_FALSE(allowed.empty());
  if (allowed.size() < 2)
    GTEST_SKIP() << "this machine lets the test use one CPU only";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(allowed.front(), &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0)
      ::_exit(10);
    if (current_cpus().size() != 1)
      ::_exit(11);
    const std::vector<int> got = take_compile_cpus({0, 1});
    if (got != allowed || current_cpus() != allowed)
      ::_exit(12);
    ::sched_setaffinity(0, sizeof one, &one);
    const auto n = static_cast<int>(allowed.size());
    // As many ranks as CPUs: the one-CPU binding is as wide as the share and stays.
    const std::vector<int> mine = take_compile_cpus({1, n});
    if (mine != std::vector<int>{allowed.front()} || current_cpus() != mine)
      ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: could not bind, 11: binding not seen, 12: not "
         "widened to the allowed CPUs, 13: a binding as wide as the share not kept";
}

// probe_compile_cpus() (a replayed run's record of its share) says what take_compile_cpus()
// would give without changing the caller's affinity.
TEST(CompileCpus, ProbeLeavesTheCallerAsItWas) {
  const std::vector<int> allowed = current_cpus();
  ASSERT_FALSE(allowed.empty());
  if (allowed.size() < 2)
    GTEST_SKIP() << "this machine lets the test use one CPU only";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(allowed.front(), &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0)
      ::_exit(10);
    if (probe_compile_cpus({0, 1}) != allowed)
      ::_exit(12);
    if (current_cpus() != std::vector<int>{allowed.front()})
      ::_exit(14);
    // Unbound ranks of a node (overlapping bindings) probe disjoint slices.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (const int c : allowed)
      CPU_SET(c, &all);
    if (::sched_setaffinity(0, sizeof all, &all) != 0)
      ::_exit(10);
    if (probe_compile_cpus({0, 2, true}) != cpu_slice(allowed, {0, 2}) ||
        probe_compile_cpus({1, 2, true}) != cpu_slice(allowed, {1, 2}))
      ::_exit(15);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: could not bind, 12: wrong share, 14: the caller's "
                                       "affinity changed, 15: overlapping ranks not split";
}

}  // namespace
}  // namespace isletune::cuda
