// The device layer of isletune-worker: one throwing error path (CUDA_CHECK names the call,
// file and line), a no-throw variant for destructors, RAII owners of device buffers, events,
// the stream and loaded libraries, and the launches of the kernel ABI's schedule
// (kernel/launch_schedule.hpp: main launches, then one-step tail launches, the two buffers
// swapped after every launch).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "eval/cuda/codegen.hpp"
#include "setting/device_limits.hpp"

namespace isletune::cuda {

// Whether the context is unusable after this error (the worker must end).
[[nodiscard]] bool is_sticky(cudaError_t e);
// "cudaErrorName (description)".
[[nodiscard]] std::string error_text(cudaError_t e);

// A failed CUDA runtime call: the error, the call, where it was made.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const char* call, const char* file, int line);
  [[nodiscard]] cudaError_t code() const { return code_; }
  [[nodiscard]] bool sticky() const { return is_sticky(code_); }

 private:
  cudaError_t code_;
};

// Throws CudaError unless e is cudaSuccess (a non-sticky error is cleared first).
void check(cudaError_t e, const char* call, const char* file, int line);
// For destructors and cleanup: a failure is written to stderr, nothing is thrown.
void check_nothrow(cudaError_t e, const char* call, const char* file, int line) noexcept;

#define CUDA_CHECK(call) ::isletune::cuda::check((call), #call, __FILE__, __LINE__)
#define CUDA_CHECK_NOTHROW(call) ::isletune::cuda::check_nothrow((call), #call, __FILE__, __LINE__)

// `count` doubles of device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] double* get() const { return p_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  double* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// A CUDA event (timing enabled).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  [[nodiscard]] cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// A non-blocking stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// A loaded cubin (cudaLibrary); its kernels double as runtime-API function handles.
class Library {
 public:
  explicit Library(const std::string& cubin);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  // The entry `name`; throws CudaError when the module has none.
  [[nodiscard]] const void* kernel(const std::string& name) const;

 private:
  cudaLibrary_t lib_ = nullptr;
};

// Geometry of one launch.
struct Launch {
  dim3 block{1, 1, 1};
  dim3 grid{1, 1, 1};
  std::size_t shared_bytes = 0;
};

// A 1-D launch of `blocks` blocks of 256 threads (the reference module's kernels).
[[nodiscard]] Launch linear_launch(long long blocks);

// Enqueues fn on the stream with the kernel arguments `args`; throws CudaError.
void launch(cudaStream_t stream, const void* fn, const Launch& l, void** args);

// One loaded entry, how it is launched and how many steps one launch advances.
struct Entry {
  const void* fn = nullptr;
  Launch launch;
  int steps = 1;
};

// The ABI's schedule: `main`, and `tail` (fn == nullptr when main.steps == 1).
struct Schedule {
  Entry main;
  Entry tail;
};

// The two ping-pong buffers a run writes.
struct PingPong {
  double* a = nullptr;
  double* b = nullptr;
};

// Enqueues `steps` time steps: steps / main.steps main launches, then steps % main.steps tail
// launches. Each launch reads src and writes dst (a or b); then src becomes the buffer just
// written and dst the other one of the pair, so src ends on the result and the first input
// (which may lie outside the pair) is only read.
void enqueue_steps(cudaStream_t stream, const Schedule& s, long long steps, PingPong buffers,
                   const double*& src, double*& dst);

// What the runtime says about one entry prepared for its launch.
struct EntryInfo {
  int registers = 0;
  long long shared_bytes = 0;  // static + dynamic
  long long local_bytes = 0;
  double occupancy = 0;  // resident threads / max threads per SM
};

// Prepares `entry` (fn loaded) to launch as `config`: checks the block and grid against the
// device and the kernel's thread limit, sets its maximum dynamic shared memory to
// config.shared_bytes, checks that a block can be resident. Returns why it cannot launch
// (a sentence), or nullopt with `info` filled. Throws CudaError on a sticky error.
[[nodiscard]] std::optional<std::string> prepare_entry(Entry& entry, const LaunchConfig& config,
                                                       const DeviceLimits& caps, EntryInfo& info);

// Device-to-device copy of up to 1 GiB on the stream: GB/s of read + write (0 if no memory).
[[nodiscard]] double measure_copy_bandwidth(cudaStream_t stream);

}  // namespace isletune::cuda
