// CUDA runtime wrappers of isletune-worker: error checks, RAII owners, launches and the
// step schedule of the kernel ABI.
#include "eval/cuda/worker_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "kernel/launch_schedule.hpp"

namespace isletune::cuda {
namespace {

// The file name without its directories, for messages.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

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

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

CudaError::CudaError(cudaError_t code, const char* call, const char* file, int line)
    : std::runtime_error(error_text(code) + " from " + call + " at " + base_name(file) + ":" +
                         std::to_string(line)),
      code_(code) {}

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess)
    return;
  if (!is_sticky(e))
    cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  throw CudaError(e, call, file, line);
}

void check_nothrow(cudaError_t e, const char* call, const char* file, int line) noexcept {
  if (e == cudaSuccess)
    return;
  std::fprintf(stderr, "isletune-worker: %s from %s at %s:%d\n", error_text(e).c_str(), call,
               base_name(file), line);
}

DeviceBuffer::DeviceBuffer(std::size_t count) : bytes_(count * sizeof(double)) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes_));
  p_ = static_cast<double*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  if (p_)
    CUDA_CHECK_NOTHROW(cudaFree(p_));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_)
      CUDA_CHECK_NOTHROW(cudaFree(p_));
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

Event::Event() {
  CUDA_CHECK(cudaEventCreate(&e_));
}
Event::~Event() {
  CUDA_CHECK_NOTHROW(cudaEventDestroy(e_));
}

Stream::Stream() {
  CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  CUDA_CHECK_NOTHROW(cudaStreamDestroy(s_));
}

Library::Library(const std::string& cubin) {
  CUDA_CHECK(cudaLibraryLoadData(&lib_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
}

Library::~Library() {
  CUDA_CHECK_NOTHROW(cudaLibraryUnload(lib_));
}

const void* Library::kernel(const std::string& name) const {
  cudaKernel_t k = nullptr;
  CUDA_CHECK(cudaLibraryGetKernel(&k, lib_, name.c_str()));
  return reinterpret_cast<const void*>(k);
}

Launch linear_launch(long long blocks) {
  Launch l;
  l.block = dim3(256);
  l.grid = dim3(static_cast<unsigned>(blocks));
  return l;
}

void launch(cudaStream_t stream, const void* fn, const Launch& l, void** args) {
  CUDA_CHECK(cudaLaunchKernel(fn, l.grid, l.block, args, l.shared_bytes, stream));
}

void enqueue_steps(cudaStream_t stream, const Schedule& s, long long steps, PingPong buffers,
                   const double*& src, double*& dst) {
  const IslLaunchSchedule plan = isl_launch_schedule(steps, s.main.steps);
  for (long long i = 0; i < plan.main_launches + plan.tail_launches; ++i) {
    const Entry& k = i < plan.main_launches ? s.main : s.tail;
    void* args[] = {&src, &dst};
    launch(stream, k.fn, k.launch, args);
    src = dst;
    dst = dst == buffers.a ? buffers.b : buffers.a;
  }
}

std::optional<std::string> prepare_entry(Entry& entry, const LaunchConfig& config,
                                         const DeviceLimits& caps, EntryInfo& info) {
  entry.steps = std::max(1, config.steps);
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, entry.fn));
  info.registers = attr.numRegs;
  info.shared_bytes = static_cast<long long>(attr.sharedSizeBytes) + config.shared_bytes;
  info.local_bytes = static_cast<long long>(attr.localSizeBytes);
  for (int d = 0; d < 3; ++d) {
    const std::string axis(1, "xyz"[d]);
    if (config.block[d] < 1 || config.block[d] > caps.max_block_dim[d]) {
      return "block " + axis + " = " + std::to_string(config.block[d]) +
             " is outside the device's limit of " + std::to_string(caps.max_block_dim[d]);
    }
    if (config.grid[d] < 1 || config.grid[d] > caps.max_grid_dim[d]) {
      return "grid " + axis + " = " + std::to_string(config.grid[d]) +
             " is outside the device's limit of " + std::to_string(caps.max_grid_dim[d]);
    }
  }
  const long long threads = 1LL * config.block[0] * config.block[1] * config.block[2];
  if (threads > attr.maxThreadsPerBlock) {
    return "a block of " + std::to_string(threads) + " threads exceeds the kernel's limit of " +
           std::to_string(attr.maxThreadsPerBlock) + " (" + std::to_string(attr.numRegs) +
           " registers per thread)";
  }
  entry.launch.block =
      dim3(static_cast<unsigned>(config.block[0]), static_cast<unsigned>(config.block[1]),
           static_cast<unsigned>(config.block[2]));
  entry.launch.grid =
      dim3(static_cast<unsigned>(config.grid[0]), static_cast<unsigned>(config.grid[1]),
           static_cast<unsigned>(config.grid[2]));
  entry.launch.shared_bytes = static_cast<std::size_t>(std::max(0, config.shared_bytes));
  try {
    CUDA_CHECK(cudaFuncSetAttribute(entry.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    config.shared_bytes));
  } catch (const CudaError& e) {
    if (e.sticky())
      throw;
    return std::to_string(config.shared_bytes) +
           " B of dynamic shared memory rejected: " + error_text(e.code());
  }
  int blocks_per_sm = 0;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks_per_sm, entry.fn, static_cast<int>(threads), entry.launch.shared_bytes);
  if (is_sticky(e))
    check(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", __FILE__, __LINE__);
  if (e != cudaSuccess || blocks_per_sm == 0) {
    cudaGetLastError();
    return "the kernel cannot be resident on an SM (" + std::to_string(attr.numRegs) +
           " registers, " + std::to_string(config.shared_bytes) + " B dynamic shared" +
           (e != cudaSuccess ? ", " + error_text(e) : std::string()) + ")";
  }
  info.occupancy = static_cast<double>(blocks_per_sm * threads) / caps.max_threads_per_sm;
  return std::nullopt;
}

double measure_copy_bandwidth(cudaStream_t stream) {
  std::size_t bytes = 1ULL << 30;
  std::size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  while (bytes > (1u << 20) && 2 * bytes > free_b / 2)
    bytes /= 2;
  try {
    const DeviceBuffer a(bytes / sizeof(double)), b(bytes / sizeof(double));
    CUDA_CHECK(cudaMemsetAsync(a.get(), 1, a.bytes(), stream));
    const Event e0, e1;
    std::vector<float> t;
    for (int i = 0; i < 7; ++i) {
      CUDA_CHECK(cudaEventRecord(e0.get(), stream));
      CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), a.bytes(), cudaMemcpyDeviceToDevice, stream));
      CUDA_CHECK(cudaEventRecord(e1.get(), stream));
      CUDA_CHECK(cudaEventSynchronize(e1.get()));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
      if (i > 0)
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    const double ms = t[t.size() / 2];
    return ms > 0 ? 2.0 * static_cast<double>(a.bytes()) / (ms * 1e-3) / 1e9 : 0;
  } catch (const CudaError& e) {
    if (e.sticky())
      throw;
    return 0;  // too little memory for the copy: no figure
  }
}

}  // namespace isletune::cuda
