// The optimization space: default and validated value lists, the explicit constraints
// (one table, used both for messages and for pruned enumeration), OC parts, exact and
// Monte-Carlo counting, and rejection sampling inside an OC.
#include "space/space.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "kernel/registry.hpp"

namespace isletune {
namespace {

bool is_pow2(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

bool contains(const std::vector<int>& list, int v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// Powers of two from `lo` to `hi` inclusive.
std::vector<int> powers_of_two(int lo, int hi) {
  std::vector<int> out;
  for (long long v = lo; v <= hi; v *= 2)
    out.push_back(static_cast<int>(v));
  return out;
}

std::string join(const std::vector<int>& list) {
  std::string out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += std::to_string(list[i]);
  }
  return out;
}

std::vector<int> keep_if(const std::vector<int>& list, auto pred) {
  std::vector<int> out;
  for (const int v : list) {
    if (pred(v))
      out.push_back(v);
  }
  return out;
}

// Parameter names as a list: "sd", "sd and sb", "a, b and c".
std::string and_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// Whether s holds every parameter a family reads alone at its neutral value.
bool neutral_all(const Setting& s, const ExclusiveParams& alone) {
  return std::all_of(alone.params.begin(), alone.params.end(),
                     [&](const OwnParam& o) { return s[o.param] == neutral_value(o.param); });
}

// Why a setting of another family may not set them: "without streaming sd and sb must be 0
// (got sd=1, sb=0)."
std::string held_sentence(const Setting& s, const ExclusiveParams& alone) {
  std::vector<std::string> names, musts, got;
  bool one_neutral = true;
  for (const OwnParam& o : alone.params) {
    const std::string name(param_name(o.param));
    names.push_back(name);
    musts.push_back(name + " must be " + std::to_string(neutral_value(o.param)));
    got.push_back(name + "=" + std::to_string(s[o.param]));
    one_neutral = one_neutral && neutral_value(o.param) == neutral_value(alone.params[0].param);
  }
  const std::string must = one_neutral ? and_list(names) + " must be " +
                                             std::to_string(neutral_value(alone.params[0].param))
                                       : and_list(musts);
  std::string list;
  for (const std::string& g : got)
    list += (list.empty() ? "" : ", ") + g;
  return std::string(alone.absent) + " " + must + " (got " + list + ").";
}

// Why no family builds s, naming what picks the family: the parameters up to kFamilyKnown
// and the selectors.
std::string unbuilt_sentence(const OcTable& ocs, const Setting& s) {
  std::string picks;
  auto add = [&](Param p) {
    picks += (picks.empty() ? "" : ", ") + std::string(param_name(p)) + "=" + std::to_string(s[p]);
  };
  for (std::size_t i = 0; i <= index_of(kFamilyKnown); ++i)
    add(param_at(i));
  for (const FamilySelector& sel : ocs.selectors())
    add(sel.param);
  return "no kernel family builds this setting (" + picks + ").";
}

double product(const Space::Values& values) {
  double p = 1;
  for (const auto& list : values)
    p *= static_cast<double>(list.size());
  return p;
}

// Constraint ids in the order violation() checks them. The kernel families add their own
// rules (KernelFamily::rules, src/kernel/<family>.cpp): `form` rules before the value lists,
// the others after them.
enum Rule : int {
  kTwoDimensional,
  kReadAlone,     // base parameters another family reads alone at their neutral value
  kFamilyForm,    // the building family's form rules
  kAllowedValue,  // one per parameter, checked in parameter order
  kFamilyRules,   // the building family's other rules
  kDeclaredOc,    // the setting is in an OC its family declares (KernelFamily::ocs)
  kOwnParams,     // appended parameters neutral unless the family declares them
  kThreads,
  kBlockLimits,
  kMergeNoneFactors,
  kMergeNeedsFactor,
  kTileCoversHalo,
  kUnrollDividesMerge,
  kKernelPlan,
  kRuleCount
};

// Each generic rule in a line (`isletune space`), in Rule order.
constexpr std::array<std::pair<Rule, const char*>, 11> kRuleTexts = {{
    {kTwoDimensional, "2-D => tbz = mfz = ufz = 1 and no kernel streams along z"},
    {kReadAlone,
     "a base parameter one kernel family reads alone is at its neutral value in every other "
     "family's settings"},
    {kDeclaredOc, "the setting is in an OC its kernel family declares"},
    {kOwnParams,
     "a parameter a kernel family brings is at its neutral value in every other family's "
     "settings"},
    {kThreads, "threads per block tbx*tby*tbz >= 32"},
    {kBlockLimits, "the block within the device's per-axis limits and maxThreadsPerBlock"},
    {kMergeNoneFactors, "merge = none => mfx = mfy = mfz = 1"},
    {kMergeNeedsFactor, "merge = block or cyclic => some mf > 1"},
    {kTileCoversHalo,
     "tb_d * mf_d > 2 * radius_d along every axis the stencil extends into (but a streamed one), "
     "unless the setting's kernel family says its kernel takes any tile"},
    {kUnrollDividesMerge, "uf_d divides mf_d along every axis but a streamed one"},
    {kKernelPlan,
     "the kernel plan launches: blocks per axis within max_grid_dim, shared memory within the "
     "opt-in limit"},
}};

// Family rules that read only parameters before kFamilyKnown are decided there.

// The parameter after which a generic rule is decided (all it reads is set).
constexpr Param stage_of(Rule r) {
  switch (r) {
    case kTwoDimensional:
      return Param::ufz;
    case kDeclaredOc:
      return kFamilyKnown;
    case kThreads:
      return Param::tbz;
    case kBlockLimits:
      return Param::tbz;
    case kMergeNoneFactors:
      return Param::mfz;
    case kMergeNeedsFactor:
      return Param::mfz;
    case kTileCoversHalo:
      return Param::mfz;
    case kUnrollDividesMerge:
      return Param::ufz;
    case kKernelPlan:
      return Param::use_shared;
    default:  // kReadAlone, kOwnParams and the checks of whole settings: the last parameter
      return param_at(kParamCount - 1);
  }
}

// Generic rules (other than kAllowedValue and the family's) decided at each parameter.
const std::array<std::vector<Rule>, kParamCount>& rules_by_stage() {
  static const auto table = [] {
    std::array<std::vector<Rule>, kParamCount> t;
    for (int r = 0; r < kRuleCount; ++r) {
      if (r == kAllowedValue || r == kFamilyForm || r == kFamilyRules)
        continue;
      t[index_of(stage_of(static_cast<Rule>(r)))].push_back(static_cast<Rule>(r));
    }
    return t;
  }();
  return table;
}

// The stage at which the space checks a family rule.
std::size_t family_stage(const FamilyRule& rule) {
  return std::max(index_of(rule.stage), index_of(kFamilyKnown));
}

}  // namespace

// The constraint checks, with access to the space's private state.
struct SpaceRules {
  // Whether value of parameter p is allowed in a setting `family` builds. A base parameter
  // another family reads alone has no list value for "off": its list applies to that family's
  // settings only (kReadAlone holds it neutral in the others').
  static bool allowed(const Space& sp, const Setting& s, Param p, const KernelFamily* family,
                      std::string* why) {
    const KernelFamily* reader = is_appended(p) ? nullptr : sp.ocs_->alone_reader(p);
    if (reader != nullptr && reader != family)
      return true;
    const auto& list = sp.values_[index_of(p)];
    if (contains(list, s[p]))
      return true;
    if (why) {
      *why = std::string(param_name(p)) + "=" + std::to_string(s[p]) +
             " is not an allowed value; allowed: " + join(list) + ".";
    }
    return false;
  }

