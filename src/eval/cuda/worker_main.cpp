// isletune-worker: the process that owns the CUDA context. It compiles generated kernels
// with NVRTC (cubin cache on disk), loads them, verifies them against the reference kernel
// and times them, answering the parent (CudaEvaluator) over the socket on fds 0/1.
// A sticky CUDA error (illegal address, trap, assert) ends this process after it reports
// the setting as crashed; the parent starts a fresh worker. A hang is ended by the parent.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eval/cuda/nvrtc_compiler.hpp"
#include "eval/cuda/worker_protocol.hpp"

namespace isletune::cuda {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Errors after which the context is unusable.
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::string err_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

// A failed evaluation step: status name plus message.
struct Failure {
  std::string status;
  std::string message;
};

struct Problem {
  long long nx = 1, ny = 1, nz = 1;
  int steps = 48, short_steps = 7, warmup = 2, repeats = 10;
  double min_rep_ms = 2.0;
};

struct Launch {
  dim3 block{1, 1, 1};
  dim3 grid{1, 1, 1};
  int smem = 0;
};

// One loaded kernel entry and how it is launched (steps = time steps one launch advances).
struct Entry {
  const void* fn = nullptr;
  Launch launch;
  int steps = 1;
};

// How T steps run: T / main.steps launches of main, then T % main.steps launches of tail.
struct Schedule {
  Entry main;
  Entry tail;  // fn == nullptr when main.steps == 1
};

class Worker {
 public:
  // A worker answering on `ch`; cache_dir "" = the default cubin cache.
  Worker(Channel& ch, std::string cache_dir, int compile_threads)
      : ch_(ch), cache_dir_(std::move(cache_dir)), compile_threads_(compile_threads) {}

