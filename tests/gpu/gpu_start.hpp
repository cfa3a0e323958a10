// Shared by the GPU tests: start a CUDA evaluator or, when it cannot start, decide whether
// the machine has no usable GPU (then the test reports itself skipped with the reason) or
// has one (then the failure to start fails the test: a worker that dies at problem setup
// on a GPU machine must not read as SKIPPED).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "eval/cuda/cuda_evaluator.hpp"

namespace isletune::cuda::gpu_test {

// A started evaluator, or the sentence explaining why there is none.
struct Started {
  std::unique_ptr<CudaEvaluator> evaluator;
  std::string why;
};

// The evaluator of `problem` with the test worker, or the backend's reason it cannot start.
// The worker is the one built beside the test, unless ISLETUNE_WORKER names another (a test
// binary copied to a GPU machine without its build tree, as the product honours it).
inline Started start_evaluator(const Problem& problem, CudaOptions options) {
  options.worker_path = worker_path_or(ISLETUNE_WORKER_PATH);
  try {
    return {std::make_unique<CudaEvaluator>(problem, options), {}};
  } catch (const InputError& e) {
    return {nullptr, e.what()};
  }
}

// Why this machine has no usable NVIDIA GPU, asked of the driver itself: no driver library
// (libcuda.so.1), CUDA_VISIBLE_DEVICES hiding every device, cuInit finding no device, or no
// device counted; "" when there is a GPU (any other cuInit failure is a broken driver on a
// GPU machine, not an absent GPU).
inline std::string no_usable_gpu() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible != nullptr && (std::string(visible).empty() || std::string(visible) == "-1")) {
    return "CUDA_VISIBLE_DEVICES='" + std::string(visible) + "' hides every device";
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr)
    return "no NVIDIA driver (libcuda.so.1 cannot be loaded)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  std::string why;
  constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
  int devices = 0;
  if (init == nullptr || count == nullptr) {
    why = "libcuda.so.1 has no cuInit/cuDeviceGetCount";
  } else if (const int r = init(0); r == kNoDevice) {
    why = "the NVIDIA driver finds no CUDA device";
  } else if (r == 0 && count(&devices) == 0 && devices == 0) {
    why = "the NVIDIA driver counts no CUDA device";
  }
  dlclose(driver);
  return why;
}

}  // namespace isletune::cuda::gpu_test

// Continues with `started.evaluator` when it started; otherwise skips the test without a
// usable GPU (both reasons) and fails it on a GPU machine (the evaluator's reason).
#define SKIP_WITHOUT_GPU_ELSE_FAIL(started)                                                      \
  if (!(started).evaluator) {                                                                    \
    if (const std::string no_gpu = ::isletune::cuda::gpu_test::no_usable_gpu(); !no_gpu.empty()) \
      GTEST_SKIP() << no_gpu << " (" << (started).why << ")";                                    \
    FAIL() << "a GPU is present but the CUDA evaluator did not start: " << (started).why;        \
  }

// Binds `var` to a started evaluator (arguments go to the test file's own start()), or
// SKIP_WITHOUT_GPU_ELSE_FAIL.
#define START_OR_SKIP(var, ...)             \
  auto var##_started = start(__VA_ARGS__);  \
  SKIP_WITHOUT_GPU_ELSE_FAIL(var##_started) \
  CudaEvaluator& var = *var##_started.evaluator
