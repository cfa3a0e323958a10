// Streaming kernel family (kernels/streaming.cuh): a register pipeline along sd with
// concurrent stream blocks of sb planes, tdeg fused levels in one skewed pipeline (one
// barrier per input plane), overlapped in-plane tiles, merged points per thread as a
// register tile (cyclic or contiguous), retiming as per-plane partial sums, prefetching of
// the next input plane into registers, and the stream loop unrolled uf_sd ways. The in-plane
// axes are x and the remaining non-streamed axis (z of extent 1 in 2-D).
#include <algorithm>
#include <sstream>

#include "eval/cuda/codegen_family.hpp"

namespace isletune::cuda::detail {
namespace {
constexpr long long kMaxUnrolledPointLevels = 4096;  // stencil points x levels x merged points
constexpr long long kSharedPerSm = 228 * 1024;       // H100/H200 shared memory per SM
}  // namespace

std::optional<std::string> streaming_unsupported(const Setting& s) {
  if (s[Param::streaming] == 0)
    return "the streaming family needs streaming = 1";
  if (s[Param::sd] != 1 && s[Param::sd] != 2)
    return "the streaming axis sd must be 1 (y) or 2 (z)";
  return std::nullopt;
}

FamilyCode streaming_code(const KernelPlan& plan, const Setting& s, const Grid& grid, int points,
                          std::string_view name) {
  const int sd = plan.stream_axis;
  const int b = sd == 2 ? 1 : 2;  // the other in-plane axis
  const std::array<long long, 3> stride{1, grid.nx, 1LL * grid.nx * grid.ny};
  const std::array<long long, 3> extent{grid.nx, grid.ny, grid.nz};
  const std::array<Param, 3> uf{Param::ufx, Param::ufy, Param::ufz};
  const std::array<Param, 3> mf{Param::mfx, Param::mfy, Param::mfz};
  const auto bi = static_cast<std::size_t>(b), si = static_cast<std::size_t>(sd);
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  // The stream loop is unrolled uf_sd ways, halved while the unrolled body would exceed
  // kMaxUnrolledPointLevels point-level updates (NVRTC time grows with the body).
  const long long body = 1LL * s[mf[0]] * s[mf[bi]] * plan.tdeg * points;
  int unroll = std::max(1, s[uf[si]]);
  while (unroll > 1 && body * unroll > kMaxUnrolledPointLevels)
    unroll /= 2;
  std::ostringstream c;
  c << "struct " << name << " {\n"
    << constant("TBX", plan.block[0]) << constant("TBY", plan.block[1])
    << constant("TBZ", plan.block[2]) << constant("TBA", plan.block[0])
    << constant("TBB", plan.block[bi]) << constant("MFA", s[mf[0]]) << constant("MFB", s[mf[bi]])
    << constant("CYC", cyclic ? 1 : 0) << constant("NA", grid.nx) << constant("NB", extent[bi])
    << constant("NS", extent[si]) << constant("ALO", plan.halo_lo[0])
    << constant("AHI", plan.halo_hi[0]) << constant("BLO", plan.halo_lo[bi])
    << constant("BHI", plan.halo_hi[bi]) << constant("SLO", plan.halo_lo[si])
    << constant("SHI", plan.halo_hi[si]) << constant("GSB", stride[bi], "long long")
    << constant("GSS", stride[si], "long long") << constant("BAXIS", b) << constant("SAXIS", sd)
    << constant("TA", plan.tile[0]) << constant("TB", plan.tile[bi])
    << constant("SB", plan.stream_len) << constant("LA", plan.loaded[0])
    << constant("LB", plan.loaded[bi]) << constant("TDEG", plan.tdeg) << constant("UFSD", unroll)
    << constant("PREFETCH", s[Param::prefetch] != 0 ? 1 : 0)
    << constant("RETIME", s[Param::retiming] != 0 ? 1 : 0) << "};\n";
  // Two blocks per SM (so that one block's barrier wait is covered by the other) when the
  // register pipeline is small enough for half the register file and two blocks' shared
  // memory fit; otherwise one block may use up to 255 registers per thread.
  const long long pipeline =
      1LL * s[mf[0]] * s[mf[bi]] * plan.tdeg * (plan.halo_lo[si] + plan.halo_hi[si] + 1);
  const long long two_block_regs = 65536 / (2LL * plan.threads_per_block);
  const bool two =
      2 * pipeline + 40 <= two_block_regs && 2 * (plan.shared_bytes + 1024) <= kSharedPerSm;
  return {"streaming.cuh", "stream_step", c.str(), two ? 2 : 0};
}

}  // namespace isletune::cuda::detail
