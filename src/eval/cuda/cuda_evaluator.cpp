// Parent side of the CUDA evaluator: codegen, worker process management (posix_spawn,
// socket pair, watchdog, restart) and decoding of the worker's results.
#include "eval/cuda/cuda_evaluator.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <optional>
#include <sstream>

#include "common/error.hpp"

namespace isletune::cuda {
namespace {

// Decodes a worker "result" message.
Measurement decode_result(const Message& r) {
  Measurement m;
  m.status = status_from_name(r.get("status")).value_or(Status::crashed);
  m.median_ms = r.number("median_ms", m.median_ms);
  std::istringstream times(r.get("times_ms"));
  for (double t; times >> t;)
    m.times_ms.push_back(t);
  m.compile_ms = r.number("compile_ms") + r.number("load_ms");
  m.verify_ms = r.number("verify_ms");
  m.run_ms = r.number("run_ms");
  m.registers = static_cast<int>(r.number("registers"));
  m.shared_bytes = static_cast<int>(r.number("shared_bytes"));
  m.occupancy = r.number("occupancy");
  m.error_l2 = r.number("error_l2", m.error_l2);
  m.error_max = r.number("error_max", m.error_max);
  m.message = r.get("message");
  if (m.message.size() > 4000)
    m.message = m.message.substr(0, 4000) + " ...";
  return m;
}

// Seconds for messages: "120", "0.5".
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

Measurement failure(Status s, std::string message) {
  Measurement m;
  m.status = s;
  m.message = std::move(message);
  return m;
}

// Describes how a child ended, for messages.
std::string exit_text(int status) {
  if (WIFEXITED(status))
    return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status));
  return "unknown status";
}

}  // namespace

std::string default_worker_path() {
  if (const char* w = std::getenv("ISLETUNE_WORKER"); w && *w)
    return w;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return "isletune-worker";
  return (exe.parent_path() / "isletune-worker").string();
}

CudaEvaluator::CudaEvaluator(Problem problem, CudaOptions options)
    : problem_(std::move(problem)),
      options_(std::move(options)),
      started_(std::chrono::steady_clock::now()) {
  worker_path_ = options_.worker_path.empty() ? default_worker_path() : options_.worker_path;
  if (const char* plant = std::getenv("ISLETUNE_PLANT_FAULTS"); plant && *plant)
    planted_ = parse_planted_faults(plant);
  start_worker();
}

CudaEvaluator::~CudaEvaluator() {
  if (process_.running() && channel_)
    channel_->send(Message{"quit", {}});
  stop_worker(false);
}

std::string CudaEvaluator::detail() const {
  if (environment_.compile_cpus.empty())
    return {};
  return "NVRTC " + std::to_string(environment_.compile_threads) + " threads on CPUs " +
         environment_.compile_cpus;
}

double CudaEvaluator::clock_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void CudaEvaluator::stop_worker(bool kill) {
  channel_.reset();
  process_.stop(kill);
}

