// Streaming kernel family (kernels/streaming.cuh): a register pipeline along sd with
// concurrent stream blocks of sb planes (adjusted so that the launch fills whole waves of
// SMs), tdeg fused levels in one skewed pipeline (one barrier per input plane), overlapped
// in-plane tiles covered by the threads (tb * mf points per axis), merged points per thread
// as a register tile (cyclic or contiguous), a register queue per level (retiming = 0) or
// per-plane partial sums (retiming = 1), prefetching of the input planes (prefetch = 1: at tdeg 1
// copied asynchronously 2-3 planes ahead into shared memory, beyond into registers one plane
// ahead),
// and the stream loop unrolled uf_sd ways (bounded by the body size). The in-plane axes are x
// and the remaining non-streamed axis (z of extent 1 in 2-D). Builds every setting with
// streaming = 1. Design: docs/kernels.md; evidence: docs/decisions.md#register-pipeline-rule.
#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "kernel/emit.hpp"
#include "kernel/family.hpp"
#include "kernel/kernel_plan.hpp"

namespace isletune {
namespace {

// Registers of a streaming thread beside its pipeline's doubles (addresses, indices, the
// loop counter): register_pipeline's fixed part.
constexpr long long kPipelineFixedRegisters = 8;

// prefetch = 1 at tdeg 1: input planes in flight per block ahead of the one in use (cp.async
// into their own shared buffers: async + 2 buffers of level 0's plane, no registers). One
// plane ahead in registers left the tdeg-1 kernels at 64 % of DRAM bandwidth on the H100 (too
// few bytes in flight per SM). Measured on the H100 with 1, 2 and 3 planes ahead (families
// benchmark, docs/studies/2026-11-24-async-input-planes-tdeg1.md): the best tdeg-1 setting of every
// 3-D star/box/cross r1-r2 is fastest with 3 (a 3-D plane of a block carries ~10 KB), of the 2-D
// stencils with 2 (a row of ~4 KB, several blocks per SM). Beyond tdeg 1 a plane carries tdeg steps
// of work, and the register prefetch one plane ahead measured faster (the extra planes cost shared
// memory per block). Fewer planes ahead where the buffers would not fit a block's shared
// memory; none (the register prefetch) where not even one would, so no setting of the space
// is lost to the copies.
// The centre-queue kernel keeps `lag` more planes (its ring, centre_queue) and, where its
// registers let two blocks share an SM (`pair`), takes the most planes ahead at which two
// blocks' buffers fit the SM's shared memory (a guess, not measured apart: two blocks with
// two planes ahead each keep more bytes in flight per SM than one block with three).
constexpr long long kSharedPerSm = 228 * 1024;  // H100/H200 shared memory per SM
constexpr long long kSharedReservedPerBlock = 1024;
int async_planes(const Setting& s, int tdeg, int dims, long long plane_bytes,
                 long long shared_per_block, int lag = 0, bool pair = false) {
  if (s[Param::prefetch] == 0 || tdeg != 1)
    return 0;
  const int most = dims == 3 ? 3 : 2;
  if (pair) {
    for (int a = most; a > 0; --a) {
      if (2 * ((a + 2 + lag) * plane_bytes + kSharedReservedPerBlock) <= kSharedPerSm)
        return a;
    }
  }
  for (int a = most; a > 0; --a) {
    if ((a + 2 + lag) * plane_bytes <= shared_per_block)
      return a;
  }
  return 0;
}

// use_shared = 1 at tdeg >= 2: the last fused level keeps no register pipeline and reads level
// tdeg-1's planes from a ring of Q + 1 shared planes (kernels/streaming.cuh, SHQ). At tdeg 1
// use_shared means nothing here (canonical sets it to 0).
bool shared_ring(const Setting& s, int tdeg) {
  return tdeg >= 2 && s[Param::use_shared] != 0;
}

// Fused levels that keep a register pipeline per point.
int register_levels(const Setting& s, int tdeg) {
  return tdeg - (shared_ring(s, tdeg) ? 1 : 0);
}

// The centre-queue kernel (kernels/streaming.cuh, CQ): at tdeg 1 without retiming, for a
// stencil whose every in-plane offset lies in one plane (StreamLive::lag >= 0: the stars and
// every stencil without in-plane offsets off one plane), a thread keeps only its points'
// centre column along the stream axis (2r + 1 values a point for a star of radius r) and reads
// the in-plane neighbours from the shared input plane they lie in, kept lag planes behind the
// newest. The queue kernel it replaces kept each in-plane neighbour for r + 1 planes (star3d4r:
// 89 values a point) and the partial sums of retiming keep 3r + 2 (14): the same shared reads
// in 2r + 1 registers pairs a point. Boxes keep the queue kernel (every in-plane offset in
// every plane: each would be read 2r + 1 times).
bool centre_queue(const ProblemShape& shape, const Setting& s, int tdeg) {
  const int sd = s[Param::sd];
  return (sd == 1 || sd == 2) && tdeg == 1 && s[Param::retiming] == 0 &&
         shape.stream_live[static_cast<std::size_t>(sd)].lag >= 0;
}

// Paired points (kernels/streaming.cuh, VEC): a block-merged thread with an even number of x
// points accesses shared memory in 16-byte x-adjacent pairs, at every tdeg (at tdeg 1 the input
// ring starts one column into a row padded to an even start for an odd reach).
bool paired_points(const Setting& s) {
  return s[Param::merge] == static_cast<int>(MergeKind::block) && s[Param::mfx] % 2 == 0;
}

// A shared plane's padded x row: `pad` points before the covered ones (the reach lo; rounded
// up to even for paired points) and a pitch that holds the reach hi after them (even for
// paired points).
struct PlaneRow {
  int pad, pitch;
};
PlaneRow plane_row(int covered, int lo, int hi, bool paired) {
  const auto even = [&](int v) { return paired ? (v + 1) / 2 * 2 : v; };
  const int pad = even(lo);
  return {pad, even(pad + covered + hi)};
}

// Distinct shared reads of an x pair per point, as a share of a single point's: star3d2r's
// generated code reads 6 double2 for two points' 2 x 8 neighbours (0.75) and 11 for their
// 2 x 13 ring terms (0.85).
constexpr double kPairReadShare = 0.8;

// Values a computed point reads from shared memory per iteration, over all of its levels: each
// register level its in-plane neighbours, the shared ring's level every term.
double shared_reads_per_point(const ProblemShape& shape, const Setting& s, std::size_t axis,
                              int tdeg) {
  const int reg_levels = register_levels(s, tdeg);
  const double terms = (shape.flops_per_cell + 1) / 2.0;
  return shape.stream_live[axis].neighbours * reg_levels + terms * (tdeg - reg_levels);
}

// Doubles through the L1/shared-memory data path per computed point and iteration (all of its
// levels): its shared reads (x pairs read a pair's union, kPairReadShare), each repeated by the
// bank conflicts of block-merged x points (mfx apart, mfx / 2 for pairs); the stores of levels
// 0..tdeg-1 to shared memory, the input load and the output store.
double l1_doubles_per_point(const ProblemShape& shape, const Setting& s, std::size_t axis,
                            int tdeg) {
  const bool paired = paired_points(s);
  const bool block = s[Param::merge] == static_cast<int>(MergeKind::block);
  const double conflict = !block ? 1.0 : std::max(1.0, s[Param::mfx] / (paired ? 2.0 : 1.0));
  const double share = paired ? kPairReadShare : 1.0;
  return shared_reads_per_point(shape, s, axis, tdeg) * share * conflict + tdeg + 2;
}

// A thread's merged points (mf_sd is 1).
long long per_thread_points(const Setting& s) {
  return 1LL * s[Param::mfx] * s[Param::mfy] * s[Param::mfz];
}

long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

// Tiles that fill the GPU: the number of stream blocks (sb planes each, from the setting) is
// adjusted so that the whole launch fills whole waves of sm_count blocks, within (2/3, 4/3) of
// sb's own count: the ranges of sb and 2*sb never meet, so two settings of the space (sb a
// power of two) never plan the same stream block and build the same kernel. Candidates: sb's own
// count and the counts that end exactly at the wave below and above; the score is wave efficiency x
// the share of the stream loop that is not pipeline fill (tdeg * (lo + hi + 1) iterations).
void balance_stream_blocks(KernelPlan& p, const std::array<long long, 3>& extent, int sm_count) {
  const auto a = static_cast<std::size_t>(p.stream_axis);
  long long inplane = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    if (d != a)
      inplane *= p.grid[d];
  }
  const long long unit = std::max(1, sm_count);
  const long long ns = p.grid[a];
  const long long fill = 1LL * p.tdeg * (p.halo_lo[a] + p.halo_hi[a] + 1);
  const auto score = [&](long long count) {
    const long long len = ceil_div(extent[a], count);
    const long long blocks = inplane * ceil_div(extent[a], len);
    const double waves = static_cast<double>(ceil_div(blocks, unit));
    return static_cast<double>(blocks) / (waves * static_cast<double>(unit)) *
           static_cast<double>(len) / static_cast<double>(len + fill);
  };
  long long best = ns;
  double best_score = score(ns);
  const long long k_lo = inplane * ns / unit;
  for (const long long k : {k_lo, k_lo + 1}) {
    const long long count =
        std::clamp(k * unit / inplane, 2 * ns / 3 + 1, std::max(ns, (4 * ns - 1) / 3));
    if (count != ns && score(count) > best_score + 1e-9) {
      best = count;
      best_score = score(count);
    }
  }
  if (best == ns)
    return;
  p.stream_len = ceil_div(extent[a], best);
  p.tile[a] = static_cast<int>(p.stream_len);
  p.loaded[a] = p.tile[a] + (p.halo_lo[a] + p.halo_hi[a]) * p.tdeg;
  p.grid[a] = ceil_div(extent[a], p.stream_len);
}

// A streaming block along one in-plane axis, from the threads' covered extent (tb * mf). At
// tdeg 1 the covered extent is the output tile and the block also reads one step's reach
// around it (the ring: no thread computes a point it does not store). At tdeg >= 2 the
// covered extent is what the block reads and each fused level loses one reach (overlapped
// tiles): the ring there cost 10-25 % on most 2-D and 3-D settings measured (its scattered
// side loads in the barrier-bound pipeline, register pressure that made ptxas sink the
// shared loads; docs/studies/2026-11-24-input-ring-tdeg1-3d-stencils.md), while at tdeg 1 it gained
// up to 20 %.
struct AxisTile {
  int loaded, offset, width;  // extent read, output start within the covered extent, output
};
bool reads_ring(int tdeg) {
  return tdeg == 1;
}
AxisTile axis_tile(int covered, int lo, int hi, int tdeg) {
  if (reads_ring(tdeg))
    return {covered + lo + hi, 0, covered};
  return {covered, lo * tdeg, covered - (lo + hi) * tdeg};
}

// Global x pairs (kernels/streaming.cuh, GVEC): paired points whose pairs start at even global
// indices and are in or out of the grid together: an even row length, output tile and tile
// offset (the covered row's points before the output tile). `p.tile` is planned.
bool global_pairs(const ProblemShape& shape, const Setting& s, const KernelPlan& p) {
  const int offset =
      axis_tile(s[kTb[0]] * s[kMf[0]], shape.reach.lo[0], shape.reach.hi[0], p.tdeg).offset;
  return paired_points(s) && shape.grid.nx % 2 == 0 && p.tile[0] % 2 == 0 && offset % 2 == 0;
}

std::optional<std::string> streaming_unsupported(const Setting& s) {
  if (s[Param::streaming] == 0)
    return "the streaming family needs streaming = 1";
  if (s[Param::sd] != 1 && s[Param::sd] != 2)
    return "the streaming axis sd must be 1 (y) or 2 (z)";
  return std::nullopt;
}

// The stream loop is unrolled uf_sd ways, halved while the unrolled body would exceed this
// many point-level stencil points (NVRTC time grows with the body).
constexpr long long kMaxUnrolledPointLevels = 4096;

// The streaming axis of s (1 or 2), or -1 when sd is not a streaming axis (the allowed-value
// rules report that).
int axis_of(const Setting& s) {
  return s[Param::sd] == 1 || s[Param::sd] == 2 ? s[Param::sd] : -1;
}

// How many ways a kernel of `tdeg` fused levels unrolls the stream loop of s: uf_sd, halved
// while the body (merged points x levels x stencil points x unroll) exceeds
// kMaxUnrolledPointLevels. The one home of this clipping: Streaming::canonical stores it for
// the setting's own tdeg (the main kernel; the one-step tail is the plain kernel, which reads
// no unroll), Streaming::plan for the kernel it plans (KernelPlan::unroll; an exported entry
// at a smaller depth starts from the canonical value, so it unrolls no more than the main).
int plane_unroll(const ProblemShape& shape, const Setting& s, int tdeg) {
  const int sd = axis_of(s);
  if (sd < 0)
    return 1;
  const auto si = static_cast<std::size_t>(sd);
  const std::size_t bi = sd == 2 ? 1 : 2;  // the other in-plane axis
  const long long npt = 1LL * s[kMf[0]] * s[kMf[bi]];
  const long long points = (shape.flops_per_cell + 1) / 2;
  int unroll = std::max(1, s[kUf[si]]);
  while (unroll > 1 && npt * tdeg * points * unroll > kMaxUnrolledPointLevels)
    unroll /= 2;
  return unroll;
}

FamilyCode streaming_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                          std::string_view name) {
  const int sd = plan.stream_axis;
  const int b = sd == 2 ? 1 : 2;  // the other in-plane axis
  const std::array<long long, 3> stride{1, grid.nx, 1LL * grid.nx * grid.ny};
  const std::array<long long, 3> extent{grid.nx, grid.ny, grid.nz};
  const auto bi = static_cast<std::size_t>(b), si = static_cast<std::size_t>(sd);
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  const long long npt = 1LL * s[kMf[0]] * s[kMf[bi]];
  std::ostringstream c;
  c << "struct " << name << " {\n"
    << constant("TBX", plan.block[0]) << constant("TBY", plan.block[1])
    << constant("TBZ", plan.block[2]) << constant("TBA", plan.block[0])
    << constant("TBB", plan.block[bi]) << constant("MFA", s[kMf[0]]) << constant("MFB", s[kMf[bi]])
    << constant("CYC", cyclic ? 1 : 0) << constant("NA", grid.nx) << constant("NB", extent[bi])
    << constant("NS", extent[si]) << constant("ALO", plan.halo_lo[0])
    << constant("AHI", plan.halo_hi[0]) << constant("BLO", plan.halo_lo[bi])
    << constant("BHI", plan.halo_hi[bi]) << constant("SLO", plan.halo_lo[si])
    << constant("SHI", plan.halo_hi[si]) << constant("GSB", stride[bi], "long long")
    << constant("GSS", stride[si], "long long") << constant("BAXIS", b) << constant("SAXIS", sd)
    << constant("TA", plan.tile[0]) << constant("TB", plan.tile[bi])
    << constant("SB", plan.stream_len) << constant("LA", s[kTb[0]] * s[kMf[0]])
    << constant("LB", s[kTb[bi]] * s[kMf[bi]])
    << constant(
           "OA",
           axis_tile(s[kTb[0]] * s[kMf[0]], plan.halo_lo[0], plan.halo_hi[0], plan.tdeg).offset)
    << constant(
           "OB",
           axis_tile(s[kTb[bi]] * s[kMf[bi]], plan.halo_lo[bi], plan.halo_hi[bi], plan.tdeg).offset)
    << constant("RING", reads_ring(plan.tdeg) ? 1 : 0) << constant("TDEG", plan.tdeg)
    << constant("UFSD", plan.unroll[si])
    << constant("PREFETCH", s[Param::prefetch] != 0 && plan.async_planes == 0 ? 1 : 0)
    << constant("ASYNC", plan.async_planes) << constant("RETIME", s[Param::retiming] != 0 ? 1 : 0)
    << constant("SHQ", shared_ring(s, plan.tdeg) ? 1 : 0)
    << constant("VEC", paired_points(s) ? 1 : 0) << constant("GVEC", plan.x_vector == 2 ? 1 : 0)
    << constant("CQ", plan.centre_lag >= 0 ? 1 : 0)
    << constant("LAG", std::max(0, plan.centre_lag));
  const PlaneRow row =
      plane_row(s[kTb[0]] * s[kMf[0]], plan.halo_lo[0], plan.halo_hi[0], paired_points(s));
  c << constant("PADA", row.pad) << constant("PITCH", row.pitch);
  // Two blocks per SM (one block's barrier wait covered by the other) when the register
  // pipeline (IslApply's estimate of live values per point and level) fits half the register
  // file and two blocks' shared memory fit the SM; otherwise one block of up to 255 registers.
  const long long two_block_regs = 65536 / (2LL * plan.threads_per_block);
  const bool smem_two = 2 * (plan.shared_bytes + kSharedReservedPerBlock) <= kSharedPerSm;
  c << "  static constexpr int MIN_BLOCKS = " << (smem_two ? "" : "0 && ")
    << npt * register_levels(s, plan.tdeg)
    << " * (CQ ? IslApply::LIVE_CENTRE : RETIME ? IslApply::LIVE_RETIME : IslApply::LIVE_QUEUE) + "
       "32 <= "
    << two_block_regs << " ? 2 : 1;\n};\n";
  FamilyCode code{"streaming.cuh", "stream_step", c.str()};
  code.min_blocks = std::string(name) + "::MIN_BLOCKS";
  return code;
}

