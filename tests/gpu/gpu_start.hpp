// Shared by the GPU tests: start a CUDA evaluator, or learn why there is no GPU, and skip the
// test with that reason (a GPU test that cannot run reports itself skipped, never passed).
#pragma once

#include <gtest/gtest.h>

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
inline Started start_evaluator(const Problem& problem, CudaOptions options) {
  options.worker_path = ISLETUNE_WORKER_PATH;
  try {
    return {std::make_unique<CudaEvaluator>(problem, options), {}};
  } catch (const InputError& e) {
    return {nullptr, e.what()};
  }
}

}  // namespace isletune::cuda::gpu_test

// Binds `var` to a started evaluator (arguments go to the test file's own start()), or skips.
#define START_OR_SKIP(var, ...)            \
  auto var##_started = start(__VA_ARGS__); \
  if (!var##_started.evaluator)            \
    GTEST_SKIP() << var##_started.why;     \
  CudaEvaluator& var = *var##_started.evaluator
