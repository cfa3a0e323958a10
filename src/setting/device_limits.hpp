// What the space and the predictors need to know about the GPU, as a plain value.
// The CUDA evaluator fills it from cudaGetDeviceProperties; replay reads it from the
// dataset; tests make their own. Defaults are an H100 SXM5 80 GB.
#pragma once

#include <array>
#include <string>

namespace isletune {

struct DeviceLimits {
  std::string name = "NVIDIA H100 80GB HBM3";
  int sm_count = 132;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  std::array<int, 3> max_block_dim{1024, 1024, 64};                   // threads per axis
  std::array<long long, 3> max_grid_dim{2147483647LL, 65535, 65535};  // blocks per axis
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  int max_registers_per_thread = 255;
  int shared_per_block = 49152;         // without opt-in
  int shared_per_block_optin = 232448;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int shared_per_sm = 233472;
  int l2_bytes = 52428800;
  int compute_major = 9;
  int compute_minor = 0;
  double memory_bandwidth_gbs = 3000.0;  // achievable copy bandwidth, read + write
  double fp64_gflops = 33500.0;          // FP64 vector peak (FMA = 2 flops)
};

}  // namespace isletune
