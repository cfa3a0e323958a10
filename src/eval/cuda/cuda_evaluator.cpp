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

std::string worker_path_or(const std::string& fallback) {
  if (const char* w = std::getenv("ISLETUNE_WORKER"); w && *w)
    return w;
  return fallback;
}

std::string default_worker_path() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return worker_path_or(ec ? "isletune-worker" : (exe.parent_path() / "isletune-worker").string());
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
  std::vector<std::string> words{worker_path_,
                                 "--device",
                                 std::to_string(options_.device),
                                 "--compile-threads",
                                 std::to_string(options_.compile_threads),
                                 "--node-share",
                                 node_share_text(options_.node_share)};
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
  p.set("race_factor", options_.race_factor).set("settle_spread", options_.settle_spread);
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
  // The queue: the inputs of this worker's seed and their references, then every kernel owed.
  Message stream{"stream", {}};
  stream.set("seed",
             static_cast<long long>((options_.seed * 1000003ULL + ++streams_) & 0x7fffffffffffLL));
  Message streaming;
  if (!channel_->send(stream) ||
      channel_->receive(streaming, options_.setup_timeout_s) != Channel::Read::ok ||
      streaming.kind != "streaming") {
    const std::string why =
        streaming.kind == "error" ? streaming.get("message") : "the worker died";
    stop_worker(true);
    throw InputError("the CUDA worker could not prepare the reference run of " +
                     problem_.stencil.name() + ": " + why);
  }
  running_.reset();
  for (const auto& [ticket, owed] : owed_)
    send_kernel(ticket, owed.kernel);
}

void CudaEvaluator::send_kernel(Ticket ticket, const KernelSource& k) {
  Message m{"submit", {}};
  m.set("ticket", static_cast<long long>(ticket));
  m.set("source", k.source).set("entry", k.entry).set("launch", launch_text(k.launch));
  if (!k.tail_entry.empty())
    m.set("tail_entry", k.tail_entry).set("tail_launch", launch_text(k.tail_launch));
  channel_->send(m);  // a dead worker is found (and restarted) by wait_one
}

void CudaEvaluator::enqueue_kernel(Ticket ticket, KernelSource kernel) {
  if (!process_.running()) {
    start_worker();
    ++restarts_;
  }
  send_kernel(ticket, kernel);
  owed_.emplace(ticket, Owed{std::move(kernel), clock_s()});
}

std::string CudaEvaluator::source(const Setting& s) const {
  const auto plan = codegen_plan(problem_.stencil, problem_.grid, s, limits_);
  if (!std::holds_alternative<KernelPlan>(plan))
    return {};
  return generate_kernel(problem_.stencil, problem_.grid, s, std::get<KernelPlan>(plan)).source;
}

void CudaEvaluator::enqueue(Ticket ticket, const Setting& s) {
  // The plan is built once here and handed to codegen.
  const auto plan = codegen_plan(problem_.stencil, problem_.grid, s, limits_);
  if (const auto* why = std::get_if<std::string>(&plan)) {
    const double now = clock_s();
    ready_.push_back({ticket, failure(Status::invalid, *why), {now, {}, now}});
    return;
  }
  KernelSource kernel =
      generate_kernel(problem_.stencil, problem_.grid, s, std::get<KernelPlan>(plan));
  if (const auto fault = planted_fault(s))
    kernel = planted_kernel(*fault, kernel);
  enqueue_kernel(ticket, std::move(kernel));
}

Completion CudaEvaluator::wait_one() {
  if (!ready_.empty()) {
    Completion c = std::move(ready_.front());
    ready_.pop_front();
    return c;
  }
  for (;;) {
    if (!process_.running()) {
      start_worker();
      ++restarts_;
    }
    // A kernel on the GPU has timeout_s; one compiling, its compile bound (enforced by the
    // worker) besides.
    const double wait_s =
        running_ ? options_.timeout_s : options_.timeout_s + options_.compile_timeout_s;
    Message r;
    const auto got = channel_->receive(r, wait_s);
    const auto owed = got == Channel::Read::ok
                          ? owed_.find(static_cast<Ticket>(r.number("ticket", -1e18)))
                          : owed_.end();
    // The worker's times (the machine's monotonic clock) on this evaluator's clock.
    const auto worker_time = [&](const char* key) {
      const double started = std::chrono::duration<double>(started_.time_since_epoch()).count();
      return r.has(key) ? r.number(key) - started : clock_s();
    };
    if (owed != owed_.end() && r.kind == "running") {
      running_ = owed->first;
      running_since_ = worker_time("start_s");
      continue;
    }
    if (owed != owed_.end() && r.kind == "result") {
      Completion c{
          owed->first, decode_result(r), {owed->second.submit_s, {}, worker_time("finish_s")}};
      if (running_ == owed->first)
        c.timeline.start_s = running_since_;
      if (owed->second.kernel.entry == "isl_planted")
        c.measurement.message = "planted fault (ISLETUNE_PLANT_FAULTS): " + c.measurement.message;
      owed_.erase(owed);
      running_.reset();
      silent_failures_ = 0;
      if (c.measurement.status == Status::crashed)
        stop_worker(true);  // it is exiting; the next call starts a fresh one
      return c;
    }
    if (got == Channel::Read::ok && r.kind != "error")
      continue;  // a message of a kernel no longer owed
    // No result: the kernel the worker said it was running is to blame; with none running
    // (it died or stalled between kernels), a fresh worker gets everything owed, and the
    // oldest kernel is blamed only when that happens twice in a row.
    stop_worker(true);
    std::optional<Ticket> blamed = running_;
    if (!blamed && ++silent_failures_ >= 2 && !owed_.empty()) {
      blamed = owed_.begin()->first;
      silent_failures_ = 0;
    }
    running_.reset();
    if (!blamed || !owed_.count(*blamed))
      continue;
    const auto it = owed_.find(*blamed);
    const std::string why = r.kind == "error" ? r.get("message") : "";
    Completion c{
        it->first,
        got == Channel::Read::timeout
            ? failure(Status::timeout, "no result within " + seconds_text(wait_s) +
                                           " s: the watchdog ended the worker")
            : failure(Status::crashed, why.empty() ? "the worker died while running this kernel"
                                                   : "the worker failed: " + why),
        {it->second.submit_s, running_since_, clock_s()}};
    owed_.erase(it);
    return c;
  }
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
  if (outstanding() > 0)
    throw std::logic_error("CudaEvaluator::evaluate_raw with settings queued");
  // Raw kernels under tickets of their own (negative), answered before any setting's.
  std::vector<Measurement> out(kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i)
    enqueue_kernel(-1 - static_cast<Ticket>(i), kernels[i]);
  for (std::size_t left = kernels.size(); left > 0; --left) {
    Completion c = wait_one();
    out[static_cast<std::size_t>(-1 - c.ticket)] = std::move(c.measurement);
  }
  return out;
}

}  // namespace isletune::cuda