void CudaEvaluator::start_worker() {
  std::vector<std::string> words{
      worker_path_,
      "--device",
      std::to_string(options_.device),
      "--compile-threads",
      std::to_string(options_.compile_threads),
      "--node-share",
      std::to_string(options_.node_share.rank) + "/" + std::to_string(options_.node_share.ranks)};
  if (!options_.cache_dir.empty()) {
    words.push_back("--cache-dir");
    words.push_back(options_.cache_dir);
  }
  process_ = WorkerProcess(words);
  channel_ = std::make_unique<Channel>(process_.fd(), process_.fd());

  Message hello;
  const auto got = channel_->receive(hello, 120);
  if (got != Channel::Read::ok || (hello.kind != "hello" && hello.kind != "nodevice")) {
    channel_.reset();
    const int status = process_.stop(got != Channel::Read::ok);
    throw InputError(
        "the CUDA backend's worker '" + worker_path_ + "' ended before reporting a GPU (" +
        exit_text(status) +
        "): the NVIDIA driver or the CUDA libraries (libnvrtc) are missing on this machine");
  }
  if (hello.kind == "nodevice") {
    stop_worker(false);
    throw InputError("the CUDA backend needs an NVIDIA GPU with a working driver, but " +
                     hello.get("message") + "; use --backend replay on this machine");
  }
  DeviceLimits d;
  get_limits(hello, d);
  const double bw = hello.number("copy_bandwidth_gbs", 0);
  limits_ = d;
  environment_.name = d.name;
  environment_.uuid = hello.get("uuid");
  environment_.device = static_cast<int>(hello.number("device"));
  environment_.compile_cpus = hello.get("compile_cpus");
  environment_.compile_threads = static_cast<int>(hello.number("compile_threads", 0));
  environment_.driver_version = static_cast<int>(hello.number("driver_version"));
  environment_.runtime_version = static_cast<int>(hello.number("runtime_version"));
  environment_.nvrtc_version = hello.get("nvrtc_version");
  environment_.sm_clock_mhz = static_cast<int>(hello.number("sm_clock_mhz"));
  environment_.mem_clock_mhz = static_cast<int>(hello.number("mem_clock_mhz"));
  environment_.global_mem_bytes = static_cast<long long>(hello.number("global_mem_bytes"));
  environment_.copy_bandwidth_gbs = bw;

  Message p{"problem", {}};
  p.set("nx", problem_.grid.nx).set("ny", problem_.grid.ny).set("nz", problem_.grid.nz);
  p.set("steps", problem_.steps).set("short_steps", 7).set("warmup", problem_.warmup);
  p.set("repeats", problem_.repeats).set("min_rep_ms", options_.min_rep_ms);
  p.set("compile_timeout_s", options_.compile_timeout_s).set("slow_factor", options_.slow_factor);
  p.set("full_verification", options_.full_verification ? 1 : 0);
  p.set("reference", generate_reference(problem_.stencil, problem_.grid));
  Message ready;
  if (!channel_->send(p) ||
      channel_->receive(ready, options_.setup_timeout_s) != Channel::Read::ok) {
    stop_worker(true);
    throw InputError("the CUDA worker died while setting up the problem " +
                     problem_.stencil.name() + " on the GPU");
  }
  if (ready.kind != "ready") {
    stop_worker(true);
    throw InputError("the CUDA backend cannot run stencil " + problem_.stencil.name() +
                     " on grid " + std::to_string(problem_.grid.nx) + "x" +
                     std::to_string(problem_.grid.ny) + "x" + std::to_string(problem_.grid.nz) +
                     ": " + ready.get("message"));
  }
}

std::string CudaEvaluator::source(const Setting& s) const {
  const auto plan = codegen_plan(problem_.stencil, problem_.grid, s, limits_);
  if (!std::holds_alternative<KernelPlan>(plan))
    return {};
  return generate_kernel(problem_.stencil, problem_.grid, s, std::get<KernelPlan>(plan)).source;
}

std::vector<Measurement> CudaEvaluator::evaluate(std::span<const Setting> batch) {
  std::vector<Measurement> out(batch.size());
  std::vector<KernelSource> kernels;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    // The plan is built once here and handed to codegen.
    const auto plan = codegen_plan(problem_.stencil, problem_.grid, batch[i], limits_);
    if (const auto* why = std::get_if<std::string>(&plan)) {
      out[i] = failure(Status::invalid, *why);
      continue;
    }
    kernels.push_back(
        generate_kernel(problem_.stencil, problem_.grid, batch[i], std::get<KernelPlan>(plan)));
    where.push_back(i);
    if (const auto fault = planted_fault(batch[i]))
      kernels.back() = planted_kernel(*fault, kernels.back());
  }
  std::vector<Measurement> measured = run_batch(kernels);
  for (std::size_t j = 0; j < where.size(); ++j) {
    if (kernels[j].entry == "isl_planted")
      measured[j].message = "planted fault (ISLETUNE_PLANT_FAULTS): " + measured[j].message;
    out[where[j]] = std::move(measured[j]);
  }
  return out;
}