  // Initialises the device; false (after telling the parent) when there is none.
  bool start(int device) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      const std::string why =
          e == cudaSuccess ? "no CUDA device is visible"
                           : "the CUDA runtime found no usable driver or device: " + err_text(e);
      ch_.send(Message{"nodevice", {}}.set("message", why));
      return false;
    }
    if (device < 0 || device >= count)
      device = 0;
    if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess) {
      ch_.send(Message{"nodevice", {}}.set(
          "message", "cannot open CUDA device " + std::to_string(device) + ": " + err_text(e)));
      return false;
    }
    device_ = device;
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, device);
    arch_ = p.major * 10 + p.minor;
    max_threads_per_sm_ = p.maxThreadsPerMultiProcessor;
    for (int d = 0; d < 3; ++d) {
      max_block_[d] = p.maxThreadsDim[d];
      max_grid_[d] = p.maxGridSize[d];
    }
    const char* cache = std::getenv("ISLETUNE_NO_CUBIN_CACHE");
    compiler_ = std::make_unique<CubinCompiler>(
        arch_, cache && *cache ? "" : (cache_dir_.empty() ? default_cache_dir() : cache_dir_));
    cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);

    Message hello{"hello", {}};
    char uuid[64];
    const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    int driver = 0, runtime = 0, clock_khz = 0, mem_khz = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device);
    hello.set("name", std::string(p.name))
        .set("uuid", std::string(uuid))
        .set("device", device)
        .set("driver_version", driver)
        .set("runtime_version", runtime)
        .set("nvrtc_version", nvrtc_version())
        .set("sm_clock_mhz", clock_khz / 1000)
        .set("mem_clock_mhz", mem_khz / 1000)
        .set("sm_count", p.multiProcessorCount)
        .set("warp_size", p.warpSize)
        .set("max_threads_per_block", p.maxThreadsPerBlock)
        .set("max_block_dim", std::to_string(p.maxThreadsDim[0]) + " " +
                                  std::to_string(p.maxThreadsDim[1]) + " " +
                                  std::to_string(p.maxThreadsDim[2]))
        .set("max_grid_dim", std::to_string(p.maxGridSize[0]) + " " +
                                 std::to_string(p.maxGridSize[1]) + " " +
                                 std::to_string(p.maxGridSize[2]))
        .set("max_threads_per_sm", p.maxThreadsPerMultiProcessor)
        .set("max_blocks_per_sm", p.maxBlocksPerMultiProcessor)
        .set("registers_per_sm", p.regsPerMultiprocessor)
        .set("registers_per_block", p.regsPerBlock)
        .set("shared_per_block", static_cast<long long>(p.sharedMemPerBlock))
        .set("shared_per_block_optin", static_cast<long long>(p.sharedMemPerBlockOptin))
        .set("shared_per_sm", static_cast<long long>(p.sharedMemPerMultiprocessor))
        .set("l2_bytes", p.l2CacheSize)
        .set("compute_major", p.major)
        .set("compute_minor", p.minor)
        .set("global_mem_bytes", static_cast<long long>(p.totalGlobalMem))
        .set("copy_bandwidth_gbs", measure_copy_bandwidth());
    ch_.send(hello);
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
      } else if (m.kind == "batch") {
        on_batch(m);
      } else if (m.kind == "bandwidth") {
        ch_.send(Message{"bandwidth", {}}.set("copy_bandwidth_gbs", measure_copy_bandwidth()));
      }
    }
  }

 private:
  // Device-to-device copy of 1 GiB (or less on small devices): GB/s of read + write.
  double measure_copy_bandwidth() {
    std::size_t bytes = 1ULL << 30;
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    while (bytes > (1u << 20) && 2 * bytes > free_b / 2)
      bytes /= 2;
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
      cudaFree(a);
      cudaGetLastError();
      return 0;
    }
    cudaMemsetAsync(a, 1, bytes, stream_);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> t;
    for (int i = 0; i < 7; ++i) {
      cudaEventRecord(e0, stream_);
      cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_);
      cudaEventRecord(e1, stream_);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (i > 0)
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    const double ms = t[t.size() / 2];
    return ms > 0 ? 2.0 * bytes / (ms * 1e-3) / 1e9 : 0;
  }

  // Frees the problem's buffers and the reference module.
  void release_buffers() {
    for (double** p : {&in0_, &a_, &b_, &ref_long_, &ref_short_, &partial_}) {
      if (*p)
        cudaFree(*p);
      *p = nullptr;
    }
    if (ref_lib_)
      cudaLibraryUnload(ref_lib_);
    ref_lib_ = nullptr;
  }

  // Loads a cubin; the kernel handle doubles as a function pointer for the runtime API.
  cudaError_t load(const std::string& cubin, const std::string& entry, cudaLibrary_t& lib,
                   const void*& fn) {
    lib = nullptr;
    cudaError_t e =
        cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess)
      return e;
    return get_kernel(lib, entry.c_str(), fn);
  }

  // A kernel of a loaded library as a runtime-API function handle.
  static cudaError_t get_kernel(cudaLibrary_t lib, const char* name, const void*& fn) {
    cudaKernel_t k = nullptr;
    const cudaError_t e = cudaLibraryGetKernel(&k, lib, name);
    fn = reinterpret_cast<const void*>(k);
    return e;
  }

  // Sets up a problem: grid, step counts, the reference module, the device buffers.
  void on_problem(const Message& m) {
    release_buffers();
    problem_.nx = static_cast<long long>(m.number("nx", 1));
    problem_.ny = static_cast<long long>(m.number("ny", 1));
    problem_.nz = static_cast<long long>(m.number("nz", 1));
    problem_.steps = static_cast<int>(m.number("steps", 48));
    problem_.short_steps = static_cast<int>(m.number("short_steps", 7));
    problem_.warmup = static_cast<int>(m.number("warmup", 2));
    problem_.repeats = std::max(1, static_cast<int>(m.number("repeats", 10)));
    problem_.min_rep_ms = m.number("min_rep_ms", 2.0);
    cells_ = problem_.nx * problem_.ny * problem_.nz;

    const auto t0 = Clock::now();
    const CompileResult cr = compiler_->compile(m.get("reference"));
    if (!cr.ok) {
      ch_.send(
          Message{"error", {}}.set("message", "the reference kernel does not compile: " + cr.log));
      return;
    }
    cudaError_t e = load(cr.cubin, "isl_reference_step", ref_lib_, ref_step_);
    if (e == cudaSuccess)
      e = get_kernel(ref_lib_, "isl_fill_random", fill_random_);
    if (e == cudaSuccess)
      e = get_kernel(ref_lib_, "isl_fill_nan", fill_nan_);
    if (e == cudaSuccess)
      e = get_kernel(ref_lib_, "isl_compare", compare_);
    const std::size_t bytes = static_cast<std::size_t>(cells_) * sizeof(double);
    for (double** p : {&in0_, &a_, &b_, &ref_long_, &ref_short_}) {
      if (e == cudaSuccess)
        e = cudaMalloc(p, bytes);
    }
    if (e == cudaSuccess)
      e = cudaMalloc(&partial_, kCompareBlocks * 4 * sizeof(double));
    if (e != cudaSuccess) {
      const std::string msg = "the worker cannot set up the problem (" +
                              std::to_string(5 * bytes >> 20) + " MiB of buffers): " + err_text(e);
      release_buffers();
      ch_.send(Message{"error", {}}.set("message", msg));
      return;
    }
    ch_.send(Message{"ready", {}}.set("ms", ms_since(t0)));
  }

  // Launches one kernel over ptrs; returns the launch error (not synchronised).
  cudaError_t launch(const void* fn, const Launch& l, std::vector<void*> args) {
    return cudaLaunchKernel(fn, l.grid, l.block, args.data(), static_cast<std::size_t>(l.smem),
                            stream_);
  }

  // A 1-D launch of 256-thread blocks (the reference helpers).
  Launch linear(long long blocks) {
    Launch l;
    l.block = dim3(256);
    l.grid = dim3(static_cast<unsigned>(blocks));
    return l;
  }

  // Enqueues T steps following the schedule: T / steps main launches, then T % steps tail
  // launches. Each launch reads src and writes dst (a_ or b_); then src becomes the written
  // buffer and dst the other one, so src ends on the result and the input (in0 or a_/b_) is
  // read by the first launch only.
  cudaError_t enqueue_steps(const Schedule& s, long long steps, const double*& src, double*& dst) {
    const long long per = std::max(1, s.main.steps);
    const long long mains = steps / per;
    const long long launches = mains + steps % per;
    cudaError_t e = cudaSuccess;
    for (long long i = 0; i < launches && e == cudaSuccess; ++i) {
      const Entry& k = i < mains ? s.main : s.tail;
      e = launch(k.fn, k.launch, {&src, &dst});
      src = dst;
      dst = dst == a_ ? b_ : a_;
    }
    return e;
  }

  // Runs `steps` steps of the schedule from in0 into the NaN-poisoned ping-pong buffers;
  // returns the buffer holding the result. Each output buffer is NaN until a kernel writes it.
  cudaError_t run_steps(const Schedule& s, int steps, double*& result) {
    const Launch fill = linear(2048);
    cudaError_t e = launch(fill_nan_, fill, {&a_});
    if (e == cudaSuccess)
      e = launch(fill_nan_, fill, {&b_});
    const double* src = in0_;
    double* dst = a_;
    if (e == cudaSuccess)
      e = enqueue_steps(s, steps, src, dst);
    result = const_cast<double*>(src);
    return e;
  }

  // Fresh random inputs and the reference results for this batch.
  cudaError_t prepare_reference(unsigned long long seed) {
    unsigned long long s = seed;
    cudaError_t e = launch(fill_random_, linear(2048), {&in0_, &s});
    Schedule ref;
    ref.main = Entry{ref_step_, linear((cells_ + 255) / 256), 1};
    double* r = nullptr;
    if (e == cudaSuccess)
      e = run_steps(ref, problem_.steps, r);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(ref_long_, r, cells_ * 8, cudaMemcpyDeviceToDevice, stream_);
    if (e == cudaSuccess)
      e = run_steps(ref, problem_.short_steps, r);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(ref_short_, r, cells_ * 8, cudaMemcpyDeviceToDevice, stream_);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(stream_);
    return e;
  }

  struct Errors {
    double l2 = NAN, max = NAN, bad = 0;
  };

  // Verification metrics of out against ref, reduced on the device.
  cudaError_t compare(double* out, double* ref, Errors& err) {
    cudaError_t e = launch(compare_, linear(kCompareBlocks), {&out, &ref, &partial_});
    std::vector<double> h(kCompareBlocks * 4);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(h.data(), partial_, h.size() * 8, cudaMemcpyDeviceToHost, stream_);
    }
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess)
      return e;
    double d2 = 0, r2 = 0, mx = 0, bad = 0;
    for (int b = 0; b < kCompareBlocks; ++b) {
      d2 += h[4 * b];
      r2 += h[4 * b + 1];
      mx = std::max(mx, h[4 * b + 2]);
      bad += h[4 * b + 3];
    }
    err.l2 = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
    err.max = mx;
    err.bad = bad;
    return cudaSuccess;
  }

  // A CUDA error while evaluating one kernel: a sticky one is reported as crashed and ends
  // the worker; any other sets the message and returns "launch_error" for the caller to send.
  std::string cuda_failure(Message& r, cudaError_t e, const std::string& during) {
    r.set("message", during + ": " + err_text(e));
    if (is_sticky(e)) {
      r.set("status", "crashed");
      ch_.send(r);
      std::_Exit(3);
    }
    cudaGetLastError();
    return "launch_error";
  }

  // Measures a batch: fresh inputs and references, parallel compile, then each kernel.
  void on_batch(const Message& m) {
    const int n = static_cast<int>(m.number("count", 0));
    const auto seed = static_cast<unsigned long long>(m.number("seed", 1));
    const auto t_ref = Clock::now();
    if (cudaError_t e = prepare_reference(seed); e != cudaSuccess) {
      ch_.send(Message{"error", {}}.set("message", "the reference run failed: " + err_text(e)));
      if (is_sticky(e))
        std::_Exit(3);
      return;
    }
    const double ref_ms = ms_since(t_ref);

    // Compile the whole batch in parallel threads (cache hits cost a file read).
    std::vector<CompileResult> compiled(n);
    std::atomic<int> next{0};
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const int wanted = compile_threads_ > 0 ? compile_threads_ : std::min(16, std::max(1, cores));
    const int threads = std::max(1, std::min(n, wanted));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        for (int i = next++; i < n; i = next++) {
          compiled[i] = compiler_->compile(m.get("source" + std::to_string(i)));
        }
      });
    }
    for (auto& t : pool)
      t.join();
    ch_.send(Message{"compiled", {}}.set("reference_ms", ref_ms));

    for (int i = 0; i < n; ++i) {
      Message r{"result", {}};
      r.set("index", i);
      const std::string id = std::to_string(i);
      Kernel k;
      k.entry = m.get("entry" + id);
      k.tail_entry = m.get("tail_entry" + id);
      const auto main_launch = parse_launch(m.get("launch" + id));
      const auto tail_launch = parse_launch(m.get("tail_launch" + id));
      if (!main_launch || (!k.tail_entry.empty() && !tail_launch)) {
        r.set("status", "launch_error").set("message", "the parent sent no valid launch");
        ch_.send(r);
        continue;
      }
      k.launch = *main_launch;
      if (tail_launch)
        k.tail_launch = *tail_launch;
      evaluate(compiled[i], k, r);
    }
  }

  // What the parent asks to run for one kernel (the codegen ABI without the source).
  struct Kernel {
    std::string entry, tail_entry;
    LaunchConfig launch, tail_launch;
  };

  // Load, check resources, verify, time one kernel; sends its result message.
  void evaluate(const CompileResult& cr, const Kernel& k, Message& r) {
    r.set("compile_ms", cr.ms).set("cached", cr.cached ? 1 : 0);
    if (!cr.ok) {
      r.set("status", "compile_error").set("message", "NVRTC: " + cr.log);
      ch_.send(r);
      return;
    }
    cudaLibrary_t lib = nullptr;
    Schedule s;
    const auto t_load = Clock::now();
    cudaError_t e = load(cr.cubin, k.entry, lib, s.main.fn);
    if (e == cudaSuccess && !k.tail_entry.empty())
      e = get_kernel(lib, k.tail_entry.c_str(), s.tail.fn);
    r.set("load_ms", ms_since(t_load));
    if (e != cudaSuccess) {
      if (lib)
        cudaLibraryUnload(lib);
      cudaGetLastError();
      if (is_sticky(e))
        cuda_failure(r, e, "loading the module");
      r.set("status", "compile_error").set("message", "loading the cubin failed: " + err_text(e));
      ch_.send(r);
      return;
    }
    std::optional<std::string> verdict = prepare_entry(s.main, k.launch, r, true);
    if (!verdict && s.tail.fn)
      verdict = prepare_entry(s.tail, k.tail_launch, r, false);
    const std::string status = verdict ? *verdict : check_and_run(s, r);
    cudaLibraryUnload(lib);
    r.set("status", status);
    ch_.send(r);
  }

  // Checks one entry against the device and its own limits and sets its dynamic shared
  // memory attribute; returns "launch_error" (message set) when it cannot launch. The main
  // entry also reports registers, shared and local memory and occupancy.
  std::optional<std::string> prepare_entry(Entry& en, const LaunchConfig& lc, Message& r,
                                           bool is_main) {
    const std::string which = is_main ? "" : "the tail kernel: ";
    auto fail = [&](const std::string& msg) {
      r.set("message", which + msg);
      return std::optional<std::string>("launch_error");
    };
    en.steps = std::max(1, lc.steps);
    cudaFuncAttributes attr{};
    cudaError_t e = cudaFuncGetAttributes(&attr, en.fn);
    if (e != cudaSuccess)
      return cuda_failure(r, e, which + "reading kernel attributes");
    const long long threads = 1LL * lc.block[0] * lc.block[1] * lc.block[2];
    if (is_main) {
      r.set("registers", attr.numRegs)
          .set("shared_bytes", static_cast<long long>(attr.sharedSizeBytes) + lc.shared_bytes)
          .set("local_bytes", static_cast<long long>(attr.localSizeBytes));
    }
    for (int d = 0; d < 3; ++d) {
      if (lc.block[d] < 1 || lc.block[d] > max_block_[d]) {
        return fail("block " + std::string(1, "xyz"[d]) + " = " + std::to_string(lc.block[d]) +
                    " is outside the device's limit of " + std::to_string(max_block_[d]));
      }
      if (lc.grid[d] < 1 || lc.grid[d] > max_grid_[d]) {
        return fail("grid " + std::string(1, "xyz"[d]) + " = " + std::to_string(lc.grid[d]) +
                    " is outside the device's limit of " + std::to_string(max_grid_[d]));
      }
    }
    if (threads > attr.maxThreadsPerBlock) {
      return fail("a block of " + std::to_string(threads) +
                  " threads exceeds the kernel's limit of " +
                  std::to_string(attr.maxThreadsPerBlock) + " (" + std::to_string(attr.numRegs) +
                  " registers per thread)");
    }
    en.launch.block = dim3(static_cast<unsigned>(lc.block[0]), static_cast<unsigned>(lc.block[1]),
                           static_cast<unsigned>(lc.block[2]));
    en.launch.grid = dim3(static_cast<unsigned>(lc.grid[0]), static_cast<unsigned>(lc.grid[1]),
                          static_cast<unsigned>(lc.grid[2]));
    en.launch.smem = lc.shared_bytes;
    e = cudaFuncSetAttribute(en.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, lc.shared_bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return fail(std::to_string(lc.shared_bytes) +
                  " B of dynamic shared memory rejected: " + err_text(e));
    }
    int blocks_per_sm = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, en.fn,
                                                      static_cast<int>(threads),
                                                      static_cast<std::size_t>(lc.shared_bytes));
    if (e != cudaSuccess || blocks_per_sm == 0) {
      cudaGetLastError();
      return fail("the kernel cannot be resident on an SM (" + std::to_string(attr.numRegs) +
                  " registers, " + std::to_string(lc.shared_bytes) + " B dynamic shared)");
    }
    if (is_main)
      r.set("occupancy", static_cast<double>(blocks_per_sm * threads) / max_threads_per_sm_);
    return std::nullopt;
  }

  // Verifies and times a prepared schedule; returns the status name (sticky failures do not
  // return).
  std::string check_and_run(const Schedule& s, Message& r) {
    cudaError_t e = cudaSuccess;
    // Verification: a long and a short run against the reference.
    const auto t_verify = Clock::now();
    double worst_l2 = 0, worst_max = 0, bad = 0;
    for (int which = 0; which < 2; ++which) {
      const int steps = which == 0 ? problem_.steps : problem_.short_steps;
      double* out = nullptr;
      e = run_steps(s, steps, out);
      if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream_);
      Errors err;
      if (e == cudaSuccess)
        e = compare(out, which == 0 ? ref_long_ : ref_short_, err);
      if (e != cudaSuccess)
        return cuda_failure(r, e, "running the kernel");
      worst_l2 = std::max(worst_l2, err.l2);
      worst_max = std::max(worst_max, err.max);
      bad += err.bad;
    }
    r.set("verify_ms", ms_since(t_verify)).set("error_l2", worst_l2).set("error_max", worst_max);
    if (bad > 0 || !(worst_l2 <= 1e-12) || !(worst_max <= 1e-10)) {
      r.set("message", "output differs from the reference: l2 " + std::to_string(worst_l2) +
                           ", max relative " + std::to_string(worst_max) + ", " +
                           std::to_string(static_cast<long long>(bad)) + " non-finite points");
      return "wrong_result";
    }

    // Timing: warm-up, then `repeats` runs of K back-to-back steps each (K a multiple of the
    // steps per launch, chosen so a run lasts at least min_rep_ms); the median per step is
    // reported.
    const auto t_run = Clock::now();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const double* src = a_;
    double* dst = b_;
    auto steps_timed = [&](long long k, float& ms) {
      cudaError_t err = cudaEventRecord(e0, stream_);
      if (err == cudaSuccess)
        err = enqueue_steps(s, k, src, dst);
      if (err == cudaSuccess)
        err = cudaEventRecord(e1, stream_);
      if (err == cudaSuccess)
        err = cudaEventSynchronize(e1);
      if (err == cudaSuccess)
        err = cudaEventElapsedTime(&ms, e0, e1);
      return err;
    };
    const long long per = std::max(1, s.main.steps);
    float ms = 0;
    for (int w = 0; w < std::max(1, problem_.warmup) && e == cudaSuccess; ++w)
      e = steps_timed(per, ms);
    const double per_step = std::max(static_cast<double>(ms) / per, 1e-6);
    const long long most = std::max(per, (problem_.steps + per - 1) / per * per);
    long long k = static_cast<long long>(std::ceil(problem_.min_rep_ms / per_step));
    k = std::clamp((k + per - 1) / per * per, per, most);
    std::vector<double> times;
    for (int rep = 0; rep < problem_.repeats && e == cudaSuccess; ++rep) {
      e = steps_timed(k, ms);
      times.push_back(ms / static_cast<double>(k));
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (e != cudaSuccess)
      return cuda_failure(r, e, "timing the kernel");
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t h = sorted.size();
    const double median = h % 2 ? sorted[h / 2] : 0.5 * (sorted[h / 2 - 1] + sorted[h / 2]);
    std::string list;
    for (double t : times) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.9g", list.empty() ? "" : " ", t);
      list += buf;
    }
    r.set("median_ms", median)
        .set("times_ms", list)
        .set("steps_per_rep", k)
        .set("run_ms", ms_since(t_run));
    return "ok";
  }

  static constexpr int kCompareBlocks = 1024;

  Channel& ch_;
  std::string cache_dir_;
  int compile_threads_ = 0;
  int device_ = 0;
  int arch_ = 90;
  int max_threads_per_sm_ = 2048;
  std::array<long long, 3> max_block_{1024, 1024, 64};
  std::array<long long, 3> max_grid_{2147483647LL, 65535, 65535};
  std::unique_ptr<CubinCompiler> compiler_;
  cudaStream_t stream_ = nullptr;
  Problem problem_;
  long long cells_ = 0;
  cudaLibrary_t ref_lib_ = nullptr;
  const void* ref_step_ = nullptr;
  const void* fill_random_ = nullptr;
  const void* fill_nan_ = nullptr;
  const void* compare_ = nullptr;
  double *in0_ = nullptr, *a_ = nullptr, *b_ = nullptr, *ref_long_ = nullptr, *ref_short_ = nullptr,
         *partial_ = nullptr;
};

}  // namespace
}  // namespace isletune::cuda

// Usage: isletune-worker [--device N] [--compile-threads N] [--cache-dir DIR]; speaks the
// protocol on stdin/stdout (the parent's socket).
int main(int argc, char** argv) {
  // Nothing but the socket (0, 1) and stderr is ours, even if a parent leaked descriptors.
  ::close_range(3, ~0U, 0);
  int device = -1;
  int threads = 0;
  std::string cache_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--device")
      device = std::atoi(argv[i + 1]);
    if (flag == "--compile-threads")
      threads = std::atoi(argv[i + 1]);
    if (flag == "--cache-dir")
      cache_dir = argv[i + 1];
  }
  isletune::cuda::Channel channel(0, 1);
  isletune::cuda::Worker worker(channel, cache_dir, threads);
  if (!worker.start(device))
    return 0;
  worker.serve();
  return 0;
}