  // Whether rule r holds for s; on failure fills *why (when given) with one sentence.
  // `family` is the family that builds s (nullptr: none does).
  static bool check(const Space& sp, const Setting& s, Rule r, const KernelFamily* family,
                    std::string* why) {
    const int dims = sp.dims_;
    // Builds the sentence only when asked for: the fast path never allocates.
    auto fail = [&](auto sentence) {
      if (why)
        *why = sentence();
      return false;
    };
    switch (r) {
      case kTwoDimensional: {
        const bool along_z = family != nullptr && family->stream_axis(s) == 2;
        if (dims == 2 &&
            (s[Param::tbz] != 1 || s[Param::mfz] != 1 || s[Param::ufz] != 1 || along_z)) {
          return fail([&] {
            return std::string(
                "a 2-D stencil needs tbz = mfz = ufz = 1 and no streaming along z (got tbz=" +
                std::to_string(s[Param::tbz]) + ", mfz=" + std::to_string(s[Param::mfz]) +
                ", ufz=" + std::to_string(s[Param::ufz]) +
                (along_z ? ", a kernel streaming along z)." : ")."));
          });
        }
        return true;
      }
      case kReadAlone:
        if (!family)
          return true;  // kFamilyForm says so
        for (const KernelFamily* reader : sp.ocs_->families()) {
          if (reader != family && !reader->exclusive_params().params.empty() &&
              !neutral_all(s, reader->exclusive_params()))
            return fail([&] { return held_sentence(s, reader->exclusive_params()); });
        }
        return true;
      case kThreads: {
        const long long threads = 1LL * s[Param::tbx] * s[Param::tby] * s[Param::tbz];
        if (threads < 32) {
          return fail([&] {
            return std::string("the block has tbx*tby*tbz = " + std::to_string(threads) +
                               " threads; expected at least 32 (one warp).");
          });
        }
        return true;
      }
      case kBlockLimits: {
        const std::array<int, 3> block{s[Param::tbx], s[Param::tby], s[Param::tbz]};
        if (!block_fits(block, sp.limits_))
          return fail([&] { return *block_violation(block, sp.limits_); });
        return true;
      }
      case kMergeNoneFactors:
        if (s[Param::merge] == static_cast<int>(MergeKind::none) &&
            (s[Param::mfx] != 1 || s[Param::mfy] != 1 || s[Param::mfz] != 1)) {
          return fail([&] {
            return std::string(
                "merge=none needs mfx = mfy = mfz = 1 (got " + std::to_string(s[Param::mfx]) +
                ", " + std::to_string(s[Param::mfy]) + ", " + std::to_string(s[Param::mfz]) + ").");
          });
        }
        return true;
      case kMergeNeedsFactor:
        if (s[Param::merge] != static_cast<int>(MergeKind::none) && s[Param::mfx] <= 1 &&
            s[Param::mfy] <= 1 && s[Param::mfz] <= 1) {
          return fail([&] {
            return std::string(
                "merge=" +
                std::string(merge_name(static_cast<MergeKind>(std::clamp(s[Param::merge], 0, 2)))) +
                " needs a merge factor mfx, mfy or mfz > 1 (all are 1).");
          });
        }
        return true;
      case kTileCoversHalo:
        // A kernel that takes any tile (KernelFamily::takes_any_tile: the tiled family at tdeg
        // 1, whose fastest measured register tile of box3d4r is 64x2x4 points) is exempt.
        if (family && family->takes_any_tile(s))
          return true;
        for (int d = 0; d < dims; ++d) {
          if (family && d == family->stream_axis(s))
            continue;
          const auto i = static_cast<std::size_t>(d);
          const int tile = s[kTb[i]] * s[kMf[i]];
          if (sp.radius_[i] > 0 && tile <= 2 * sp.radius_[i]) {
            return fail([&] {
              return std::string("along " + std::string(1, kAxis[i]) + " the tile " +
                                 std::string(param_name(kTb[i])) + "*" +
                                 std::string(param_name(kMf[i])) + " = " + std::to_string(tile) +
                                 " must exceed 2*radius = " + std::to_string(2 * sp.radius_[i]) +
                                 ".");
            });
          }
        }
        return true;
      case kUnrollDividesMerge:
        for (int d = 0; d < dims; ++d) {
          if (family && d == family->stream_axis(s))
            continue;
          const auto i = static_cast<std::size_t>(d);
          const int uf = s[kUf[i]];
          const int mf = s[kMf[i]];
          if (uf < 1 || mf < 1 || mf % uf != 0) {
            return fail([&] {
              return std::string(
                  std::string(param_name(kUf[i])) + "=" + std::to_string(uf) + " must divide " +
                  std::string(param_name(kMf[i])) + "=" + std::to_string(mf) +
                  " (unrolling along a tiled dimension covers the points a thread merges).");
            });
          }
        }
        return true;
      case kFamilyForm:
      case kFamilyRules:
        if (!family)
          return fail([&] { return unbuilt_sentence(*sp.ocs_, s); });
        for (const FamilyRule& rule : family->rules()) {
          if (rule.form == (r == kFamilyForm) && !rule.check(sp.shape_, s, why))
            return false;
        }
        return true;
      case kOwnParams:
        for (std::size_t i = kBaseParamCount; i < kParamCount; ++i) {
          const Param p = param_at(i);
          if (!family || family->owns(p) || s[p] == neutral_value(p))
            continue;
          return fail([&] {
            const KernelFamily* owner = sp.ocs_->owner(p);
            return std::string(param_name(p)) + "=" + std::to_string(s[p]) + " is read by " +
                   (owner ? "the " + std::string(owner->name()) + " family only"
                          : "no kernel family of this build") +
                   "; the " + std::string(family->name()) + " family's settings hold it at " +
                   std::to_string(neutral_value(p)) + ".";
          });
        }
        return true;
      case kDeclaredOc:
        if (!family || sp.ocs_->oc_of(s) >= 0)
          return true;  // no family: kFamilyForm says so
        return fail([&] {
          std::string rules;
          for (const Oc& oc : family->ocs())
            rules += (rules.empty() ? "" : "; ") + oc.rule();
          return "no OC of the " + std::string(family->name()) +
                 " family holds this setting (its OCs: " + rules + ").";
        });
      case kKernelPlan:
        return family ? plan_ok(*family, sp.shape_, s, sp.limits_, why)
                      : plan_ok(sp.shape_, s, sp.limits_, why);
      default:
        return true;
    }
  }