// The stencil seen by a thread streaming along axis sd with reach slo/shi: its in-plane
// offsets m (0 the centre), its terms (m, queue slot j = os + slo, point k), the lowest live
// queue slot of every m (q = never read) and the live counts of the pipeline (StreamLive).
struct StreamTerms {
  struct Term {
    int m, j, k;
  };
  int slo = 0, shi = 0, q = 1;
  std::vector<std::array<int, 2>> inplane{{0, 0}};
  std::vector<Term> terms;
  std::vector<int> low;
  StreamLive live;
};

StreamTerms stream_terms(const Stencil& stencil, std::size_t sd, int slo, int shi) {
  const std::size_t bd = sd == 2 ? 1 : 2;
  StreamTerms t;
  t.slo = slo;
  t.shi = shi;
  t.q = slo + shi + 1;
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[static_cast<std::size_t>(k)];
    const std::array<int, 3> v{o.x, o.y, o.z};
    const std::array<int, 2> ab{v[0], v[bd]};
    auto it = std::find(t.inplane.begin(), t.inplane.end(), ab);
    if (it == t.inplane.end()) {
      t.inplane.push_back(ab);
      it = t.inplane.end() - 1;
    }
    t.terms.push_back({static_cast<int>(it - t.inplane.begin()), v[sd] + slo, k});
  }
  const auto nm = t.inplane.size();
  t.low.assign(nm, t.q);
  t.low[0] = slo;
  for (const StreamTerms::Term& term : t.terms)
    t.low[static_cast<std::size_t>(term.m)] =
        std::min(t.low[static_cast<std::size_t>(term.m)], term.j);
  for (std::size_t m = 0; m < nm; ++m) {
    t.live.queue += t.q - t.low[m];
    t.live.neighbours += m > 0 && t.low[m] < t.q;
  }
  t.live.sums = t.q + shi + 1;
  // The centre-queue kernel: every in-plane offset in one plane (stream offset os = j - slo),
  // read there from the shared input plane shi - os planes behind the newest.
  t.live.centre = t.q - t.low[0];
  std::vector<int> plane_of(nm, -1);
  int lag = 0;
  for (const StreamTerms::Term& term : t.terms) {
    if (term.m == 0)
      continue;
    int& j = plane_of[static_cast<std::size_t>(term.m)];
    if (j >= 0 && j != term.j) {
      lag = -1;
      break;
    }
    j = term.j;
    lag = std::max(lag, slo + shi - term.j);
  }
  t.live.lag = lag;
  return t;
}

}  // namespace

