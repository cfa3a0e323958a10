// CudaEvaluator: the Evaluator that measures settings on a real GPU. It generates each
// setting's kernel here (pure C++) and hands compiling, verifying and timing to the
// isletune-worker process, so this side links no CUDA library and the main binary starts
// on machines without a driver. Its queue is the worker's (Evaluator::submit / next): each
// submitted kernel goes to the worker at once, compiles on its pool while the GPU measures
// others, and comes back when done. A worker that crashes (sticky CUDA error) or hangs
// (watchdog) costs only the kernel it was running: it is restarted, and every kernel still
// owed is submitted to the new one.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eval/cuda/codegen.hpp"
#include "eval/cuda/compile_cpus.hpp"
#include "eval/cuda/worker_process.hpp"
#include "eval/cuda/worker_protocol.hpp"
#include "eval/evaluator.hpp"

namespace isletune::cuda {

// Where the measurements come from, for the trace's /environment.
struct GpuEnvironment {
  std::string name;
  std::string uuid;
  int device = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;  // CUDA runtime the worker was built with
  std::string nvrtc_version;
  int sm_clock_mhz = 0;
  int mem_clock_mhz = 0;
  long long global_mem_bytes = 0;
  double copy_bandwidth_gbs = 0;  // measured device-to-device copy, read + write
  std::string compile_cpus;       // the CPUs the worker compiles on, "0-15"
  int compile_threads = 0;        // its NVRTC threads per batch
};

// Test-only planted faults (ISLETUNE_PLANT_FAULTS, docs/kernels.md): the kernel of a chosen
// setting is replaced by one that crashes (illegal address), traps, hangs, cannot launch, or
// spins 1 s per launch and writes nothing (slow: the probe's timeout, docs/kernels.md).
enum class PlantedFault { crash, trap, hang, launch, slow };

// Parses "crash=3,trap=5,hang=7,launch=9,slow=11": the N-th distinct setting (from 1, in the order
// this evaluator first measures them) gets that fault. Throws InputError (one sentence).
[[nodiscard]] std::map<long long, PlantedFault> parse_planted_faults(const std::string& text);

// The planted kernel standing in for `real` (same launch geometry, one step per launch).
[[nodiscard]] KernelSource planted_kernel(PlantedFault fault, const KernelSource& real);

struct CudaOptions {
  std::string worker_path;  // "" = isletune-worker next to this executable, or $ISLETUNE_WORKER
  int device = -1;          // CUDA device index; -1 = the worker's default (0)
  double timeout_s = 120;   // watchdog per setting (load, verify, time)
  double compile_timeout_s = 60;  // NVRTC time per setting; longer: timeout, batch goes on
  // A kernel whose probe launch takes over slow_factor x the reference kernel's time per step
  // (and whose verification and timing would take over a second) is a timeout before its
  // verification (the worker's too_slow; 0: off).
  double slow_factor = kDefaultSlowFactor;
  // Racing (eval/race.hpp): a verified kernel whose first runs are over race_factor x the
  // fastest kernel the worker has timed is timed by those runs alone (0: every run timed).
  double race_factor = 0;
  // Settling (eval/race.hpp): a verified kernel whose first runs agree within settle_spread is
  // timed by those runs alone while another kernel waits (0: every run timed).
  double settle_spread = 0;
  // The long verification run (T steps) for every kernel; false: only where the 7-step run does
  // not exercise both the main and the tail entry (docs/kernels.md, "Measurement").
  bool full_verification = false;
  double setup_timeout_s = 900;  // watchdog for the reference module and each batch's
                                 // reference run
  std::uint64_t seed = 1;        // seeds the random inputs of each batch
  double min_rep_ms = 2.0;       // a timed repetition runs enough steps to last this long
  std::string cache_dir;    // cubin cache; "" = $ISLETUNE_CACHE_DIR or ~/.cache/isletune/cubins
  int compile_threads = 0;  // NVRTC threads per batch; 0 = one per CPU of the share, at most 32
  NodeShare node_share;     // node-local rank and ranks: the worker's share of the node's CPUs
};

class CudaEvaluator : public AsyncEvaluator {
 public:
  // Starts the worker. Throws InputError with one sentence when the worker cannot start,
  // no driver/GPU is present, or the problem does not fit on the device.
  explicit CudaEvaluator(Problem problem, CudaOptions options = {});
  ~CudaEvaluator() override;
  CudaEvaluator(const CudaEvaluator&) = delete;
  CudaEvaluator& operator=(const CudaEvaluator&) = delete;

  [[nodiscard]] DeviceLimits limits() const override { return limits_; }
  [[nodiscard]] int compile_threads() const override { return environment_.compile_threads; }
  [[nodiscard]] double clock_s() const override;
  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] std::string detail() const override;
  [[nodiscard]] std::string source(const Setting& s) const override;

  // Test and benchmark hook: measures raw kernels (planted faults, hand-written variants)
  // exactly as generated ones are measured. Only while nothing is queued.
  std::vector<Measurement> evaluate_raw(std::span<const KernelSource> kernels);

  [[nodiscard]] const GpuEnvironment& environment() const { return environment_; }
  [[nodiscard]] const Problem& problem() const { return problem_; }
  // How many times the worker was restarted after a crash or a timeout.
  [[nodiscard]] int worker_restarts() const { return restarts_; }

 protected:
  void enqueue(Ticket ticket, const Setting& s) override;
  Completion wait_one() override;

 private:
  // A kernel sent to the worker and not answered yet.
  struct Owed {
    KernelSource kernel;
    double submit_s = 0;
  };
  // Starts the worker (its problem and its queue's references) and sends it every kernel
  // still owed.
  void start_worker();
  void stop_worker(bool kill);
  void send_kernel(Ticket ticket, const KernelSource& kernel);
  // Queues a kernel under `ticket` (raw kernels: negative tickets).
  void enqueue_kernel(Ticket ticket, KernelSource kernel);
  // The planted fault of this setting (counting it when first seen), if any.
  std::optional<PlantedFault> planted_fault(const Setting& s);

  Problem problem_;
  CudaOptions options_;
  DeviceLimits limits_;
  GpuEnvironment environment_;
  std::string worker_path_;
  WorkerProcess process_;
  std::unique_ptr<Channel> channel_;
  int restarts_ = 0;
  std::uint64_t streams_ = 0;  // workers started (each gets inputs of its own seed)
  std::map<Ticket, Owed> owed_;
  std::deque<Completion> ready_;   // answered here (settings without a kernel)
  std::optional<Ticket> running_;  // on the GPU, per the worker
  double running_since_ = 0;
  int silent_failures_ = 0;                    // the worker ended with no kernel running, in a row
  std::map<long long, PlantedFault> planted_;  // ordinal of a distinct setting -> fault
  std::map<std::string, long long> seen_;      // canonical key -> ordinal (only when planting)
  std::chrono::steady_clock::time_point started_;
};

// Path of the worker executable: $ISLETUNE_WORKER, else `fallback`.
[[nodiscard]] std::string worker_path_or(const std::string& fallback);
// worker_path_or(isletune-worker next to /proc/self/exe).
[[nodiscard]] std::string default_worker_path();

}  // namespace isletune::cuda