  // Every rule, fast path without messages, for settings drawn from an OC's parts (their
  // values are allowed by construction).
  static bool all_ok(const Space& sp, const Setting& s) {
    const KernelFamily* family = sp.ocs_->family_of(s);
    if (!family)
      return false;
    for (std::size_t p = 0; p < kParamCount; ++p) {
      if (!sp.stage_ok(s, p, family))
        return false;
    }
    return true;
  }

  // Validates one user/default value list and brings it into sorted, distinct form. A
  // parameter a family declares (an appended one it brings, a base one it reads alone) takes
  // the values that family allows (OwnParam); an appended parameter no family of `ocs`
  // declares takes its neutral value alone.
  static void validate_list(Param p, std::vector<int>& list, int dims, const OcTable& ocs) {
    const std::string who = "space parameter '" + std::string(param_name(p)) + "'";
    if (list.empty())
      throw InputError(who + " has no values; expected at least one.");
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    auto require = [&](bool ok, int v, const std::string& expected) {
      if (!ok) {
        throw InputError(who + " has value " + std::to_string(v) + "; expected " + expected + ".");
      }
    };
    const bool z_param = p == Param::tbz || p == Param::mfz || p == Param::ufz;
    if (const OwnParam* own = ocs.declaration(p)) {
      const std::string_view expected =
          dims == 2 && !own->expected_2d.empty() ? own->expected_2d : own->expected;
      for (const int v : list)
        require(own->allowed(v, dims), v, std::string(expected));
      return;
    }
    if (is_appended(p)) {
      const int neutral = neutral_value(p);
      for (const int v : list) {
        require(v == neutral, v,
                "only " + std::to_string(neutral) + " (no kernel family of this build reads it)");
      }
      return;
    }
    for (const int v : list) {
      if (dims == 2 && z_param)
        require(v == 1, v, "only 1 for a 2-D stencil");
      if (param_kind(p) == ParamKind::flag) {
        require(v == 0 || v == 1, v, "0 or 1");
        continue;
      }
      switch (p) {
        case Param::merge:
          require(v >= 0 && v <= 2, v, "0 (none), 1 (block) or 2 (cyclic)");
          break;
        case Param::tdeg:
          require(v >= 1 && v <= 64, v, "a time-step count from 1 to 64");
          break;
        case Param::tbx:
        case Param::tby:
        case Param::tbz:
          require(is_pow2(v) && v <= 1024, v, "a power of two from 1 to 1024");
          break;
        case Param::mfx:
        case Param::mfy:
        case Param::mfz:
          require(is_pow2(v) && v <= 64, v, "a power of two from 1 to 64");
          break;
        case Param::ufx:
        case Param::ufy:
        case Param::ufz:
          require(v >= 1 && v <= 64, v, "an unroll factor from 1 to 64");
          break;
        default:  // the flags above; a family's parameters (OwnParam) before
          break;
      }
    }
  }

