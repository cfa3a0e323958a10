// isletune-worker: the process that owns the CUDA context. It answers the parent
// (CudaEvaluator) over the socket on fds 0/1 (worker_protocol.hpp): "problem" sets up the
// reference module and buffers (worker_verify); "stream" prepares the inputs and references
// and turns the worker into a queue: each "submit" compiles with NVRTC on a pool of threads as
// it arrives (each compile bounded by the problem's compile_timeout_s), and each compiled
// kernel is verified and timed (worker_verify, worker_timing) as soon as the GPU is free,
// with "running" when it starts on the GPU and a "result" when it is done. A sticky CUDA
// error (illegal address, trap, assert) ends this process after it reports the kernel as
// crashed; a hang is ended by the parent.
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eval/cuda/compile_cpus.hpp"
#include "eval/cuda/compile_process.hpp"
#include "eval/cuda/nvrtc_compiler.hpp"
#include "eval/cuda/worker_compile.hpp"
#include "eval/cuda/worker_device.hpp"
#include "eval/cuda/worker_protocol.hpp"
#include "eval/cuda/worker_timing.hpp"
#include "eval/cuda/worker_verify.hpp"
#include "eval/race.hpp"

namespace isletune::cuda {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Seconds on the machine's monotonic clock (steady_clock, shared with the parent process):
// when a kernel started and ended on the GPU, for the parent's timeline.
double monotonic_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// One line of ISLETUNE_WORKER_LOG: ticket, ms the GPU's thread waited for a compile before
// the kernel, ms it spent on the kernel in all, of which load, verify and timing.
void log_kernel(std::FILE* f, const std::string& ticket, double waited_ms, double spent_ms,
                const Message& r) {
  std::fprintf(f, "%s %.3f %.3f %.3f %.3f %.3f %s\n", ticket.c_str(), waited_ms, spent_ms,
               r.number("load_ms"), r.number("verify_ms"), r.number("run_ms"),
               r.get("status").c_str());
  std::fflush(f);
}

// The device's limits as the tuner sees them (memory_bandwidth_gbs is measured later and
// fp64_gflops keeps its default: the properties do not give them).
DeviceLimits limits_of(const cudaDeviceProp& p) {
  DeviceLimits d;
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.warp_size = p.warpSize;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  for (std::size_t a = 0; a < 3; ++a) {
    d.max_block_dim[a] = p.maxThreadsDim[a];
    d.max_grid_dim[a] = p.maxGridSize[a];
  }
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.registers_per_sm = p.regsPerMultiprocessor;
  d.registers_per_block = p.regsPerBlock;
  d.shared_per_block = static_cast<int>(p.sharedMemPerBlock);
  d.shared_per_block_optin = static_cast<int>(p.sharedMemPerBlockOptin);
  d.shared_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
  d.l2_bytes = p.l2CacheSize;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  return d;
}

// What the parent asks to run for one kernel (the codegen ABI without the source).
struct KernelRequest {
  std::string entry, tail_entry;
  LaunchConfig launch, tail_launch;
};

class Worker {
 public:
  // A worker answering on `ch`; cache_dir "" = the default cubin cache.
  // `cpus`: the CPUs the compile pool runs on (take_compile_cpus), for the hello and the
  // automatic thread count.
  Worker(Channel& ch, std::string cache_dir, int compile_threads, std::vector<int> cpus)
      : ch_(ch),
        cache_dir_(std::move(cache_dir)),
        compile_threads_(compile_threads),
        cpus_(std::move(cpus)) {}