StreamLive stream_live(const Stencil& stencil, std::size_t axis) {
  const StencilReach reach = reach_of(stencil);
  return stream_terms(stencil, axis, reach.lo[axis], reach.hi[axis]).live;
}

namespace {

// Pair loads (kernels/streaming.cuh, VEC): two x-adjacent points p, p+1 of a thread read their
// values from 16-byte aligned double2 loads of a shared plane (point 0 at an even index), so a
// warp's access moves 16 bytes a thread without the 2-way bank conflict of 8-byte loads at a
// stride of two doubles. PairLoads names each needed value (plane key j, x offset a, row b,
// relative to point 0) by the expression that holds it and emits the loads that cover them.
class PairLoads {
 public:
  // own0/own1: the expressions of the values at (0, 0) and (1, 0) of plane key `own_key` (the
  // points' own values, already in registers), or "" when they come from memory too.
  PairLoads(std::string base, std::string own0, std::string own1, int own_key)
      : base_(std::move(base)), own0_(std::move(own0)), own1_(std::move(own1)), own_key_(own_key) {}
  // The expression of the value at (j, a, b); records the aligned pair it needs.
  std::string value(int j, int a, int b) {
    if (!own0_.empty() && j == own_key_ && b == 0 && (a == 0 || a == 1))
      return a == 0 ? own0_ : own1_;
    const int pair = a >= 0 ? a / 2 : -((1 - a) / 2);  // floor(a / 2)
    const std::array<int, 3> key{j, pair, b};
    auto it = std::find(pairs_.begin(), pairs_.end(), key);
    if (it == pairs_.end()) {
      pairs_.push_back(key);
      it = pairs_.end() - 1;
    }
    return "v" + std::to_string(it - pairs_.begin()) + (a - 2 * pair == 0 ? ".x" : ".y");
  }
  // The double2 loads of every recorded pair (`plane(j)` is the plane's offset expression).
  template <class Plane>
  std::string loads(Plane&& plane) const {
    std::ostringstream r;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const auto& [j, pair, b] = pairs_[i];
      r << "    const double2 v" << i << " = *reinterpret_cast<const double2*>(" << base_
        << plane(j) << " + (" << 2 * pair << ") + (" << b << ") * PITCH);\n";
    }
    return r.str();
  }