  // The product sets making up OC `oc` (KernelFamily::space_parts: one per streaming axis of
  // a streaming OC). Only values that can never be valid are removed, so the valid settings
  // of the parts are exactly those of the OC. The generic part here: the OC's values fixed,
  // another family's parameters neutral (an appended one the OC's family does not own, in its
  // list or none; a base one another family reads alone, whatever its list), tdeg on the OC's
  // side of 1, merge none's factors 1, and uf_d at most the largest mf_d along every axis but
  // a streamed one.
  static std::vector<Space::Values> parts(const Space& sp, int oc) {
    const OcEntry* entry = sp.ocs_->find(oc);
    if (entry == nullptr)
      return {};
    Space::Values base = sp.values_;
    for (const OcValue& v : entry->oc->values)
      keep_only(base[index_of(v.param)], v.value);
    for (std::size_t i = kBaseParamCount; i < kParamCount; ++i) {
      if (!entry->family->owns(param_at(i)))
        keep_only(base[i], neutral_value(param_at(i)));
    }
    for (const KernelFamily* reader : sp.ocs_->families()) {
      if (reader == entry->family)
        continue;
      for (const OwnParam& o : reader->exclusive_params().params)
        base[index_of(o.param)] = {neutral_value(o.param)};
    }
    auto& tdeg = base[index_of(Param::tdeg)];
    tdeg = keep_if(tdeg, [&](int v) { return (v > 1) == entry->oc->temporal; });
    const auto& merge = base[index_of(Param::merge)];
    if (merge.size() == 1 && merge[0] == static_cast<int>(MergeKind::none)) {
      for (const Param p : kMf)
        keep_only(base[index_of(p)], 1);
    }
    std::vector<Space::Values> out;
    for (SpacePart& part : entry->family->space_parts(sp.shape_, *entry->oc, std::move(base))) {
      for (int d = 0; d < 3; ++d) {
        if (d == part.stream_axis)
          continue;
        const auto i = static_cast<std::size_t>(d);
        const auto& mf = part.values[index_of(kMf[i])];
        const int max_mf = mf.empty() ? 0 : mf.back();
        auto& uf = part.values[index_of(kUf[i])];
        uf = keep_if(uf, [&](int v) { return v <= max_mf; });
      }
      const bool empty = std::any_of(part.values.begin(), part.values.end(),
                                     [](const std::vector<int>& list) { return list.empty(); });
      if (!empty)
        out.push_back(std::move(part.values));
    }
    return out;
  }