std::map<long long, PlantedFault> parse_planted_faults(const std::string& text) {
  const std::string expected =
      "ISLETUNE_PLANT_FAULTS: expected FAULT=N[,FAULT=N...] with FAULT one of crash, trap, "
      "hang, launch, slow and N a setting ordinal >= 1, got '" +
      text.substr(0, 200) + "'";
  std::map<long long, PlantedFault> out;
  if (text.empty() || text.back() == ',')
    throw InputError(expected);
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(expected);
    const std::string name = item.substr(0, eq);
    const std::string number = item.substr(eq + 1);
    char* end = nullptr;
    const long long n = std::strtoll(number.c_str(), &end, 10);
    if (number.empty() || *end != '\0' || n < 1)
      throw InputError(expected);
    if (name == "crash")
      out[n] = PlantedFault::crash;
    else if (name == "trap")
      out[n] = PlantedFault::trap;
    else if (name == "hang")
      out[n] = PlantedFault::hang;
    else if (name == "launch")
      out[n] = PlantedFault::launch;
    else if (name == "slow")
      out[n] = PlantedFault::slow;
    else
      throw InputError(expected);
  }
  if (out.empty())
    throw InputError(expected);
  return out;
}

KernelSource planted_kernel(PlantedFault fault, const KernelSource& real) {
  KernelSource k;
  k.entry = "isl_planted";
  k.launch = real.launch;
  k.launch.steps = 1;
  std::string body;
  switch (fault) {
    case PlantedFault::crash:  // an illegal address: sticky, the worker exits
      body = "out[(1LL << 40) + threadIdx.x] = in[0];";
      break;
    case PlantedFault::trap:
      body = "if (threadIdx.x == 0) __trap();\n  out[0] = in[0];";
      break;
    case PlantedFault::hang:  // the watchdog ends the worker
      body = "for (;;) __nanosleep(1000);";
      break;
    case PlantedFault::launch:  // more dynamic shared memory than any GPU has
      body = "out[0] = in[0];";
      k.launch.shared_bytes = 1 << 30;
      break;
    case PlantedFault::slow:  // 1 s per launch, output unwritten: the probe's timeout
      body =
          "if (blockIdx.x + blockIdx.y + blockIdx.z + threadIdx.x + threadIdx.y + threadIdx.z "
          "== 0) {\n"
          "    unsigned long long t0, t;\n"
          "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
          "    do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); }\n"
          "    while (t - t0 < 1000000000ULL);\n"
          "  }";
      break;
  }
  k.source = "extern \"C\" __global__ void isl_planted(const double* in, double* out) {\n  " +
             body + "\n}\n";
  return k;
}

std::optional<PlantedFault> CudaEvaluator::planted_fault(const Setting& s) {
  if (planted_.empty())
    return std::nullopt;
  const auto [it, added] =
      seen_.emplace(canonical_key(s), static_cast<long long>(seen_.size()) + 1);
  const auto fault = planted_.find(it->second);
  if (fault == planted_.end())
    return std::nullopt;
  return fault->second;
}

std::vector<Measurement> CudaEvaluator::evaluate_raw(std::span<const KernelSource> kernels) {
  return run_batch(kernels);
}

