// The parameters of the optimization space (docs/architecture.md, "The search space") and a
// Setting: one value per parameter. The parameter order is fixed and is the lexicographic order
// used by the `index` encoding: OC flags first, then streaming detail, block shape, merging,
// unrolling, memory placement.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace isletune {

enum class Param : std::uint8_t {
  streaming,  // 0/1: 2.5-D streaming along sd
  merge,      // MergeKind
  retiming,   // 0/1 (needs streaming)
  prefetch,   // 0/1 (needs streaming)
  tdeg,       // time steps fused per launch, 1 = off
  sd,         // streaming dimension as an axis: 1 = y, 2 = z; 0 when not streaming
  sb,         // points along sd per block (concurrent streaming); 0 when not streaming
  tbx,        // thread-block shape
  tby,
  tbz,  // 1 in 2-D
  mfx,  // points merged per thread per dimension
  mfy,
  mfz,
  ufx,  // unroll factors
  ufy,
  ufz,
  use_shared,    // 0/1: input tile with halo in shared memory
  use_constant,  // 0/1: coefficients in __constant__ instead of literals
  // A kernel family's own parameters are appended here, never inserted (docs/kernel-plan.md,
  // "A family with its own parameter"): one enum line and one kParamInfo line below, the rest
  // is the family's (KernelFamily::own_params).
  mma,        // 0/1: the tensor-core family's selector (src/kernel/mma.cpp)
  mma_nb,     // tensor-core family: batches of 16 output blocks per warp
  mma_warps,  // tensor-core family: warps per block (along y in 3-D, x in 2-D)
  mma_creg,   // 0/1: tensor-core family: coefficient fragments in registers, not shared memory
  mma_minb,   // tensor-core family: minimum resident blocks per SM (__launch_bounds__)
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
  tpl_px,  // test build only (tests/axis): the template family's points per thread along x
  tpl_on,  // test build only (tests/axis): 0/1, the template family's selector
#endif
};

// The parameters of the generic space, in every key, trace and blob recorded before a family
// appended its own: a canonical key names these always and an appended parameter only away
// from its neutral value (docs/decisions.md#family-ocs).
inline constexpr std::size_t kBaseParamCount = 18;

// What a parameter's values are: 0/1 flags, the merge enum, a streaming axis, or integers
// (block extents, factors, step counts).
enum class ParamKind { flag, enumeration, axis, integer };

// The facts of one parameter: its name in YAML, HDF5 and keys ("tbx", "use_shared", ...), its
// kind, and its neutral value: what it has when what it controls is off (flags 0, merge none,
// no streaming axis, block extents and factors 1, tdeg 1), what a trace or blob recorded
// before the parameter existed reads for it, and what a family that does not read it sets.
struct ParamInfo {
  std::string_view name;
  ParamKind kind = ParamKind::integer;
  int neutral = 0;
};

// One row per Param, in Param order (the one home of these facts).
inline constexpr std::array kParamInfo = {
    ParamInfo{"streaming", ParamKind::flag, 0},    ParamInfo{"merge", ParamKind::enumeration, 0},
    ParamInfo{"retiming", ParamKind::flag, 0},     ParamInfo{"prefetch", ParamKind::flag, 0},
    ParamInfo{"tdeg", ParamKind::integer, 1},      ParamInfo{"sd", ParamKind::axis, 0},
    ParamInfo{"sb", ParamKind::integer, 0},        ParamInfo{"tbx", ParamKind::integer, 1},
    ParamInfo{"tby", ParamKind::integer, 1},       ParamInfo{"tbz", ParamKind::integer, 1},
    ParamInfo{"mfx", ParamKind::integer, 1},       ParamInfo{"mfy", ParamKind::integer, 1},
    ParamInfo{"mfz", ParamKind::integer, 1},       ParamInfo{"ufx", ParamKind::integer, 1},
    ParamInfo{"ufy", ParamKind::integer, 1},       ParamInfo{"ufz", ParamKind::integer, 1},
    ParamInfo{"use_shared", ParamKind::flag, 0},   ParamInfo{"use_constant", ParamKind::flag, 0},
    ParamInfo{"mma", ParamKind::flag, 0},          ParamInfo{"mma_nb", ParamKind::integer, 1},
    ParamInfo{"mma_warps", ParamKind::integer, 4}, ParamInfo{"mma_creg", ParamKind::flag, 0},
    ParamInfo{"mma_minb", ParamKind::integer, 1},
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
    ParamInfo{"tpl_px", ParamKind::integer, 1},    ParamInfo{"tpl_on", ParamKind::flag, 0},
#endif
};

