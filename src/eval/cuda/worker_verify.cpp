// Verification of a kernel's schedule against the reference module.
#include "eval/cuda/worker_verify.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace isletune::cuda {

bool VerifyResult::passed() const {
  return non_finite == 0 && error_l2 <= 1e-12 && error_max <= 1e-10;
}

std::string VerifyResult::message() const {
  return "output differs from the reference: l2 " + std::to_string(error_l2) + ", max relative " +
         std::to_string(error_max) + ", " + std::to_string(non_finite) + " non-finite points";
}

Verifier::Verifier(const std::string& reference_cubin, const ProblemSize& problem,
                   cudaStream_t stream)
    : problem_(problem),
      stream_(stream),
      reference_(reference_cubin),
      fill_random_(reference_.kernel("isl_fill_random")),
      fill_nan_(reference_.kernel("isl_fill_nan")),
      compare_(reference_.kernel("isl_compare")) {
  reference_schedule_.main.fn = reference_.kernel("isl_reference_step");
  reference_schedule_.main.launch = linear_launch((problem_.cells() + 255) / 256);
  const auto n = static_cast<std::size_t>(problem_.cells());
  input_ = DeviceBuffer(n);
  a_ = DeviceBuffer(n);
  b_ = DeviceBuffer(n);
  ref_long_ = DeviceBuffer(n);
  ref_short_ = DeviceBuffer(n);
  partial_ = DeviceBuffer(kCompareBlocks * 4);
}

const double* Verifier::run(const Schedule& s, long long steps) {
  for (double* p : {a_.get(), b_.get()}) {
    void* args[] = {&p};
    launch(stream_, fill_nan_, linear_launch(2048), args);
  }
  const double* src = input_.get();
  double* dst = a_.get();
  enqueue_steps(stream_, s, steps, buffers(), src, dst);
  return src;
}

void Verifier::prepare(unsigned long long seed, bool long_run) {
  double* in = input_.get();
  void* args[] = {&in, &seed};
  launch(stream_, fill_random_, linear_launch(2048), args);
  const std::size_t bytes = input_.bytes();
  const Event e0, e1;
  CUDA_CHECK(cudaEventRecord(e0.get(), stream_));
  const double* short_out = run(reference_schedule_, problem_.short_steps);
  CUDA_CHECK(cudaEventRecord(e1.get(), stream_));
  CUDA_CHECK(
      cudaMemcpyAsync(ref_short_.get(), short_out, bytes, cudaMemcpyDeviceToDevice, stream_));
  long_ready_ = long_run;
  if (long_run) {
    CUDA_CHECK(cudaMemcpyAsync(ref_long_.get(), run(reference_schedule_, problem_.steps), bytes,
                               cudaMemcpyDeviceToDevice, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
  reference_step_ms_ = static_cast<double>(ms) / std::max(1, problem_.short_steps);
}

bool Verifier::needs_long_run(int launch_steps) const {
  return verification_needs_long_run(launch_steps, problem_.short_steps,
                                     problem_.full_verification);
}

double Verifier::probe_step_ms(const Schedule& s) {
  const long long steps = std::max(1, s.main.steps);
  const Event e0, e1;
  for (int pass = 0; pass < 2; ++pass) {
    const double* src = input_.get();
    double* dst = a_.get();
    CUDA_CHECK(cudaEventRecord(e0.get(), stream_));
    enqueue_steps(stream_, s, steps, buffers(), src, dst);
    CUDA_CHECK(cudaEventRecord(e1.get(), stream_));
  }
  CUDA_CHECK(cudaEventSynchronize(e1.get()));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
  return static_cast<double>(ms) / static_cast<double>(steps);
}

VerifyResult Verifier::compare(const double* out, const double* ref) {
  double* partial = partial_.get();
  void* args[] = {&out, &ref, &partial};
  launch(stream_, compare_, linear_launch(kCompareBlocks), args);
  std::vector<double> h(kCompareBlocks * 4);
  CUDA_CHECK(cudaMemcpyAsync(h.data(), partial, h.size() * sizeof(double), cudaMemcpyDeviceToHost,
                             stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  double d2 = 0, r2 = 0, mx = 0, bad = 0;
  for (int b = 0; b < kCompareBlocks; ++b) {
    d2 += h[4 * b];
    r2 += h[4 * b + 1];
    mx = std::max(mx, h[4 * b + 2]);
    bad += h[4 * b + 3];
  }
  VerifyResult r;
  r.error_l2 = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
  r.error_max = mx;
  r.non_finite = static_cast<long long>(bad);
  return r;
}

VerifyResult Verifier::verify(const Schedule& s) {
  const bool long_run = needs_long_run(s.main.steps);
  if (long_run && !long_ready_)
    throw std::logic_error("the long verification run's reference was not prepared");
  VerifyResult worst;
  std::vector<long long> runs{static_cast<long long>(problem_.short_steps)};
  if (long_run)
    runs.push_back(problem_.steps);
  for (const long long steps : runs) {
    const double* out = run(s, steps);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    const VerifyResult r =
        compare(out, steps == problem_.short_steps ? ref_short_.get() : ref_long_.get());
    // NaN errors (NaN outputs) must stay visible: std::max would drop them.
    worst.error_l2 = std::isnan(r.error_l2) ? r.error_l2 : std::max(worst.error_l2, r.error_l2);
    worst.error_max =
        std::isnan(r.error_max) ? r.error_max : std::max(worst.error_max, r.error_max);
    worst.non_finite += r.non_finite;
  }
  return worst;
}

}  // namespace isletune::cuda