 private:
  std::string base_, own0_, own1_;
  int own_key_;
  std::vector<std::array<int, 3>> pairs_;
};

// IslApply's streaming members. Offsets split into the in-plane part (a = x, b = the other
// non-streamed axis) and the streaming offset os; in-plane offsets are numbered m = 0 (the
// centre) .. NM-1; queue slot j holds the plane at streaming offset j - slo. A slot keeps m
// from the value's arrival (slot Q-1) down to the oldest slot that reads it (the centre down
// to slot slo at least, for the boundary condition). Everything is straight-line code with
// literal indices (no folding left to NVRTC):
//   init(w, p)              zero the live queue entries of point p,
//   push(w, p, own, src)    shift the queue, take the own value and the in-plane neighbours
//                           of the newest plane (src: the point in the level's shared plane),
//   qsum(w, p)              the weighted sum from the queue (the plane at slot slo),
//   push_part(acc, cq, ...) retiming: the newest plane's in-plane partial sums added into the
//                           2r+1 pending output planes, its centre into the centre queue,
//   ssum(at, so)            the last level from the shared ring (SHQ): every term read from
//                           the ring plane of its stream offset (so[j]: slot j's offset),
//   push2, push_part2, ssum2
//                           the same for two x-adjacent points p, p+1 at once with double2
//                           loads (VEC; src/at 16-byte aligned).
std::string stream_functions(const Stencil& stencil, const KernelPlan& plan, bool use_constant) {
  const auto sd = static_cast<std::size_t>(plan.stream_axis);
  const StreamTerms st = stream_terms(stencil, sd, plan.halo_lo[sd], plan.halo_hi[sd]);
  const int slo = st.slo, shi = st.shi, q = st.q;
  const auto& inplane = st.inplane;
  const auto& terms = st.terms;
  const auto& low = st.low;
  const int nm = static_cast<int>(inplane.size());
  using Term = StreamTerms::Term;
  const auto offset = [&](int m) {
    const auto& ab = inplane[static_cast<std::size_t>(m)];
    return "(" + std::to_string(ab[0]) + ") + (" + std::to_string(ab[1]) + ") * PITCH";
  };
  const auto coef = [&](int k) { return coefficient(stencil, k, use_constant); };
  std::ostringstream r;
  r << "  static constexpr int NM = " << nm << ";\n"
    << "  static constexpr int LIVE_QUEUE = " << st.live.queue << ";  // values per point-level\n"
    << "  static constexpr int LIVE_RETIME = " << st.live.sums + st.live.neighbours << ";\n"
    << "  static constexpr int LIVE_CENTRE = " << st.live.centre << ";\n"
    << "  static constexpr int LOWC = " << low[0] << ";  // the centre queue's oldest slot\n";
  r << "  template <int Q, int NPT, int NMM>\n"
    << "  static __device__ __forceinline__ void init(double (&w)[Q][NPT][NMM], int p) {\n";
  for (int m = 0; m < nm; ++m) {
    for (int j = low[static_cast<std::size_t>(m)]; j < q; ++j)
      r << "    w[" << j << "][p][" << m << "] = 0.0;\n";
  }
  r << "  }\n";
  r << "  template <int PITCH, int Q, int NPT, int NMM>\n"
    << "  static __device__ __forceinline__ void push(double (&w)[Q][NPT][NMM], int p, double "
       "own,\n"
    << "                                              const double* src) {\n";
  for (int m = 0; m < nm; ++m) {
    const int lo = low[static_cast<std::size_t>(m)];
    if (lo >= q)
      continue;
    for (int j = lo; j + 1 < q; ++j)
      r << "    w[" << j << "][p][" << m << "] = w[" << j + 1 << "][p][" << m << "];\n";
    r << "    w[" << q - 1 << "][p][" << m
      << "] = " << (m == 0 ? std::string("own") : "src[" + offset(m) + "]") << ";\n";
  }
  r << "  }\n";
  r << "  template <int Q, int NPT, int NMM>\n"
    << "  static __device__ __forceinline__ double qsum(const double (&w)[Q][NPT][NMM], int p) {\n"
    << "    double s = 0.0;\n";
  for (std::size_t t = 0; t < terms.size(); ++t) {
    r << "    s " << (t ? "+=" : "=") << " " << coef(terms[t].k) << " * w[" << terms[t].j << "][p]["
      << terms[t].m << "];\n";
  }
  r << "    return s;\n  }\n";
  // Retiming: output slot j (plane newest - shi + j) takes the terms with os = shi - j, i.e.
  // queue index slo + shi - j.
  r << "  template <int PITCH, int Q, int SH1, int NPT>\n"
    << "  static __device__ __forceinline__ void push_part(double (&acc)[Q][NPT],\n"
    << "                                                   double (&cq)[SH1][NPT], int p,\n"
    << "                                                   double own, const double* src) {\n"
    << "    const double n0 = own;\n";
  for (int m = 1; m < nm; ++m) {
    if (low[static_cast<std::size_t>(m)] < q)
      r << "    const double n" << m << " = src[" << offset(m) << "];\n";
  }
  for (int j = 0; j < shi; ++j)
    r << "    cq[" << j << "][p] = cq[" << j + 1 << "][p];\n";
  r << "    cq[" << shi << "][p] = own;\n";
  for (int j = 0; j < q; ++j) {
    bool first = true;
    for (const Term& t : terms) {
      if (t.j != slo + shi - j)
        continue;
      r << (first ? "    acc[" + std::to_string(j) + "][p] += " : " + ") << coef(t.k) << " * n"
        << t.m;
      first = false;
    }
    if (!first)
      r << ";\n";
  }
  r << "  }\n";
  if (st.live.lag >= 0) {
    // The centre-queue kernel: the centre column's terms from zq, every in-plane term from the
    // shared plane of its stream offset (po[d]: the plane d behind the newest). One chain of
    // multiply-adds in the stencil's order: two chains (the centre column's, ready before the
    // barrier, and the in-plane loads') measured 2-6 % slower at radius 3-4 on the H200
    // (docs/studies/2026-11-28-centre-queue-high-order-stars.md).
    const auto behind = [&](int j) { return std::to_string(slo + shi - j); };
    r << "  template <int PITCH, int Q, int NPT, int D>\n"
      << "  static __device__ __forceinline__ double lsum(const double (&zq)[Q][NPT], int p,\n"
      << "                                              const double* at, const int (&po)[D]) {\n"
      << "    double s;\n";
    for (std::size_t t = 0; t < terms.size(); ++t) {
      r << "    s " << (t ? "+=" : "=") << " " << coef(terms[t].k) << " * ";
      if (terms[t].m == 0)
        r << "zq[" << terms[t].j << "][p];\n";
      else
        r << "at[po[" << behind(terms[t].j) << "] + " << offset(terms[t].m) << "];\n";
    }
    r << "    return s;\n  }\n";
    // The pair's own values in the output plane are its centre queue's (slot slo).
    const std::string own = "zq[" + std::to_string(slo) + "][p";
    PairLoads pl("at", own + "]", own + " + 1]", slo);
    std::array<std::string, 2> sum;
    for (int k = 0; k < 2; ++k) {
      const std::string pk = k ? "p + 1" : "p";
      for (std::size_t t = 0; t < terms.size(); ++t) {
        const auto& ab = inplane[static_cast<std::size_t>(terms[t].m)];
        sum[static_cast<std::size_t>(k)] +=
            (t ? " + " : "") + coef(terms[t].k) + " * " +
            (terms[t].m == 0 ? "zq[" + std::to_string(terms[t].j) + "][" + pk + "]"
                             : pl.value(terms[t].j, ab[0] + k, ab[1]));
      }
    }
    r << "  template <int PITCH, int Q, int NPT, int D>\n"
      << "  static __device__ __forceinline__ void lsum2(const double (&zq)[Q][NPT], int p,\n"
      << "                                               const double* at, const int (&po)[D],\n"
      << "                                               double (&s)[2]) {\n"
      << pl.loads([&](int j) { return " + po[" + behind(j) + "]"; });
    for (int k = 0; k < 2; ++k)
      r << "    s[" << k << "] = " << sum[static_cast<std::size_t>(k)] << ";\n";
    r << "  }\n";
  }
  r << "  template <int PITCH, int Q>\n"
    << "  static __device__ __forceinline__ double ssum(const double* at, const int (&so)[Q]) {\n"
    << "    double s;\n";
  for (std::size_t t = 0; t < terms.size(); ++t) {
    r << "    s " << (t ? "+=" : "=") << " " << coef(terms[t].k) << " * at[so[" << terms[t].j
      << "] + " << offset(terms[t].m) << "];\n";
  }
  r << "    return s;\n  }\n";
  // Pair variants (VEC): the in-plane neighbours of the newest plane for points p and p+1.
  {
    PairLoads pl("src", "own0", "own1", 0);
    std::vector<std::array<std::string, 2>> n(static_cast<std::size_t>(nm));
    for (int m = 1; m < nm; ++m) {
      if (low[static_cast<std::size_t>(m)] >= q)
        continue;
      const auto& ab = inplane[static_cast<std::size_t>(m)];
      n[static_cast<std::size_t>(m)] = {pl.value(0, ab[0], ab[1]), pl.value(0, ab[0] + 1, ab[1])};
    }
    n[0] = {"own0", "own1"};
    const std::string loads = pl.loads([](int) { return std::string(); });
    r << "  template <int PITCH, int Q, int NPT, int NMM>\n"
      << "  static __device__ __forceinline__ void push2(double (&w)[Q][NPT][NMM], int p, double "
         "own0,\n"
      << "                                               double own1, const double* src) {\n"
      << loads;
    for (int k = 0; k < 2; ++k) {
      const std::string pk = k ? "p + 1" : "p";
      for (int m = 0; m < nm; ++m) {
        const int lo = low[static_cast<std::size_t>(m)];
        if (lo >= q)
          continue;
        for (int j = lo; j + 1 < q; ++j)
          r << "    w[" << j << "][" << pk << "][" << m << "] = w[" << j + 1 << "][" << pk << "]["
            << m << "];\n";
        r << "    w[" << q - 1 << "][" << pk << "][" << m
          << "] = " << n[static_cast<std::size_t>(m)][static_cast<std::size_t>(k)] << ";\n";
      }
    }
    r << "  }\n";
    r << "  template <int PITCH, int Q, int SH1, int NPT>\n"
      << "  static __device__ __forceinline__ void push_part2(double (&acc)[Q][NPT],\n"
      << "                                                    double (&cq)[SH1][NPT], int p,\n"
      << "                                                    double own0, double own1,\n"
      << "                                                    const double* src) {\n"
      << loads;
    for (int k = 0; k < 2; ++k) {
      const std::string pk = k ? "p + 1" : "p";
      for (int j = 0; j < shi; ++j)
        r << "    cq[" << j << "][" << pk << "] = cq[" << j + 1 << "][" << pk << "];\n";
      r << "    cq[" << shi << "][" << pk << "] = own" << k << ";\n";
      for (int j = 0; j < q; ++j) {
        bool first = true;
        for (const Term& t : terms) {
          if (t.j != slo + shi - j)
            continue;
          r << (first ? "    acc[" + std::to_string(j) + "][" + pk + "] += " : " + ") << coef(t.k)
            << " * " << n[static_cast<std::size_t>(t.m)][static_cast<std::size_t>(k)];
          first = false;
        }
        if (!first)
          r << ";\n";
      }
    }
    r << "  }\n";
  }
  {
    // The ring level for points p and p+1: every term, and the kept centre values.
    PairLoads pl("at", "", "", 0);
    std::array<std::string, 2> sum, keep;
    for (int k = 0; k < 2; ++k) {
      for (std::size_t t = 0; t < terms.size(); ++t) {
        const auto& ab = inplane[static_cast<std::size_t>(terms[t].m)];
        sum[static_cast<std::size_t>(k)] +=
            (t ? " + " : "") + coef(terms[t].k) + " * " + pl.value(terms[t].j, ab[0] + k, ab[1]);
      }
      keep[static_cast<std::size_t>(k)] = pl.value(slo, k, 0);
    }
    r << "  template <int PITCH, int Q>\n"
      << "  static __device__ __forceinline__ void ssum2(const double* at, const int (&so)[Q],\n"
      << "                                               double (&s)[2], double (&keep)[2]) {\n"
      << pl.loads([](int j) { return " + so[" + std::to_string(j) + "]"; });
    for (int k = 0; k < 2; ++k) {
      r << "    s[" << k << "] = " << sum[static_cast<std::size_t>(k)] << ";\n";
      r << "    keep[" << k << "] = " << keep[static_cast<std::size_t>(k)] << ";\n";
    }
    r << "  }\n";
  }
  return r.str();
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

// The threads cover tb * mf points per in-plane axis of every level: the fused levels must
// leave at least one output point after their halo (axis_tile).
bool tile_after_halo(const ProblemShape& shape, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0)
    return true;
  const int tdeg = std::max(1, s[Param::tdeg]);
  for (std::size_t d = 0; d < static_cast<std::size_t>(shape.dims); ++d) {
    if (static_cast<int>(d) == sd)
      continue;
    const int points = s[kTb[d]] * s[kMf[d]];
    if (axis_tile(points, shape.reach.lo[d], shape.reach.hi[d], tdeg).width >= 1)
      continue;
    const int halo = (shape.reach.lo[d] + shape.reach.hi[d]) * tdeg;
    if (why) {
      *why = "along " + std::string(1, kAxis[d]) + " the streaming tile " +
             std::string(param_name(kTb[d])) + "*" + std::string(param_name(kMf[d])) + " = " +
             std::to_string(points) + " leaves no output point after the halo of " +
             std::to_string(tdeg - 1) + " fused steps beyond the first (" + std::to_string(halo) +
             " points).";
    }
    return false;
  }
  return true;
}

