// Kernel family template: the smallest kernel a family can be, as a skeleton to copy.
// Copy to kernels/<family>.cuh together with src/kernel/family_template.cpp, rename
// template_step, and grow it. It is compiled by the unit tests so it cannot rot.
//
// One config struct C (written by the family's code emission from the kernel plan) holds every
// compile-time value: block TBX/TBY/TBZ, points per thread along x PX (the template's own
// parameter where the build has it, else 1), extents NX/NY/NZ, reach XLO/XHI, YLO/YHI,
// ZLO/ZHI. Each thread computes PX points along x, TBX apart (a warp's accesses stay
// contiguous). Semantics (as every family): a point whose every neighbour
// lies inside the grid gets the weighted sum Apply::at<SY, SZ>(p); any other point keeps its
// input value. The entry may use the dynamic shared memory `smem` the plan sized.
#pragma once

namespace isl {

template <class C, class Apply>
__device__ __forceinline__ void template_step(const double* __restrict__ in,
                                              double* __restrict__ out, double* smem) {
  (void)smem;
  const int y = blockIdx.y * C::TBY + threadIdx.y;
  const int z = blockIdx.z * C::TBZ + threadIdx.z;
  if (y >= C::NY || z >= C::NZ)
    return;
#pragma unroll
  for (int i = 0; i < C::PX; ++i) {
    const int x = blockIdx.x * (C::TBX * C::PX) + i * C::TBX + threadIdx.x;
    if (x >= C::NX)
      return;
    const long long g = (1LL * z * C::NY + y) * C::NX + x;
    const bool interior = x >= C::XLO && x < C::NX - C::XHI && y >= C::YLO && y < C::NY - C::YHI &&
                          z >= C::ZLO && z < C::NZ - C::ZHI;
    out[g] = interior ? Apply::template at<C::NX, C::NX * C::NY>(in + g) : in[g];
  }
}

}  // namespace isl