  // Initialises the device and says hello; false (after telling the parent) when there is
  // no usable device.
  bool start(int device) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      const std::string why =
          e == cudaSuccess ? "no CUDA device is visible"
                           : "the CUDA runtime found no usable driver or device: " + error_text(e);
      ch_.send(Message{"nodevice", {}}.set("message", why));
      return false;
    }
    if (device < 0 || device >= count)
      device = 0;
    if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess) {
      ch_.send(Message{"nodevice", {}}.set(
          "message", "cannot open CUDA device " + std::to_string(device) + ": " + error_text(e)));
      return false;
    }
    device_ = device;
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    limits_ = limits_of(p);
    const char* no_cache = std::getenv("ISLETUNE_NO_CUBIN_CACHE");
    compiler_ = std::make_unique<CubinCompiler>(
        p.major * 10 + p.minor,
        no_cache && *no_cache ? "" : (cache_dir_.empty() ? default_cache_dir() : cache_dir_));
    // NVRTC in processes of its own (compile_process.hpp); ISLETUNE_COMPILE_PROCESSES=0 keeps
    // it in this process's threads (for comparison).
    const char* in_processes = std::getenv("ISLETUNE_COMPILE_PROCESSES");
    if (!(in_processes && std::string(in_processes) == "0")) {
      processes_ = std::make_unique<CompileProcesses>(std::vector<std::string>{
          "/proc/self/exe", "--compile-server", std::to_string(p.major * 10 + p.minor)});
    }
    stream_ = std::make_unique<Stream>();
    ch_.send(hello(p, device));
    return true;
  }

  // Main loop: answers messages until "quit" or the parent goes away.
  void serve() {
    Message m;
    while (ch_.receive(m, -1) == Channel::Read::ok) {
      if (m.kind == "quit")
        return;
      if (m.kind == "problem") {
        on_problem(m);
      } else if (m.kind == "stream") {
        on_stream(m);  // ends the process
      } else if (m.kind == "bandwidth") {
        ch_.send(Message{"bandwidth", {}}.set("copy_bandwidth_gbs",
                                              measure_copy_bandwidth(stream_->get())));
      }
    }
  }

 private:
  // The "hello" message: device limits and the environment of the measurements.
  Message hello(const cudaDeviceProp& p, int device) {
    Message h{"hello", {}};
    char uuid[64];
    const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    int driver = 0, runtime = 0, clock_khz = 0, mem_khz = 0;
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
    const double bandwidth = measure_copy_bandwidth(stream_->get());
    if (bandwidth > 0)
      limits_.memory_bandwidth_gbs = bandwidth;
    put_limits(h, limits_);
    h.set("uuid", std::string(uuid))
        .set("device", device)
        .set("driver_version", driver)
        .set("runtime_version", runtime)
        .set("nvrtc_version", nvrtc_version())
        .set("sm_clock_mhz", clock_khz / 1000)
        .set("mem_clock_mhz", mem_khz / 1000)
        .set("global_mem_bytes", static_cast<long long>(p.totalGlobalMem))
        .set("copy_bandwidth_gbs", bandwidth)
        .set("compile_cpus", cpu_list_text(cpus_))
        .set("compile_threads", compile_threads_ > 0 ? compile_threads_ : auto_compile_threads());
    return h;
  }

  // Sets up a problem: grid, step counts, the reference module, the device buffers.
  void on_problem(const Message& m) {
    verifier_.reset();
    problem_.nx = static_cast<long long>(m.number("nx", 1));
    problem_.ny = static_cast<long long>(m.number("ny", 1));
    problem_.nz = static_cast<long long>(m.number("nz", 1));
    problem_.steps = static_cast<int>(m.number("steps", 48));
    problem_.short_steps = static_cast<int>(m.number("short_steps", 7));
    problem_.warmup = static_cast<int>(m.number("warmup", 2));
    problem_.repeats = std::max(1, static_cast<int>(m.number("repeats", 10)));
    problem_.min_rep_ms = m.number("min_rep_ms", 2.0);
    compile_timeout_s_ = m.number("compile_timeout_s", 60);
    problem_.slow_factor = m.number("slow_factor", 0);  // none sent: every kernel verified
    problem_.race_factor = m.number("race_factor", 0);  // none sent: every run timed
    problem_.settle_spread = m.number("settle_spread", 0);
    problem_.full_verification = m.number("full_verification", 0) != 0;

    const auto t0 = Clock::now();
    const CompileResult cr = compiler_->compile(m.get("reference"));
    if (!cr.ok) {
      ch_.send(
          Message{"error", {}}.set("message", "the reference kernel does not compile: " + cr.log));
      return;
    }
    try {
      verifier_ = std::make_unique<Verifier>(cr.cubin, problem_, stream_->get());
    } catch (const CudaError& e) {
      const long long mib = 5 * problem_.cells() * static_cast<long long>(sizeof(double)) >> 20;
      ch_.send(Message{"error", {}}.set("message", "the worker cannot set up the problem (" +
                                                       std::to_string(mib) +
                                                       " MiB of buffers): " + e.what()));
      if (e.sticky())
        std::_Exit(3);
      return;
    }
    ch_.send(Message{"ready", {}}.set("ms", ms_since(t0)));
  }

  // The queue (CudaEvaluator's submit / next, docs/kernels.md): after "stream" (the inputs'
  // seed; answered by "streaming" once the references are ready) each "submit" (ticket,
  // source, entry, launch, tail) compiles on the pool as soon as it arrives, and each compiled
  // kernel is verified and timed as soon as the GPU is free, in the order compiles end:
  // "running" then "result", with its ticket. A thread of its own reads the parent's messages,
  // so compiles of new submits start while the GPU measures. Ends the process on "quit" or
  // when the parent goes away.
  [[noreturn]] void on_stream(const Message& m) {
    if (!verifier_) {
      ch_.send(Message{"error", {}}.set("message", "a stream began before a problem"));
      std::_Exit(0);
    }
    const auto seed = static_cast<unsigned long long>(m.number("seed", 1));
    bool long_ready = false;  // the references of the long run computed
    const auto t_ref = Clock::now();
    try {
      verifier_->prepare(seed, false);
    } catch (const CudaError& e) {
      ch_.send(Message{"error", {}}.set("message",
                                        std::string("the reference run failed: ") + e.what()));
      std::_Exit(3);
    }
    ch_.send(Message{"streaming", {}}.set("reference_ms", ms_since(t_ref)));

    const int threads = compile_threads_ > 0 ? compile_threads_ : auto_compile_threads();
    if (processes_) {
      try {
        processes_->reserve(threads);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "isletune-worker: compiling in this process: %s\n", e.what());
      }
    }
    // Each compile thread also unloads the modules the GPU is done with and loads the cubin
    // it compiled, so the GPU's thread only runs kernels.
    CompilePool pool(
        [this, c = compiler_.get(), procs = processes_.get()](const std::string& src) {
          {
            std::vector<std::shared_ptr<Library>> done;
            std::lock_guard lock(graveyard_m_);
            done.swap(graveyard_);
          }
          CompileResult r = c->compile(src, [&](const std::string& s) {
            std::optional<CompileResult> got = procs ? procs->compile(s) : std::nullopt;
            return got ? std::move(*got) : c->compile_fresh(s);
          });
          if (r.ok) {
            const auto t0 = Clock::now();
            try {
              CUDA_CHECK(cudaSetDevice(device_));
              r.module = std::make_shared<Library>(r.cubin);
              r.load_ms = ms_since(t0);
            } catch (const CudaError&) {
              // Loaded again on the GPU's thread, which reports the error as the kernel's.
            }
          }
          return r;
        },
        threads, compile_timeout_s_);
    others_waiting_ = [&pool] { return pool.compiled_waiting(); };
    // The parent's messages, read on a thread of their own (the process ends with _Exit, so
    // the thread never outlives what it refers to).
    std::mutex inbox_m;
    std::vector<Message> inbox;
    bool gone = false;
    std::thread([&] {
      for (;;) {
        Message in;
        const auto got = ch_.receive(in, -1);
        {
          std::lock_guard lock(inbox_m);
          if (got != Channel::Read::ok)
            gone = true;
          else
            inbox.push_back(std::move(in));
        }
        pool.wake();
        if (got != Channel::Read::ok)
          return;
      }
    }).detach();

    std::vector<Message> submits;  // by pool index
    // ISLETUNE_WORKER_LOG=FILE: a line per kernel of how the GPU's thread spent its time
    // (bench/pipeline_busy.py reads it).
    const char* log_path = std::getenv("ISLETUNE_WORKER_LOG");
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(
        log_path && *log_path ? std::fopen(log_path, "a") : nullptr, &std::fclose);
    double waited_ms = 0;  // the GPU's thread waiting for a compile since the last kernel
    for (;;) {
      std::vector<Message> arrived;
      {
        std::lock_guard lock(inbox_m);
        arrived.swap(inbox);
        if (gone && arrived.empty())
          std::_Exit(0);
      }
      for (Message& a : arrived) {
        if (a.kind == "quit")
          std::_Exit(0);
        if (a.kind != "submit")
          continue;
        pool.add(a.get("source"));
        submits.push_back(std::move(a));
      }
      std::size_t i = 0;
      double ms = 0;
      std::optional<CompileResult> cr;
      const auto t_wait = Clock::now();
      const CompilePool::Next next = pool.wait_next(i, cr, ms, true);
      waited_ms += ms_since(t_wait);
      if (next == CompilePool::Next::woken || next == CompilePool::Next::idle)
        continue;
      const auto t_taken = Clock::now();
      const Message& sub = submits[i];
      Message r{"result", {}};
      r.set("ticket", sub.get("ticket"));
      if (next == CompilePool::Next::overdue) {
        if (processes_)
          processes_->kill_overdue(std::max(0.0, compile_timeout_s_ - 0.01));
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", compile_timeout_s_);
        r.set("compile_ms", ms)
            .set("status", "timeout")
            .set("message", std::string("compile exceeded ") + limit + " s (NVRTC)");
      } else {
        const auto main_launch = parse_launch(sub.get("launch"));
        const auto tail_launch = parse_launch(sub.get("tail_launch"));
        KernelRequest k{sub.get("entry"), sub.get("tail_entry"), {}, {}};
        if (!main_launch || (!k.tail_entry.empty() && !tail_launch)) {
          r.set("status", "launch_error").set("message", "the parent sent no valid launch");
        } else {
          k.launch = *main_launch;
          k.tail_launch = tail_launch.value_or(LaunchConfig{});
          if (!long_ready && (problem_.full_verification ||
                              verifier_->needs_long_run(std::max(1, k.launch.steps)))) {
            try {
              verifier_->prepare(seed, true);
            } catch (const CudaError& e) {
              r.set("status", "crashed")
                  .set("message", std::string("the long reference run failed: ") + e.what());
              ch_.send(r);
              std::_Exit(3);
            }
            long_ready = true;
          }
          // From here the parent's watchdog allows timeout_s (the compile is over).
          ch_.send(Message{"running", {}}
                       .set("ticket", sub.get("ticket"))
                       .set("start_s", monotonic_s()));
          r.set("status", measure(*cr, k, r));
        }
      }
      r.set("finish_s", monotonic_s());
      ch_.send(r);
      if (log)
        log_kernel(log.get(), sub.get("ticket"), waited_ms, ms_since(t_taken), r);
      submits[i].fields.clear();  // the source is no longer needed
      waited_ms = 0;
    }
  }

  // A CUDA error while measuring one kernel: a sticky one is reported as crashed and ends the
  // worker; any other is this kernel's launch_error.
  std::string cuda_failure(Message& r, const CudaError& e, const std::string& during) {
    r.set("message", during + ": " + e.what());
    if (e.sticky()) {
      r.set("status", "crashed");
      ch_.send(r);
      std::_Exit(3);
    }
    return "launch_error";
  }

  // The probe before a kernel's verification: one main launch, warm, timed. A kernel over
  // slow_factor x the reference kernel's time per step, whose verification and timing (their
  // steps: the verification runs, warm-up and repeats) would take over kSlowProbeMinMs, cannot
  // be the tuner's answer (the naive setting runs 1-3x faster than the reference) and would
  // cost the search its verification and timing (box3d4r 512^3 on the H100: settings at 380-760 ms
  // per step took 30-50 s each, against 91 ms for the reference); it is a timeout, neither verified
  // nor timed. A CudaError propagates to the caller's handling.
  static constexpr double kSlowProbeMinMs = 1000;
  std::optional<std::string> too_slow(const Schedule& s) {
    if (problem_.slow_factor <= 0)
      return std::nullopt;
    const double step = verifier_->probe_step_ms(s), reference = verifier_->reference_step_ms();
    const int k = std::max(1, s.main.steps);
    const double steps = problem_.short_steps +
                         (verifier_->needs_long_run(k) ? problem_.steps : 0) +
                         static_cast<double>(problem_.warmup + problem_.repeats) * k;
    if (step <= problem_.slow_factor * reference || step * steps <= kSlowProbeMinMs)
      return std::nullopt;
    char text[256];
    std::snprintf(text, sizeof text,
                  "one launch took %.4g ms per step, over %g x the reference kernel's %.4g ms "
                  "(evaluator.slow_factor): neither verified nor timed",
                  step, problem_.slow_factor, reference);
    return std::string(text);
  }

  // Loads, prepares, verifies and times one compiled kernel; fills r and returns its status.
  std::string measure(const CompileResult& cr, const KernelRequest& k, Message& r) {
    r.set("compile_ms", cr.ms).set("cached", cr.cached ? 1 : 0);
    if (!cr.ok) {
      r.set("message", "NVRTC: " + cr.log);
      return "compile_error";
    }
    if (k.launch.steps > 1 && (k.tail_entry.empty() || k.tail_launch.steps != 1)) {
      r.set("message", "a kernel advancing " + std::to_string(k.launch.steps) +
                           " steps per launch needs a one-step tail entry");
      return "launch_error";
    }
    const auto t_load = Clock::now();
    std::shared_ptr<Library> lib = std::static_pointer_cast<Library>(cr.module);
    // Unloaded by a compile thread once the kernel is done with.
    struct Bury {
      Worker& w;
      std::shared_ptr<Library>& lib;
      ~Bury() {
        if (!lib)
          return;
        std::lock_guard lock(w.graveyard_m_);
        w.graveyard_.push_back(std::move(lib));
      }
    } bury{*this, lib};
    Schedule s;
    try {
      if (!lib)
        lib = std::make_shared<Library>(cr.cubin);
      s.main.fn = lib->kernel(k.entry);
      if (!k.tail_entry.empty())
        s.tail.fn = lib->kernel(k.tail_entry);
    } catch (const CudaError& e) {
      r.set("load_ms", cr.load_ms + ms_since(t_load));
      if (e.sticky())
        return cuda_failure(r, e, "loading the module");
      r.set("message", std::string("loading the cubin failed: ") + e.what());
      return "compile_error";
    }
    r.set("load_ms", cr.load_ms + ms_since(t_load));
    try {
      EntryInfo info;
      if (auto why = prepare_entry(s.main, k.launch, limits_, info)) {
        r.set("message", *why);
        return "launch_error";
      }
      r.set("registers", info.registers)
          .set("shared_bytes", info.shared_bytes)
          .set("local_bytes", info.local_bytes)
          .set("occupancy", info.occupancy);
      if (s.tail.fn) {
        EntryInfo tail_info;
        if (auto why = prepare_entry(s.tail, k.tail_launch, limits_, tail_info)) {
          r.set("message", "the tail kernel: " + *why);
          return "launch_error";
        }
      }
    } catch (const CudaError& e) {
      return cuda_failure(r, e, "preparing the launch");
    }

    const auto t_verify = Clock::now();
    VerifyResult v;
    try {
      if (auto why = too_slow(s)) {
        r.set("verify_ms", ms_since(t_verify)).set("message", *why);
        return "timeout";
      }
      v = verifier_->verify(s);
    } catch (const CudaError& e) {
      return cuda_failure(r, e, "running the kernel");
    }
    r.set("verify_ms", ms_since(t_verify))
        .set("error_l2", v.error_l2)
        .set("error_max", v.error_max);
    if (!v.passed()) {
      r.set("message", v.message());
      return "wrong_result";
    }

    const auto t_run = Clock::now();
    const TimingPlan plan{problem_.warmup,        problem_.repeats, problem_.min_rep_ms,
                          problem_.steps,         best_ms_,         problem_.race_factor,
                          problem_.settle_spread, others_waiting_};
    Timing t;
    try {
      t = time_schedule(stream_->get(), s, verifier_->buffers(), plan);
    } catch (const CudaError& e) {
      return cuda_failure(r, e, "timing the kernel");
    }
    if (t.raced) {
      char why[256];
      std::snprintf(why, sizeof why,
                    "timed %zu of %d runs: their median, %.6g ms per step, is over %g x the "
                    "fastest kernel timed so far, %.6g ms, and another kernel waited for the "
                    "GPU %s",
                    t.times_ms.size(), problem_.repeats, t.median_ms, problem_.race_factor,
                    best_ms_, kRacedMark);
      r.set("message", why);
    } else if (t.median_ms > 0 && (best_ms_ <= 0 || t.median_ms < best_ms_)) {
      best_ms_ = t.median_ms;
    }
    r.set("median_ms", t.median_ms)
        .set("times_ms", t.times_text())
        .set("steps_per_rep", t.steps_per_rep)
        .set("run_ms", ms_since(t_run));
    return "ok";
  }

  Channel& ch_;
  std::string cache_dir_;
  int compile_threads_ = 0;
  std::vector<int> cpus_;

  // One compile thread per CPU of the pool's share, at most 32 (NVRTC's memory per compile).
  [[nodiscard]] int auto_compile_threads() const {
    const auto n = cpus_.empty() ? std::thread::hardware_concurrency() : cpus_.size();
    return static_cast<int>(std::clamp<std::size_t>(n, 1, 32));
  }
  double compile_timeout_s_ = 60;
  // The fastest median per step of a kernel timed in full in this worker (racing's reference;
  // 0: none yet; a restarted worker starts again without one).
  double best_ms_ = 0;
  // Whether a compiled kernel waits for the GPU (the stream's compile pool; racing's
  // condition).
  std::function<bool()> others_waiting_;
  int device_ = 0;
  DeviceLimits limits_;  // from cudaGetDeviceProperties
  // Modules the GPU is done with, unloaded by the next compile thread (off the GPU's thread).
  std::mutex graveyard_m_;
  std::vector<std::shared_ptr<Library>> graveyard_;
  std::unique_ptr<CubinCompiler> compiler_;
  std::unique_ptr<CompileProcesses> processes_;  // null: NVRTC in this process's threads
  std::unique_ptr<Stream> stream_;
  ProblemSize problem_;
  std::unique_ptr<Verifier> verifier_;
};

}  // namespace
}  // namespace isletune::cuda