inline constexpr std::size_t kParamCount = kParamInfo.size();
static_assert(kParamCount >= kBaseParamCount, "parameters are appended, never removed");

// The per-axis parameters and axis names, indexed by axis (0 x, 1 y, 2 z).
inline constexpr std::array<char, 3> kAxis = {'x', 'y', 'z'};
inline constexpr std::array<Param, 3> kTb = {Param::tbx, Param::tby, Param::tbz};
inline constexpr std::array<Param, 3> kMf = {Param::mfx, Param::mfy, Param::mfz};
inline constexpr std::array<Param, 3> kUf = {Param::ufx, Param::ufy, Param::ufz};

enum class MergeKind : int { none = 0, block = 1, cyclic = 2 };

inline constexpr std::size_t index_of(Param p) {
  return static_cast<std::size_t>(p);
}
inline constexpr Param param_at(std::size_t i) {
  return static_cast<Param>(i);
}

// Name used in YAML, HDF5 and keys ("tbx", "use_shared", ...).
[[nodiscard]] inline constexpr std::string_view param_name(Param p) {
  return kParamInfo[index_of(p)].name;
}
// Inverse of param_name; nullopt for an unknown name.
[[nodiscard]] std::optional<Param> param_from_name(std::string_view name);
[[nodiscard]] std::string_view merge_name(MergeKind k);
[[nodiscard]] std::optional<MergeKind> merge_from_name(std::string_view name);
[[nodiscard]] inline constexpr ParamKind param_kind(Param p) {
  return kParamInfo[index_of(p)].kind;
}
// "flag", "enum", "axis" or "int" (the /space/parameters kind column of the trace).
[[nodiscard]] std::string_view param_kind_name(ParamKind k);
// The parameter's neutral value (ParamInfo::neutral).
[[nodiscard]] inline constexpr int neutral_value(Param p) {
  return kParamInfo[index_of(p)].neutral;
}
// Whether a family appended p after the base parameters (kBaseParamCount).
[[nodiscard]] inline constexpr bool is_appended(Param p) {
  return index_of(p) >= kBaseParamCount;
}

// A list of values per parameter (the space's allowed values, a product set of them).
using ParamValues = std::array<std::vector<int>, kParamCount>;

// A setting's values before any is set: the base parameters 0 (as they always were), the
// appended ones at their neutral value, so code that sets only the parameters it knows
// builds a setting in which an appended parameter is off.
[[nodiscard]] inline constexpr std::array<int, kParamCount> initial_values() {
  std::array<int, kParamCount> v{};
  for (std::size_t i = kBaseParamCount; i < kParamCount; ++i)
    v[i] = kParamInfo[i].neutral;
  return v;
}

// One point of the space: a value per parameter (enums and flags as ints).
struct Setting {
  std::array<int, kParamCount> values = initial_values();

  int& operator[](Param p) { return values[index_of(p)]; }
  int operator[](Param p) const { return values[index_of(p)]; }
  auto operator<=>(const Setting&) const = default;
  bool operator==(const Setting&) const = default;
};

// Parameters in which two settings differ (their Hamming distance).
[[nodiscard]] inline int differing_params(const Setting& a, const Setting& b) {
  int d = 0;
  for (std::size_t p = 0; p < kParamCount; ++p)
    d += a.values[p] != b.values[p] ? 1 : 0;
  return d;
}

// Canonical key: "name=value" pairs in parameter order joined by ',', enums by name
// (e.g. "streaming=0,merge=none,...,use_constant=1"). Stable across runs and platforms: every
// base parameter is named, an appended one only when it is not at its neutral value, so the
// key (and setting_hash, cubin caches, recorded keys) of a setting that leaves the appended
// parameters off is the key it had before they existed.
[[nodiscard]] std::string canonical_key(const Setting& s);
// Inverse of canonical_key; nullopt if the text is not a complete key (the base parameters in
// order, then appended ones in order, each named at most once; an unnamed one is neutral).
[[nodiscard]] std::optional<Setting> setting_from_key(std::string_view key);

// 64-bit FNV-1a hash of the canonical key (for hash maps and cache file names).
[[nodiscard]] std::uint64_t setting_hash(const Setting& s);

// The naive-equivalent setting, the one the naive kernel runs: tiled, one point per thread,
// no merge, no unroll, no shared or constant memory, tdeg 1, blocks of 32x8 (2-D) or 32x4x2
// (3-D). The CUDA evaluator's naive reference and benchmarks run it; the search starts from it.
[[nodiscard]] Setting naive_setting(int dims);

struct SettingHash {
  std::size_t operator()(const Setting& s) const {
    return static_cast<std::size_t>(setting_hash(s));
  }
};

}  // namespace isletune