// Each thread keeps, per merged point and fused level (but the shared ring's last level,
// use_shared at tdeg >= 2), its register pipeline (StreamLive:
// the queue's live slots without retiming, the pending partial sums and centre queue with
// it), each value a double = two 32-bit registers, plus a few registers of addresses and
// indices. Beyond the registers a thread of the block may use, the kernel spills its
// pipeline to local memory: measured on the H100, star3d3r at tdeg 1 with the 55-value queue
// in a 1024-thread block ran at 23 GCells/s against 135 for the naive kernel. Checked with
// ptxas (sm_90, one block per SM) on 600 streaming settings of six stencils: this bound
// rejects 180, of which 4 compile without spills, and admits 420, of which 12 spill, none
// more than 100 bytes (docs/decisions.md#register-pipeline-rule). Such settings are rejected with
// this sentence.
bool register_pipeline(const ProblemShape& shape, const Setting& s, std::string* why) {
  const int sd = axis_of(s);
  if (sd < 0)
    return true;
  long long points = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    if (static_cast<int>(d) != sd)
      points *= s[kMf[d]];
  }
  const StreamLive& live = shape.stream_live[static_cast<std::size_t>(sd)];
  const int per_level = centre_queue(shape, s, std::max(1, s[Param::tdeg])) ? live.centre
                        : s[Param::retiming] != 0                           ? live.sums
                                                                            : live.queue;
  const int tdeg = register_levels(s, std::max(1, s[Param::tdeg]));
  const long long needed = 2 * points * tdeg * per_level + kPipelineFixedRegisters;
  const long long threads = std::max(1LL, 1LL * s[Param::tbx] * s[Param::tby] * s[Param::tbz]);
  const long long regs = std::min<long long>(255, 65536 / threads);
  if (needed <= regs)
    return true;
  if (why) {
    *why = "the streaming register pipeline keeps " + std::to_string(points) + " points x " +
           std::to_string(tdeg) + " levels x " + std::to_string(per_level) +
           " doubles = " + std::to_string(needed - kPipelineFixedRegisters) + " registers (+" +
           std::to_string(kPipelineFixedRegisters) + ") per thread, more than the " +
           std::to_string(regs) + " a thread of a " + std::to_string(threads) +
           "-thread block may use.";
  }
  return false;
}

