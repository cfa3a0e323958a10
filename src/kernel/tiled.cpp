// Tiled kernel family (kernels/tiled.cuh): one step per launch with optional shared tile,
// merging and unrolling (tiled_step), or tdeg > 1 fused steps on overlapped tiles in two
// ping-pong shared buffers (tiled_temporal).
#include <sstream>

#include "kernel/family.hpp"

namespace isletune::cuda::detail {

std::optional<std::string> tiled_unsupported(const Setting& s) {
  if (s[Param::streaming] != 0)
    return "the tiled family does not stream (streaming = 1)";
  if (s[Param::tdeg] > 1 && s[Param::use_shared] == 0)
    return "tiled temporal blocking keeps its levels in shared memory (needs use_shared = 1)";
  return std::nullopt;
}

FamilyCode tiled_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                      std::string_view name) {
  std::ostringstream c;
  c << "struct " << name << " {\n"
    << constant("TBX", plan.block[0]) << constant("TBY", plan.block[1])
    << constant("TBZ", plan.block[2]) << constant("MFX", s[Param::mfx])
    << constant("MFY", s[Param::mfy]) << constant("MFZ", s[Param::mfz])
    << constant("UFX", s[Param::ufx]) << constant("UFY", s[Param::ufy])
    << constant("UFZ", s[Param::ufz]) << constant("MERGE", s[Param::merge])
    << constant("SHARED", plan.shared_bytes > 0 ? 1 : 0) << constant("NX", grid.nx)
    << constant("NY", grid.ny) << constant("NZ", grid.nz) << constant("XLO", plan.halo_lo[0])
    << constant("XHI", plan.halo_hi[0]) << constant("YLO", plan.halo_lo[1])
    << constant("YHI", plan.halo_hi[1]) << constant("ZLO", plan.halo_lo[2])
    << constant("ZHI", plan.halo_hi[2]) << constant("TDEG", plan.tdeg)
    << constant("TILEX", plan.tile[0]) << constant("TILEY", plan.tile[1])
    << constant("TILEZ", plan.tile[2]) << constant("LX", plan.loaded[0])
    << constant("LY", plan.loaded[1]) << constant("LZ", plan.loaded[2]) << "};\n";
  return {"tiled.cuh", plan.tdeg > 1 ? "tiled_temporal" : "tiled_step", c.str()};
}

}  // namespace isletune::cuda::detail