// Usage: isletune-worker --compile-server ARCH: compile mode, NVRTC for sm_ARCH on stdin/stdout
// (compile_process.hpp); the worker starts its compile processes so.
// Usage: isletune-worker [--device N] [--compile-threads N] [--cache-dir DIR]
// [--node-share R/N]; speaks the protocol on stdin/stdout (the parent's socket). --node-share:
// the worker serves node-local rank R of N and compiles on that rank's share of the node's CPUs
// when its inherited binding is narrower (eval/cuda/compile_cpus.hpp).
int main(int argc, char** argv) {
  // Nothing but the socket (0, 1) and stderr is ours, even if a parent leaked descriptors.
  ::close_range(3, ~0U, 0);
  // A rank killed with SIGKILL takes its worker with it (a worker inside a hanging kernel
  // would otherwise hold the GPU forever). The signal follows the spawning *thread*: the
  // evaluator lives on the rank's main thread.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1)
    return 0;  // the parent is already gone
  // Modules load whole when a compile thread loads them (not lazily at a kernel's first use
  // on the GPU's thread), unless the user chose otherwise.
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  // Compile mode: NVRTC for the worker that started this process (compile_process.hpp).
  if (argc == 3 && std::string(argv[1]) == "--compile-server") {
    // Compiles take whatever CPU is left: the threads that feed the GPU, the rank's search
    // loop and its sample draws come first (on four H200s, 64 compile processes beside four
    // ranks left a rank's GPU idle while its host work waited for a CPU). A failure leaves
    // the priority as it was.
    constexpr int kCompileNice = 5;
    (void)::setpriority(PRIO_PROCESS, 0, kCompileNice);
    const isletune::cuda::CubinCompiler compiler(std::atoi(argv[2]), "");
    isletune::cuda::serve_compiles(
        0, 1, [&](const std::string& src) { return compiler.compile_fresh(src); });
    return 0;
  }
  int device = -1;
  int threads = 0;
  std::string cache_dir;
  isletune::cuda::NodeShare share;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--device")
      device = std::atoi(argv[i + 1]);
    if (flag == "--compile-threads")
      threads = std::atoi(argv[i + 1]);
    if (flag == "--cache-dir")
      cache_dir = argv[i + 1];
    if (flag == "--node-share")
      share = isletune::cuda::parse_node_share(argv[i + 1]).value_or(share);
  }
  // Before any thread starts: the compile pool's threads inherit the affinity.
  std::vector<int> cpus = isletune::cuda::take_compile_cpus(share);
  isletune::cuda::Channel channel(0, 1);
  try {
    isletune::cuda::Worker worker(channel, cache_dir, threads, std::move(cpus));
    if (!worker.start(device))
      return 0;
    worker.serve();
  } catch (const isletune::cuda::CudaError& e) {
    // Outside any one kernel (device setup): the parent sees the worker end and the message.
    std::fprintf(stderr, "isletune-worker: %s\n", e.what());
    std::_Exit(3);
  }
  return 0;
}