std::vector<Measurement> CudaEvaluator::run_batch(std::span<const KernelSource> kernels) {
  const std::size_t n = kernels.size();
  std::vector<Measurement> results(n);
  // The kernels without a result yet; the worker's batch holds them in this order (its
  // "index" is a place in this list) and answers them in the order their compiles end.
  std::vector<std::size_t> pending(n);
  std::iota(pending.begin(), pending.end(), std::size_t{0});
  int failed_starts = 0;
  while (!pending.empty()) {
    if (!process_.running()) {
      start_worker();
      ++restarts_;
    }
    const std::size_t m = pending.size();
    Message b{"batch", {}};
    b.set("count", static_cast<long long>(m));
    b.set("seed",
          static_cast<long long>((options_.seed * 1000003ULL + ++batches_) & 0x7fffffffffffLL));
    for (std::size_t k = 0; k < m; ++k) {
      const std::string id = std::to_string(k);
      const KernelSource& src = kernels[pending[k]];
      b.set("source" + id, src.source).set("entry" + id, src.entry);
      b.set("launch" + id, launch_text(src.launch));
      if (!src.tail_entry.empty())
        b.set("tail_entry" + id, src.tail_entry)
            .set("tail_launch" + id, launch_text(src.tail_launch));
    }
    Message reply;
    const bool sent = channel_->send(b);
    const auto got =
        sent ? channel_->receive(reply, options_.setup_timeout_s) : Channel::Read::closed;
    if (got != Channel::Read::ok || reply.kind != "reference") {
      // The batch never reached evaluation: blame nothing yet, retry once on a fresh worker.
      const std::string why = got == Channel::Read::timeout
                                  ? "timed out preparing the batch's reference run"
                              : reply.kind == "error" ? reply.get("message")
                                                      : "the worker died before evaluating";
      stop_worker(true);
      if (++failed_starts >= 2) {
        for (const std::size_t i : pending) {
          results[i] =
              failure(got == Channel::Read::timeout ? Status::timeout : Status::crashed, why);
        }
        break;
      }
      continue;
    }
    std::vector<bool> answered(m, false);
    // The place of a result's or "running" message's index, or nullopt when it names no
    // unanswered kernel of this batch.
    const auto place = [&](const Message& r) -> std::optional<std::size_t> {
      const double index = r.number("index", -1);
      if (index < 0 || index >= static_cast<double>(m) || answered[static_cast<std::size_t>(index)])
        return std::nullopt;
      return static_cast<std::size_t>(index);
    };
    bool broken = false;
    for (std::size_t received = 0; received < m && !broken;) {
      // A kernel may first wait for its compile (bounded by compile_timeout_s in the worker);
      // once the worker says "running", that kernel has timeout_s on the GPU.
      Message r;
      double wait_s = options_.timeout_s + options_.compile_timeout_s;
      std::optional<std::size_t> running;
      auto status = channel_->receive(r, wait_s);
      if (status == Channel::Read::ok && r.kind == "running") {
        running = place(r);
        wait_s = options_.timeout_s;
        status = channel_->receive(r, wait_s);
      }
      if (status == Channel::Read::ok && r.kind == "result") {
        if (const auto k = place(r)) {
          results[pending[*k]] = decode_result(r);
          answered[*k] = true;
          ++received;
          broken = results[pending[*k]].status == Status::crashed;  // the worker is exiting
          continue;
        }
      }
      // No result: the kernel the worker said it was running is to blame, else (it ended or
      // went silent between kernels) the first unanswered one, as a worker answering in batch
      // order would have been running it.
      const std::size_t k = running.value_or(static_cast<std::size_t>(
          std::find(answered.begin(), answered.end(), false) - answered.begin()));
      results[pending[k]] =
          status == Channel::Read::timeout
              ? failure(Status::timeout, "no result within " + seconds_text(wait_s) +
                                             " s: the watchdog ended the worker")
          : status == Channel::Read::ok
              ? failure(Status::crashed,
                        "the worker answered with a message that names no "
                        "kernel of the batch: " +
                            r.kind)
              : failure(Status::crashed, "the worker died while running this kernel");
      answered[k] = true;
      broken = true;
    }
    std::vector<std::size_t> rest;
    for (std::size_t k = 0; k < m; ++k) {
      if (!answered[k])
        rest.push_back(pending[k]);
    }
    pending = std::move(rest);
    if (broken) {
      stop_worker(true);
      continue;
    }
    // "done" closes the batch; restart = 1: a compile is stuck and the worker is exiting.
    Message done;
    if (channel_->receive(done, options_.timeout_s) != Channel::Read::ok || done.kind != "done" ||
        done.number("restart") != 0)
      stop_worker(true);
  }
  return results;
}

}  // namespace isletune::cuda
