// What the space and the predictors need to know about the GPU, as a plain value.
// The CUDA worker fills it from cudaGetDeviceProperties and sends it in its hello; replay
// reads it from the dataset; tests make their own. Defaults are an H100 SXM5 80 GB.
// for_each_field is the one field list: the worker hello, its parsing, the trace writer and
// reader all walk it, so a new field needs no other edit there.
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
  // FP64 tensor-core (DMMA) peak: 66.9 TFLOP/s on the H100 SXM5 and the H200 (NVIDIA's
  // datasheets); measured on both, m16n8k16 sustains 64.4 and m16n8k4 57.6
  // (docs/studies/2026-11-28-dmma-prototype.md). The tensor-core family's compute roof.
  double fp64_tensor_gflops = 66900.0;
};

// Calls f(name, field) for every field of d in declaration order (d const or not); the names
// are the keys of the worker hello and the attributes of the trace's device_limits group.
// Field types: std::string, int, double, std::array<int, 3>, std::array<long long, 3>.
template <class Limits, class F>
void for_each_field(Limits& d, F&& f) {
  f("name", d.name);
  f("sm_count", d.sm_count);
  f("warp_size", d.warp_size);
  f("max_threads_per_block", d.max_threads_per_block);
  f("max_block_dim", d.max_block_dim);
  f("max_grid_dim", d.max_grid_dim);
  f("max_threads_per_sm", d.max_threads_per_sm);
  f("max_blocks_per_sm", d.max_blocks_per_sm);
  f("registers_per_sm", d.registers_per_sm);
  f("registers_per_block", d.registers_per_block);
  f("max_registers_per_thread", d.max_registers_per_thread);
  f("shared_per_block", d.shared_per_block);
  f("shared_per_block_optin", d.shared_per_block_optin);
  f("shared_per_sm", d.shared_per_sm);
  f("l2_bytes", d.l2_bytes);
  f("compute_major", d.compute_major);
  f("compute_minor", d.compute_minor);
  f("memory_bandwidth_gbs", d.memory_bandwidth_gbs);
  f("fp64_gflops", d.fp64_gflops);
  f("fp64_tensor_gflops", d.fp64_tensor_gflops);
}

}  // namespace isletune
