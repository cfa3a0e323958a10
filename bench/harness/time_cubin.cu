// Standalone timing of one generated kernel outside the worker
// (docs/studies/2026-11-24-register-pipeline-rule-retiming.md, "The 3-D boxes are power-bound"):
// loads KERNEL (a cubin, or a .cu source compiled with NVRTC with the worker's options) and times
// REPS back-to-back launches of its isl_kernel on a ping-pong pair of NX*NY*NZ doubles (random
// inputs with `random`, else zeros), CUDA events around them, and the sum of the last output.
// `random-nan` fills the output buffer with NaN instead of the input's values: a kernel that
// leaves any point of its output unwritten then gives a NaN checksum.
// Geometry and shared bytes as `isletune-bench-kernels --source KEY` prints them.
//   nvcc -O2 -o time_cubin bench/harness/time_cubin.cu -lcuda -lnvrtc
//   time_cubin KERNEL NX NY NZ BX BY BZ GX GY GZ SHARED REPS [random|random-nan]
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#define CK(x)                                       \
  do {                                              \
    CUresult r = (x);                               \
    if (r != CUDA_SUCCESS) {                        \
      const char* s;                                \
      cuGetErrorString(r, &s);                      \
      std::printf("error %s at %d\n", s, __LINE__); \
      return 1;                                     \
    }                                               \
  } while (0)
int main(int argc, char** argv) {
  if (argc < 13)
    return 2;
  long long n = 1LL * atoi(argv[2]) * atoi(argv[3]) * atoi(argv[4]);
  unsigned b[3] = {(unsigned)atoi(argv[5]), (unsigned)atoi(argv[6]), (unsigned)atoi(argv[7])};
  unsigned g[3] = {(unsigned)atoi(argv[8]), (unsigned)atoi(argv[9]), (unsigned)atoi(argv[10])};
  int shared = atoi(argv[11]), reps = atoi(argv[12]);
  cudaFree(0);
  CUmodule m;
  CUfunction f;
  std::string path = argv[1];
  if (path.size() > 3 && path.substr(path.size() - 3) == ".cu") {  // NVRTC as the product
    std::ifstream fs(path);
    std::stringstream ss;
    ss << fs.rdbuf();
    std::string src = ss.str();
    nvrtcProgram p;
    nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
    const char* opts[] = {"--gpu-architecture=sm_90", "-std=c++17"};
    if (nvrtcCompileProgram(p, 2, opts) != NVRTC_SUCCESS) {
      std::printf("nvrtc failed\n");
      return 1;
    }
    size_t n = 0;
    nvrtcGetCUBINSize(p, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(p, cubin.data());
    CK(cuModuleLoadData(&m, cubin.data()));
  } else {
    CK(cuModuleLoad(&m, argv[1]));
  }
  CK(cuModuleGetFunction(&f, m, "isl_kernel"));
  if (shared > 48 * 1024)
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared));
  double *in, *out;
  if (cudaMalloc(&in, n * 8) != cudaSuccess || cudaMalloc(&out, n * 8) != cudaSuccess) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  const bool poison = argc > 13 && std::strcmp(argv[13], "random-nan") == 0;
  const bool random = poison || (argc > 13 && std::strcmp(argv[13], "random") == 0);
  if (random) {
    std::vector<double> h(n);
    std::mt19937_64 r(1);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& v : h)
      v = u(r);
    cudaMemcpy(in, h.data(), n * 8, cudaMemcpyHostToDevice);
    if (poison)
      cudaMemset(out, 0xff, n * 8);  // all bits set: a NaN
    else
      cudaMemcpy(out, h.data(), n * 8, cudaMemcpyHostToDevice);
  } else {
    cudaMemset(in, 0, n * 8);
    cudaMemset(out, 0, n * 8);
  }
  void* args[] = {&in, &out};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i)
    CK(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, args, 0));
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) {
    CK(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, args, 0));
    double* t = in;
    in = out;
    out = t;
    args[0] = &in;
    args[1] = &out;
  }
  cudaEventRecord(e1);
  if (cudaEventSynchronize(e1) != cudaSuccess) {
    std::printf("kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  // The last step's output (after the swap: `in`), summed: variants of one kernel that compute
  // the same steps agree to rounding (a check when an edited kernel is timed).
  std::vector<double> res(n);
  cudaMemcpy(res.data(), in, n * 8, cudaMemcpyDeviceToHost);
  double sum = 0.0;
  for (double v : res)
    sum += v;
  std::printf("%s %s %.4f ms/step %.1f GCells/s checksum %.15e\n", argv[1],
              poison   ? "random-nan"
              : random ? "random"
                       : "zeros",
              ms / reps, n / (ms / reps * 1e-3) / 1e9, sum);
  return 0;
}
