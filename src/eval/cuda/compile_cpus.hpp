// The CPUs the worker's NVRTC compile pool runs on. A rank started by `mpirun` without
// `--bind-to none` is bound to one core (Open MPI binds to core for two ranks or fewer), and
// its worker inherits the binding: every compile thread of a batch then shares that core, and a
// batch of 16 settings compiles 16 times slower than the node allows. The worker therefore takes
// its node-local share of the CPUs the node lets it use: the node's CPUs split evenly among the
// node's ranks, the `local_rank`-th slice. A binding at least as wide as the share is the
// user's choice (`srun --cpus-per-task`, `--map-by ...:PE=n`) and is kept, unless the node's
// ranks' bindings overlap (none at all, `--bind-to none`, or Open MPI's package binding above
// two ranks): then every rank takes its slice, so no two ranks of a node compile on one CPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace isletune::cuda {

// Which of a node's ranks this worker serves: local rank r of n ranks on the node, and whether
// the inherited CPU bindings of the node's ranks overlap (then a wide binding is not kept).
struct NodeShare {
  int rank = 0;
  int ranks = 1;
  bool bindings_overlap = false;
};

// "r/n" or "r/n:overlap" -> NodeShare; nullopt unless 0 <= r < n.
[[nodiscard]] std::optional<NodeShare> parse_node_share(const std::string& text);

// The slice of `node` (sorted CPU ids) for share `s`: contiguous, sizes differing by at most one,
// the slices of all ranks covering `node` exactly; at least one CPU (ranks beyond the CPU count
// share CPU slices round-robin).
[[nodiscard]] std::vector<int> cpu_slice(const std::vector<int>& node, NodeShare s);

// The CPU set the compile pool should use: `own` (the inherited binding) when it holds at least
// as many CPUs as the share's slice of `node` and the node's ranks' bindings do not overlap,
// else the slice.
[[nodiscard]] std::vector<int> compile_cpus(const std::vector<int>& own,
                                            const std::vector<int>& node, NodeShare s);

// The calling thread's CPU affinity (sorted ids); empty when the system does not say.
[[nodiscard]] std::vector<int> current_cpus();

// Applies compile_cpus() to the calling thread (threads it starts afterwards inherit it): the
// node's CPUs are what the kernel allows when asked for every online CPU (a cgroup or cpuset
// narrows that). Returns the CPU set in effect afterwards. On any failure the affinity is left
// as it was.
std::vector<int> take_compile_cpus(NodeShare s);

// What take_compile_cpus(s) would give the calling thread, worked out on a thread of its own:
// the caller's affinity stays as it is (a replayed run records the share it would compile on).
[[nodiscard]] std::vector<int> probe_compile_cpus(NodeShare s);

// "r/n" or "r/n:overlap", what parse_node_share() reads.
[[nodiscard]] std::string node_share_text(NodeShare s);

// Whether any two of `bindings` (CPU id lists) share a CPU.
[[nodiscard]] bool any_overlap(const std::vector<std::vector<int>>& bindings);

// "0-3,8,10-11" for logs.
[[nodiscard]] std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace isletune::cuda
