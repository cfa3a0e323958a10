// The window tiling of the tensor-core family (see the header).
#include "kernel/mma_tiling.hpp"

#include <map>
#include <stdexcept>

namespace isletune {
namespace {

int round_up(int a, int b) {
  return (a + b - 1) / b * b;
}

}  // namespace

StencilReach kernel_reach(const StencilReach& reach, int dims) {
  if (dims == 3)
    return reach;
  StencilReach k;
  k.lo = {reach.lo[0], 0, reach.lo[1]};
  k.hi = {reach.hi[0], 0, reach.hi[1]};
  return k;
}

MmaTiling mma_tiling(const StencilReach& grid_reach, int dims) {
  MmaTiling t;
  t.dims = dims;
  const StencilReach r = kernel_reach(grid_reach, dims);
  t.lo = r.lo;
  t.hi = r.hi;
  const bool flat = dims == 2;
  t.block = flat ? std::array<int, 3>{4, 1, 2} : std::array<int, 3>{2, 2, 2};
  t.window = {round_up(t.block[0] + r.lo[0] + r.hi[0], flat ? 4 : 2),
              flat ? 1 : round_up(t.block[1] + r.lo[1] + r.hi[1], 2),
              t.block[2] + r.lo[2] + r.hi[2]};
  t.np = (t.window[2] + t.block[2] - 1) / t.block[2];
  const int wx = t.window[0], wy = t.window[1];
  if (flat) {
    for (int d = 0; d < wx / 8; ++d)
      t.descriptors.push_back({MmaDesc::p81, 8 * d, 0});
    t.pairs = wx / 8;
    for (int d = 0; d < (wx % 8) / 4; ++d)
      t.descriptors.push_back({MmaDesc::s41, 8 * t.pairs + 4 * d, 0});
  } else {
    for (int y = 0; y < wy / 2; ++y) {
      for (int x = 0; x < wx / 4; ++x)
        t.descriptors.push_back({MmaDesc::p42, 4 * x, 2 * y});
    }
    if (wx % 4 != 0) {  // the last two columns: 2 x 4 pairs, then a 2 x 2 single
      for (int y = 0; y < wy / 4; ++y)
        t.descriptors.push_back({MmaDesc::p24, wx - 2, 4 * y});
    }
    t.pairs = static_cast<int>(t.descriptors.size());
    if (wx % 4 != 0 && wy % 4 != 0)
      t.descriptors.push_back({MmaDesc::s22, wx - 2, wy - 2});
  }
  t.singles = static_cast<int>(t.descriptors.size()) - t.pairs;
  // Units: two pairs a k16, a leftover pair a k8; four singles a k16, two a k8, one a k4.
  const int npr = t.block[2] * t.pairs, nsg = t.block[2] * t.singles;
  int base = 0;
  auto add = [&](int k, bool pair, std::vector<int> items, int doubles) {
    t.units.push_back({k, pair, std::move(items), base});
    base += doubles;
  };
  for (int u = 0; u < npr / 2; ++u)
    add(16, true, {2 * u, 2 * u + 1}, 4);
  if (npr % 2 != 0)
    add(8, true, {npr - 1}, 2);
  int s = 0;
  for (; s + 4 <= nsg; s += 4)
    add(16, false, {s, s + 1, s + 2, s + 3}, 4);
  if (nsg - s >= 2) {
    add(8, false, {s, s + 1}, 2);
    s += 2;
  }
  if (nsg - s == 1)
    add(4, false, {s}, 2);  // one patch, padded to a lane's pair of doubles
  t.lane_doubles = base;
  return t;
}

std::array<int, 2> MmaTiling::position(int d, int e, int q) const {
  const MmaDescriptor& s = descriptors.at(static_cast<std::size_t>(d));
  switch (s.type) {
    case MmaDesc::p81:
      return {s.dx + 2 * q + e, s.dy};
    case MmaDesc::p42:
      return {s.dx + 2 * (q % 2) + e, s.dy + q / 2};
    case MmaDesc::p24:
      return {s.dx + e, s.dy + q};
    case MmaDesc::s22:
      return {s.dx + q % 2, s.dy + q / 2};
    case MmaDesc::s41:
      return {s.dx + q, s.dy};
  }
  throw std::logic_error("MmaTiling::position: unknown descriptor type");
}

MmaPatch MmaTiling::patch(int u, int p) const {
  const MmaUnit& unit = units.at(static_cast<std::size_t>(u));
  if (unit.pair) {
    const int pr = unit.items.at(static_cast<std::size_t>(p / 2));
    return {pr / pairs, pr % pairs, p % 2};
  }
  const int sg = unit.items.at(static_cast<std::size_t>(p));
  return {sg / singles, pairs + sg % singles, 0};
}

std::vector<double> MmaTiling::coefficient_table(const Stencil& stencil) const {
  std::map<std::array<int, 3>, double> coef;  // kernel axes (x, y, s)
  for (std::size_t k = 0; k < stencil.offsets().size(); ++k) {
    const Offset& o = stencil.offsets()[k];
    const std::array<int, 3> at =
        dims == 3 ? std::array<int, 3>{o.x, o.y, o.z} : std::array<int, 3>{o.x, 0, o.y};
    coef[at] = stencil.coefficients()[k];
  }
  std::vector<double> table(static_cast<std::size_t>(table_doubles()), 0.0);
  for (int j = 0; j < np; ++j) {
    for (int u = 0; u < static_cast<int>(units.size()); ++u) {
      const MmaUnit& unit = units[static_cast<std::size_t>(u)];
      for (int p = 0; p < unit.patches(); ++p) {
        const MmaPatch at = patch(u, p);
        const int ws = (np - 1 - j) * block[2] + at.plane;
        for (int lane = 0; lane < 32; ++lane) {
          const int n = lane / 4;
          const std::array<int, 2> w = position(at.desc, at.element, lane % 4);
          const std::array<int, 3> point{n % block[0], (n / block[0]) % block[1],
                                         n / (block[0] * block[1])};
          const std::array<int, 3> off{w[0] - lo[0] - point[0], w[1] - lo[1] - point[1],
                                       ws - lo[2] - point[2]};
          const auto found = coef.find(off);
          if (found == coef.end())
            continue;
          const std::size_t i = static_cast<std::size_t>(
              (j * lane_doubles + unit.base + 2 * (p / 2)) * 32 + 2 * lane + p % 2);
          table[i] = found->second;
        }
      }
    }
  }
  return table;
}

}  // namespace isletune