// The parameters only the streaming family reads: the axis it streams along, sd (1 = y, 2 = z
// in 3-D), and the points along it a block streams, sb (a power of two; by default from 8, or
// the extent when smaller, to the largest power of two within the larger extent along y and z,
// at most 2^20). Neither has a value that means "no streaming": every other family's settings
// hold them at 0.
int floor_pow2(long long n) {  // largest power of two <= n (n >= 1), in 64 bits
  long long p = 1;
  while (p * 2 <= n)
    p *= 2;
  return static_cast<int>(p);
}
std::vector<int> default_sb(int dims, const Grid& grid) {
  const int extent = std::max(1, dims == 3 ? std::max(grid.ny, grid.nz) : grid.ny);
  const int top = std::min(floor_pow2(extent), 1 << 20);  // sb's allowed range ends at 2^20
  std::vector<int> out;
  for (long long v = std::min(8, top); v <= top; v *= 2)
    out.push_back(static_cast<int>(v));
  return out;
}
constexpr std::array<OwnParam, 2> kStreamParams = {
    OwnParam{Param::sd,
             [](int dims, const Grid&) {
               return dims == 3 ? std::vector<int>{1, 2} : std::vector<int>{1};
             },
             [](int v, int dims) { return v == 1 || (v == 2 && dims == 3); }, "1 (y) or 2 (z)",
             "1 (y) for a 2-D stencil"},
    OwnParam{Param::sb, default_sb,
             [](int v, int) { return v > 0 && (v & (v - 1)) == 0 && v <= (1 << 20); },
             "a power of two from 1 to 1048576"},
};