  // A uniform draw from one product set. Each 64-bit engine output yields two 32-bit
  // halves mapped to an index by multiply-shift (bias below n / 2^32, immaterial here
  // and far cheaper than a division per parameter). An appended parameter draws only when
  // its list has a choice, so a part that holds it at one value (every OC but its family's)
  // draws what it drew before the parameter existed.
  static Setting draw(const Space::Values& part, Rng& rng) {
    Setting s;
    std::uint64_t bits = 0;
    std::size_t n = 0;  // halves drawn
    for (std::size_t p = 0; p < kParamCount; ++p) {
      const auto& list = part[p];
      if (p >= kBaseParamCount && list.size() == 1) {
        s.values[p] = list[0];
        continue;
      }
      if (n % 2 == 0)
        bits = rng();
      const std::uint64_t half = n % 2 == 0 ? (bits & 0xFFFFFFFFULL) : (bits >> 32);
      ++n;
      s.values[p] = list[(half * list.size()) >> 32];
    }
    return s;
  }

  // A uniform valid setting (canonical too when `kernels`) of the union of `parts` by
  // rejection (parts weighted by size).
  static std::optional<Setting> reject(const Space& sp,
                                       const std::vector<const Space::Values*>& parts, Rng& rng,
                                       int max_tries, bool kernels = false) {
    if (parts.empty())
      return std::nullopt;
    std::vector<double> cumulative;
    double total = 0;
    for (const auto* part : parts) {
      total += product(*part);
      cumulative.push_back(total);
    }
    for (int t = 0; t < max_tries; ++t) {
      const double u = rng.uniform() * total;
      const auto k = static_cast<std::size_t>(
          std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
      const Setting s = draw(*parts[std::min(k, parts.size() - 1)], rng);
      if (all_ok(sp, s) && (!kernels || sp.ocs_->canonical(sp.shape_, s) == s))
        return s;
    }
    return std::nullopt;
  }
};

std::vector<std::string> Space::constraints() {
  std::vector<std::string> out;
  for (const auto& [rule, text] : kRuleTexts) {
    if (rule != kOwnParams || kParamCount > kBaseParamCount)  // a rule only with such parameters
      out.emplace_back(text);
  }
  out.emplace_back(
      "every value in its parameter's list (a parameter one family reads alone: in that family's "
      "settings)");
  for (const KernelFamily* family : families()) {
    const ExclusiveParams alone = family->exclusive_params();
    if (!alone.params.empty()) {
      std::vector<std::string> names;
      for (const OwnParam& o : alone.params)
        names.emplace_back(param_name(o.param));
      out.push_back(std::string(family->name()) + " family: reads " + and_list(names) +
                    " alone (every other family's settings hold them at their neutral value)");
    }
    for (const FamilyRule& rule : family->rules())
      out.push_back(std::string(family->name()) + " family: " + std::string(rule.text));
  }
  return out;
}

Space::Values Space::default_values(int dims, const Grid& grid, const OcTable& ocs) {
  Values v;
  auto set = [&](Param p, std::vector<int> list) { v[index_of(p)] = std::move(list); };
  // Every flag (the OC switches, use_shared, use_constant) on and off, every merge kind.
  for (std::size_t i = 0; i < kBaseParamCount; ++i) {
    const Param p = param_at(i);
    set(p, param_kind(p) == ParamKind::flag ? std::vector<int>{0, 1}
                                            : std::vector<int>{neutral_value(p)});
  }
  set(Param::merge, {0, 1, 2});
  set(Param::tdeg, {1, 2, 3, 4, 6, 8, 12, 16});
  const std::vector<int> tb = powers_of_two(1, 1024);
  const std::vector<int> factors = {1, 2, 4, 8};
  set(Param::tbx, tb);
  set(Param::tby, tb);
  set(Param::tbz, dims == 3 ? tb : std::vector<int>{1});
  for (const Param p : kMf)
    set(p, factors);
  for (const Param p : kUf)
    set(p, factors);
  if (dims == 2) {
    set(Param::mfz, {1});
    set(Param::ufz, {1});
  }
  // A family's parameters (an appended one it brings, a base one it reads alone) take its
  // defaults (OwnParam), an appended one no family declares its neutral value.
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    if (const OwnParam* own = ocs.declaration(p))
      set(p, own->defaults(dims, grid));
    else if (is_appended(p))
      set(p, {neutral_value(p)});
  }
  return v;
}

Space::Space(const Stencil& stencil, const Grid& grid, const DeviceLimits& limits, Values values,
             const OcTable& ocs)
    : dims_(stencil.dims()),
      order_(stencil.order()),
      radius_{stencil.radius(0), stencil.radius(1), stencil.radius(2)},
      shape_(shape_of(stencil, grid)),
      grid_(grid),
      limits_(limits),
      ocs_(&ocs),
      values_(std::move(values)) {
  if (grid.nx < 1 || grid.ny < 1 || grid.nz < 1) {
    throw InputError("the grid extents must be at least 1 (got " + std::to_string(grid.nx) + "x" +
                     std::to_string(grid.ny) + "x" + std::to_string(grid.nz) + ").");
  }
  for (std::size_t p = 0; p < kParamCount; ++p) {
    SpaceRules::validate_list(param_at(p), values_[p], dims_, ocs);
  }
  oc_domains_.resize(kOcCount);
  oc_parts_.resize(kOcCount);
  for (int oc = 0; oc < kOcCount; ++oc) {
    auto& parts = oc_parts_[static_cast<std::size_t>(oc)];
    parts = SpaceRules::parts(*this, oc);
    auto& domain = oc_domains_[static_cast<std::size_t>(oc)];
    for (const auto& part : parts) {
      for (std::size_t p = 0; p < kParamCount; ++p) {
        domain[p].insert(domain[p].end(), part[p].begin(), part[p].end());
      }
    }
    for (auto& list : domain) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }
}

bool Space::stage_ok(const Setting& s, std::size_t p) const {
  return stage_ok(s, p, p < index_of(kFamilyKnown) ? nullptr : ocs_->family_of(s));
}

bool Space::stage_ok(const Setting& s, std::size_t p, const KernelFamily* family) const {
  for (const Rule r : rules_by_stage()[p]) {
    if (!SpaceRules::check(*this, s, r, family, nullptr))
      return false;
  }
  if (p < index_of(kFamilyKnown))
    return true;
  if (!family)
    return false;
  for (const FamilyRule& rule : family->rules()) {
    if (family_stage(rule) == p && !rule.check(shape_, s, nullptr))
      return false;
  }
  return true;
}

std::optional<std::string> Space::violation(const Setting& s) const {
  std::string why;
  const KernelFamily* family = ocs_->family_of(s);
  for (int r = 0; r < kRuleCount; ++r) {
    if (r == kAllowedValue) {
      for (std::size_t p = 0; p < kParamCount; ++p) {
        if (!SpaceRules::allowed(*this, s, param_at(p), family, &why))
          return why;
      }
    } else if (!SpaceRules::check(*this, s, static_cast<Rule>(r), family, &why)) {
      return why;
    }
  }
  return std::nullopt;
}

int Space::oc_of(const Setting& s) {
  return isletune::oc_of(s);
}

std::string Space::oc_name(int oc) {
  return isletune::oc_name(oc);
}

std::vector<OcCount> Space::count_per_oc(std::uint64_t seed, double enumerate_limit) const {
  std::vector<OcCount> out;
  for (int oc = 0; oc < kOcCount; ++oc) {
    const auto& parts = oc_parts_[static_cast<std::size_t>(oc)];
    if (parts.empty())
      continue;
    double raw = 0;
    for (const auto& part : parts)
      raw += product(part);
    OcCount c{oc, 0, true};
    if (raw <= enumerate_limit) {
      long long n = 0, k = 0;
      for_each_valid(oc, [&](const Setting& s) {
        ++n;
        k += ocs_->canonical(shape_, s) == s ? 1 : 0;
      });
      c.count = static_cast<double>(n);
      c.kernels = static_cast<double>(k);
    } else {
      // Seeded Monte-Carlo per part: at least 20000 draws, more while hits are rare.
      c.exact = false;
      Rng rng(seed, 0x5350414345ULL + static_cast<std::uint64_t>(oc));
      for (const auto& part : parts) {
        long long draws = 0, hits = 0, kernel_hits = 0;
        while (draws < 20000 || (hits < 2000 && draws < 200000)) {
          ++draws;
          const Setting s = SpaceRules::draw(part, rng);
          if (SpaceRules::all_ok(*this, s)) {
            ++hits;
            kernel_hits += ocs_->canonical(shape_, s) == s ? 1 : 0;
          }
        }
        c.count += static_cast<double>(hits) / static_cast<double>(draws) * product(part);
        c.kernels += static_cast<double>(kernel_hits) / static_cast<double>(draws) * product(part);
      }
    }
    if (c.count > 0)
      out.push_back(c);
  }
  return out;
}

double Space::size(std::uint64_t seed) const {
  double total = 0;
  for (const auto& c : count_per_oc(seed))
    total += c.count;
  return total;
}

std::optional<Setting> Space::random_in_oc(int oc, Rng& rng, int max_tries) const {
  if (oc < 0 || oc >= kOcCount)
    return std::nullopt;
  std::vector<const Values*> parts;
  for (const auto& part : oc_parts_[static_cast<std::size_t>(oc)])
    parts.push_back(&part);
  return SpaceRules::reject(*this, parts, rng, max_tries);
}

std::optional<Setting> Space::random_kernel_in_oc(int oc, Rng& rng, int max_tries) const {
  if (oc < 0 || oc >= kOcCount)
    return std::nullopt;
  std::vector<const Values*> parts;
  for (const auto& part : oc_parts_[static_cast<std::size_t>(oc)])
    parts.push_back(&part);
  return SpaceRules::reject(*this, parts, rng, max_tries, true);
}

std::optional<Setting> Space::random_setting(Rng& rng, int max_tries) const {
  std::vector<const Values*> parts;
  for (const auto& oc_parts : oc_parts_) {
    for (const auto& part : oc_parts)
      parts.push_back(&part);
  }
  return SpaceRules::reject(*this, parts, rng, max_tries);
}

}  // namespace isletune
