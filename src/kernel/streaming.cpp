// Streaming kernel family (kernels/streaming.cuh): 2.5-D along sd with concurrent stream
// blocks of sb planes, a ring of shared planes per time level (tdeg >= 1), prefetching of the
// next plane into registers, and the plane loop unrolled uf_sd ways. The in-plane axes are x
// and the remaining non-streamed axis (z of extent 1 in 2-D). Builds every setting with
// streaming = 1.
#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <vector>

#include "kernel/emit.hpp"
#include "kernel/family.hpp"
#include "kernel/kernel_plan.hpp"

namespace isletune {
namespace {

constexpr std::array<char, 3> kAxis = {'x', 'y', 'z'};
constexpr std::array<Param, 3> kTb = {Param::tbx, Param::tby, Param::tbz};
constexpr std::array<Param, 3> kMf = {Param::mfx, Param::mfy, Param::mfz};
constexpr std::array<Param, 3> kUf = {Param::ufx, Param::ufy, Param::ufz};

std::optional<std::string> streaming_unsupported(const Setting& s) {
  if (s[Param::streaming] == 0)
    return "the streaming family needs streaming = 1";
  if (s[Param::sd] != 1 && s[Param::sd] != 2)
    return "the streaming axis sd must be 1 (y) or 2 (z)";
  return std::nullopt;
}

FamilyCode streaming_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                          std::string_view name) {
  const int sd = plan.stream_axis;
  const int b = sd == 2 ? 1 : 2;  // the other in-plane axis
  const std::array<long long, 3> stride{1, grid.nx, 1LL * grid.nx * grid.ny};
  const std::array<long long, 3> extent{grid.nx, grid.ny, grid.nz};
  const std::array<Param, 3> uf{Param::ufx, Param::ufy, Param::ufz};
  const auto bi = static_cast<std::size_t>(b), si = static_cast<std::size_t>(sd);
  std::ostringstream c;
  c << "struct " << name << " {\n"
    << constant("TBX", plan.block[0]) << constant("TBY", plan.block[1])
    << constant("TBZ", plan.block[2]) << constant("NA", grid.nx) << constant("NB", extent[bi])
    << constant("NS", extent[si]) << constant("ALO", plan.halo_lo[0])
    << constant("AHI", plan.halo_hi[0]) << constant("BLO", plan.halo_lo[bi])
    << constant("BHI", plan.halo_hi[bi]) << constant("SLO", plan.halo_lo[si])
    << constant("SHI", plan.halo_hi[si]) << constant("GSB", stride[bi], "long long")
    << constant("GSS", stride[si], "long long") << constant("BAXIS", b) << constant("SAXIS", sd)
    << constant("TA", plan.tile[0]) << constant("TB", plan.tile[bi])
    << constant("SB", plan.stream_len) << constant("LA", plan.loaded[0])
    << constant("LB", plan.loaded[bi]) << constant("TDEG", plan.tdeg) << constant("UFSD", s[uf[si]])
    << constant("PREFETCH", s[Param::prefetch] != 0 ? 1 : 0) << "};\n";
  return {"streaming.cuh", "stream_step", c.str()};
}

// Apply::ring<LA>(pl, i): the weighted sum at in-plane index i of a ring of planes (pl[k] =
// plane at streaming offset k - slo), offsets mapped to the in-plane axes (x, b) and the
// streaming axis. With retiming the sum is split into per-plane partial sums, added plane by
// plane along the stream.
std::string ring_function(const Stencil& stencil, const Setting& setting, bool use_constant,
                          int slo) {
  const int sd = setting[Param::sd];
  const bool retime = setting[Param::retiming] != 0;
  std::map<int, std::vector<int>> by_plane;  // streaming offset -> stencil points
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[k];
    by_plane[sd == 2 ? o.z : o.y].push_back(k);
  }
  std::ostringstream r;
  r << "  template <int LA>\n"
    << "  static __device__ __forceinline__ double ring(const double* const* pl, int i) {\n"
    << "    double s = 0.0;\n";
  for (const auto& [ds, points] : by_plane) {
    if (retime)
      r << "    {\n      double part = 0.0;\n";
    for (const int k : points) {
      const Offset& o = stencil.offsets()[k];
      const int db = sd == 2 ? o.y : o.z;
      r << (retime ? "      part += " : "    s += ") << coefficient(stencil, k, use_constant)
        << " * pl[" << ds + slo << "][i + (" << o.x << ") + (" << db << ") * LA];\n";
    }
    if (retime)
      r << "      s += part;\n    }\n";
  }
  r << "    return s;\n  }\n";
  return r.str();
}

// The streaming axis of s (1 or 2), or -1 when sd is not a streaming axis (the allowed-value
// rules report that).
int axis_of(const Setting& s) {
  return s[Param::sd] == 1 || s[Param::sd] == 2 ? s[Param::sd] : -1;
}