class Streaming final : public KernelFamily {
 public:
  std::string_view name() const override { return "streaming"; }
  bool builds(const Setting& s) const override { return s[Param::streaming] != 0; }
  // Streaming with each merge kind, retiming and prefetch on or off, with and without fused
  // steps.
  const std::vector<Oc>& ocs() const override {
    static const std::vector<Oc> list = [] {
      std::vector<Oc> out;
      for (const int merge : {0, 1, 2}) {
        for (const int retiming : {0, 1}) {
          for (const int prefetch : {0, 1}) {
            for (const int temporal : {0, 1})
              out.push_back(flag_oc(OcFlags{1, merge, retiming, prefetch, temporal}));
          }
        }
      }
      return out;
    }();
    return list;
  }
  ExclusiveParams exclusive_params() const override { return {kStreamParams, "without streaming"}; }
  std::span<const FamilyRule> rules() const override { return kRules; }
  // One part per streaming axis the grid has: sb within the extent along it
  // (stream_block_fits_grid), block extent and merge factor 1 along it (stream_block_extent,
  // stream_no_merge), its unroll at most the largest sb (stream_unroll).
  std::vector<SpacePart> space_parts(const ProblemShape& shape, const Oc&,
                                     ParamValues part) const override {
    std::vector<SpacePart> out;
    for (const int axis : part[index_of(Param::sd)]) {
      if (axis >= shape.dims)
        continue;
      const auto i = static_cast<std::size_t>(axis);
      SpacePart p{part, axis};
      p.values[index_of(Param::sd)] = {axis};
      const int extent = axis == 1 ? shape.grid.ny : shape.grid.nz;
      auto& sb = p.values[index_of(Param::sb)];
      std::erase_if(sb, [&](int v) { return v > extent; });
      keep_only(p.values[index_of(kTb[i])], 1);
      keep_only(p.values[index_of(kMf[i])], 1);
      const int max_sb = sb.empty() ? 0 : sb.back();
      std::erase_if(p.values[index_of(kUf[i])], [&](int v) { return v > max_sb; });
      out.push_back(std::move(p));
    }
    return out;
  }
  int stream_axis(const Setting& s) const override { return axis_of(s); }

  // The register pipeline reads the merge kind (cyclic: points a block-width apart; block:
  // contiguous points) and the in-plane merge factors (the register tile); use_shared is the
  // shared ring of the last level at tdeg >= 2 and means nothing at tdeg 1 (0), and the
  // kernel unrolls only the plane loop (the
  // in-plane unroll factors are 1) as many ways as plane_unroll clips it to at the setting's
  // tdeg (settings of tdeg > 1 whose factors clip alike are one kernel: their one-step tail is
  // the plain kernel, which reads none of them).
  Setting canonical(const ProblemShape& shape, const Setting& s) const override {
    Setting c = s;
    c[Param::use_shared] = shared_ring(s, std::max(1, s[Param::tdeg])) ? 1 : 0;
    const int sd = axis_of(s);
    for (std::size_t d = 0; d < 3; ++d) {
      if (static_cast<int>(d) != sd)
        c[kUf[d]] = 1;
    }
    if (sd >= 0) {
      const auto si = static_cast<std::size_t>(sd);
      const int unroll = plane_unroll(shape, c, std::max(1, c[Param::tdeg]));
      if (unroll != std::max(1, c[kUf[si]]))
        c[kUf[si]] = unroll;
    }
    return c;
  }