// Rules along the streaming axis: the stream block fits the grid, the block is one thread
// deep along it, no merging along it, the plane loop unrolled at most sb ways.
bool stream_block_fits_grid(const ProblemShape& shape, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0)
    return true;
  const int extent = sd == 1 ? shape.grid.ny : shape.grid.nz;
  if (s[Param::sb] <= extent)
    return true;
  if (why) {
    *why = "sb=" + std::to_string(s[Param::sb]) + " exceeds the grid extent " +
           std::to_string(extent) + " along the streaming dimension " +
           kAxis[static_cast<std::size_t>(sd)] + ".";
  }
  return false;
}

bool stream_block_extent(const ProblemShape&, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0 || s[kTb[static_cast<std::size_t>(sd)]] == 1)
    return true;
  if (why) {
    const auto i = static_cast<std::size_t>(sd);
    *why = "while streaming along " + std::string(1, kAxis[i]) + " the block extent " +
           std::string(param_name(kTb[i])) + " must be 1 (got " + std::to_string(s[kTb[i]]) + ").";
  }
  return false;
}

bool stream_no_merge(const ProblemShape&, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0 || s[kMf[static_cast<std::size_t>(sd)]] == 1)
    return true;
  if (why) {
    const auto i = static_cast<std::size_t>(sd);
    *why = "while streaming along " + std::string(1, kAxis[i]) +
           " there is no merging along it: " + std::string(param_name(kMf[i])) +
           " must be 1 (got " + std::to_string(s[kMf[i]]) + ").";
  }
  return false;
}

bool stream_unroll(const ProblemShape&, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0 || s[kUf[static_cast<std::size_t>(sd)]] <= s[Param::sb])
    return true;
  if (why) {
    const auto i = static_cast<std::size_t>(sd);
    *why = std::string(param_name(kUf[i])) + "=" + std::to_string(s[kUf[i]]) +
           " exceeds sb=" + std::to_string(s[Param::sb]) +
           " (the streaming loop cannot be unrolled beyond the stream block).";
  }
  return false;
}

class Streaming final : public KernelFamily {
 public:
  std::string_view name() const override { return "streaming"; }
  bool builds(const Setting& s) const override { return s[Param::streaming] != 0; }
  std::span<const FamilyRule> rules() const override { return kRules; }
  int stream_axis(const Setting& s) const override { return axis_of(s); }

  // The streaming kernel reads the in-plane merge factors only through the tile: block and
  // cyclic merging build the same kernel (block stands for both); it keeps its planes in
  // shared memory whatever use_shared says (0), and unrolls only the plane loop (the
  // in-plane unroll factors are 1).
  Setting canonical(const Setting& s) const override {
    Setting c = s;
    if (c[Param::merge] != static_cast<int>(MergeKind::none))
      c[Param::merge] = static_cast<int>(MergeKind::block);
    c[Param::use_shared] = 0;
    const int sd = axis_of(s);
    for (std::size_t d = 0; d < 3; ++d) {
      if (static_cast<int>(d) != sd)
        c[kUf[d]] = 1;
    }
    return c;
  }

  void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const override {
    const std::array<long long, 3> extent{shape.grid.nx, shape.grid.ny, shape.grid.nz};
    p.stream_axis = s[Param::sd];
    const auto a = static_cast<std::size_t>(p.stream_axis);
    std::array<int, 3> tile{};
    for (std::size_t d = 0; d < 3; ++d)
      tile[d] = s[kTb[d]] * s[kMf[d]];
    p.stream_len = std::min<long long>(std::max(1, s[Param::sb]), extent[a]);
    tile[a] = static_cast<int>(p.stream_len);
    plan_tiles(p, shape, tile);
    // Per time level below tdeg one ring of (lo + hi + 1) planes along sd, each plane the
    // loaded in-plane extent.
    long long plane = 1;
    for (std::size_t d = 0; d < 3; ++d) {
      if (d != a)
        plane *= p.loaded[d];
    }
    const long long ring = shape.reach.lo[a] + shape.reach.hi[a] + 1;
    p.shared_bytes = p.tdeg * ring * plane * 8;
    plan_costs(p);
  }

  double cost_factor(const Setting& s) const override {
    double f = 1.0;
    if (s[Param::retiming] != 0)
      f *= 0.95;
    if (s[Param::prefetch] != 0)
      f *= 0.95;
    return f;
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    return streaming_unsupported(s);
  }
  std::string apply_member(const Stencil& stencil, const Setting& s,
                           const KernelPlan& plan) const override {
    return ring_function(stencil, s, s[Param::use_constant] == 1,
                         plan.halo_lo[static_cast<std::size_t>(plan.stream_axis)]);
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    return streaming_code(plan, s, grid, name);
  }

 private:
  static constexpr std::array<FamilyRule, 4> kRules = {
      FamilyRule{Param::sb, stream_block_fits_grid, false, "sb <= the grid extent along sd"},
      FamilyRule{Param::tbz, stream_block_extent, false, "block extent 1 along sd"},
      FamilyRule{Param::mfz, stream_no_merge, false, "no merging along sd (mf_sd = 1)"},
      FamilyRule{Param::ufz, stream_unroll, false, "uf_sd <= sb (the plane loop's unroll)"},
  };
};

}  // namespace

const KernelFamily& streaming_family() {
  static const Streaming family;
  return family;
}

}  // namespace isletune