  void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const override {
    const std::array<long long, 3> extent{shape.grid.nx, shape.grid.ny, shape.grid.nz};
    p.stream_axis = s[Param::sd];
    const auto a = static_cast<std::size_t>(p.stream_axis);
    for (std::size_t d = 0; d < 3; ++d) {
      const int halo = (shape.reach.lo[d] + shape.reach.hi[d]) * p.tdeg;
      if (static_cast<int>(d) >= shape.dims) {
        p.tile[d] = p.loaded[d] = 1;
      } else if (d == a) {
        p.stream_len = std::min<long long>(std::max(1, s[Param::sb]), extent[d]);
        p.tile[d] = static_cast<int>(p.stream_len);
        p.loaded[d] = p.tile[d] + halo;
      } else {
        // The threads cover tb * mf points of every level (axis_tile: the ring at tdeg 1,
        // overlapped tiles beyond; a tile < 1: the rule tile_after_halo rejects it).
        const AxisTile t =
            axis_tile(s[kTb[d]] * s[kMf[d]], shape.reach.lo[d], shape.reach.hi[d], p.tdeg);
        p.loaded[d] = t.loaded;
        p.tile[d] = t.width;
      }
      p.grid[d] = ceil_div(extent[d], std::max(1, p.tile[d]));
    }
    balance_stream_blocks(p, extent, shape.sm_count);
    p.x_vector = global_pairs(shape, s, p) ? 2 : 1;
    if (axis_of(s) > 0)
      p.unroll[a] = plane_unroll(shape, canonical(shape, s), p.tdeg);
    // One padded plane (covered + one step's reach per in-plane axis) per source level
    // 0..tdeg-1, double-buffered, and level 0's planes in flight; the stream axis lives in
    // registers.
    long long plane = 1;
    double loaded_plane = 1, covered_plane = 1, tile_plane = 1;
    for (std::size_t d = 0; d < 3; ++d) {
      if (d == a)
        continue;
      const int covered = static_cast<int>(d) < shape.dims ? s[kTb[d]] * s[kMf[d]] : 1;
      plane *=
          d == 0 ? plane_row(covered, shape.reach.lo[d], shape.reach.hi[d], paired_points(s)).pitch
                 : covered + shape.reach.lo[d] + shape.reach.hi[d];
      loaded_plane *= p.loaded[d];
      covered_plane *= covered;
      tile_plane *= std::max(1, p.tile[d]);
    }
    const int reg_levels = register_levels(s, p.tdeg);
    const int q = shape.reach.lo[a] + shape.reach.hi[a] + 1;
    // The centre-queue kernel: lag planes more, and two blocks an SM where its registers
    // (MIN_BLOCKS of streaming_code: points x centre values + 32) fit half the register file.
    const StreamLive& live = shape.stream_live[a];
    p.centre_lag = centre_queue(shape, s, p.tdeg) ? live.lag : -1;
    const int lag = std::max(0, p.centre_lag);
    const long long threads = 1LL * s[Param::tbx] * s[Param::tby] * s[Param::tbz];
    const bool pair = p.centre_lag >= 0 && 2 * threads <= 2048 &&
                      per_thread_points(s) * live.centre + 32 <= 65536 / (2 * threads);
    p.async_planes =
        async_planes(s, p.tdeg, shape.dims, plane * 8, shape.shared_per_block, lag, pair);
    const long long ring_planes = reg_levels < p.tdeg ? q + 1 : 0;
    p.shared_bytes = (p.async_planes + 2LL * reg_levels + ring_planes + lag) * plane * 8;
    // Each block reads its loaded plane over stream_len + halo planes and, in the skewed
    // pipeline, computes every level on the whole covered plane for stream_len + tdeg *
    // (lo + hi + 1) iterations.
    const double len = static_cast<double>(p.stream_len);
    p.global_read_doubles = loaded_plane * (len + (q - 1) * p.tdeg) / (tile_plane * len) / p.tdeg;
    p.global_write_doubles = 1.0 / p.tdeg;
    p.redundancy = covered_plane * (len + 1.0 * q * p.tdeg) / (tile_plane * len);
    // Instructions beside the multiply-adds per computed point and level: its in-plane
    // neighbours from shared memory, and the coefficient moves shared by a thread's points.
    double per_thread = 1;
    for (std::size_t d = 0; d < 3; ++d) {
      if (d != a)
        per_thread *= s[kMf[d]];
    }
    const double points = (shape.flops_per_cell + 1) / 2.0;
    // Shared reads per computed point and level (averaged over the levels).
    const double shared_reads = shared_reads_per_point(shape, s, a, p.tdeg) / p.tdeg;
    p.other_instructions = (shared_reads + kCoefficientMoves * points / per_thread) * p.redundancy;
    p.l1_doubles = l1_doubles_per_point(shape, s, a, p.tdeg) * p.redundancy / p.tdeg;
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
    return stream_functions(stencil, plan, s[Param::use_constant] == 1);
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    return streaming_code(plan, s, grid, name);
  }

 private:
  static constexpr std::array<FamilyRule, 6> kRules = {
      FamilyRule{Param::sb, stream_block_fits_grid, false, "sb <= the grid extent along sd"},
      FamilyRule{Param::tbz, stream_block_extent, false, "block extent 1 along sd"},
      FamilyRule{Param::mfz, stream_no_merge, false, "no merging along sd (mf_sd = 1)"},
      FamilyRule{Param::mfz, tile_after_halo, false,
                 "tb * mf per in-plane axis > the halo of tdeg steps beyond tdeg 1 (an output "
                 "point is left)"},
      // Decided once use_shared is set: the shared ring's level keeps no pipeline.
      FamilyRule{Param::use_shared, register_pipeline, false,
                 "the per-thread register pipeline (2 x points x register levels x live "
                 "doubles + 8; the shared ring's level has none) fits the registers"},
      FamilyRule{Param::ufz, stream_unroll, false, "uf_sd <= sb (the plane loop's unroll)"},
  };
};

}  // namespace

const KernelFamily& streaming_family() {
  static const Streaming family;
  return family;
}

}  // namespace isletune
