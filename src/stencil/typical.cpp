// Typical stencil shapes, the coefficient rule and the library YAML text.
#include "stencil/typical.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/error.hpp"

namespace isletune {
namespace {

constexpr std::array<TypicalShape, 3> kShapes = {TypicalShape::star, TypicalShape::box,
                                                 TypicalShape::cross};

// splitmix64 finaliser: a fixed, platform-independent hash.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Hash of an offset (components biased to be non-negative) and a salt.
std::uint64_t offset_hash(const Offset& o, std::uint64_t salt) {
  const auto part = [](int v) { return static_cast<std::uint64_t>(v + 64) & 0xFFFF; };
  return mix((part(o.x) << 32) ^ (part(o.y) << 16) ^ part(o.z) ^ (salt << 48));
}

}  // namespace

std::string_view shape_name(TypicalShape shape) {
  switch (shape) {
    case TypicalShape::star:
      return "star";
    case TypicalShape::box:
      return "box";
    case TypicalShape::cross:
      return "cross";
  }
  return "star";
}

std::string typical_name(const TypicalName& t) {
  return std::string(shape_name(t.shape)) + std::to_string(t.dims) + "d" + std::to_string(t.order) +
         "r";
}

std::optional<TypicalName> parse_typical_name(std::string_view name) {
  for (const TypicalShape shape : kShapes) {
    for (int dims = 2; dims <= 3; ++dims) {
      for (int order = 1; order <= 4; ++order) {
        const TypicalName t{shape, dims, order};
        if (typical_name(t) == name)
          return t;
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> typical_names() {
  std::vector<std::string> names;
  for (const TypicalShape shape : kShapes) {
    for (int dims = 2; dims <= 3; ++dims) {
      for (int order = 1; order <= 4; ++order)
        names.push_back(typical_name({shape, dims, order}));
    }
  }
  return names;
}

std::vector<Offset> typical_offsets(TypicalShape shape, int dims, int order) {
  std::set<Offset> points;
  points.insert(Offset{});
  const int zmax = dims == 3 ? order : 0;
  for (int x = -order; x <= order; ++x) {
    for (int y = -order; y <= order; ++y) {
      for (int z = -zmax; z <= zmax; ++z) {
        const int nonzero = (x != 0) + (y != 0) + (z != 0);
        const int ax = std::abs(x), ay = std::abs(y), az = std::abs(z);
        bool keep = false;
        switch (shape) {
          case TypicalShape::star:
            keep = nonzero == 1;
            break;
          case TypicalShape::box:
            keep = true;
            break;
          case TypicalShape::cross:
            keep = nonzero == dims && ax == ay && (dims == 2 || ay == az);
            break;
        }
        if (keep)
          points.insert(Offset{x, y, z});
      }
    }
  }
  return {points.begin(), points.end()};
}

std::vector<double> typical_coefficients(const std::vector<Offset>& offsets) {
  constexpr unsigned __int128 kTotal = static_cast<unsigned __int128>(1) << 50;
  const std::size_t n = offsets.size();
  std::vector<double> c(n);
  for (std::uint64_t salt = 0;; ++salt) {
    std::vector<std::uint64_t> weight(n);
    unsigned __int128 sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      weight[k] = (1ULL << 30) + (offset_hash(offsets[k], salt) & ((1ULL << 30) - 1));
      sum += weight[k];
    }
    std::vector<std::uint64_t> m(n);
    unsigned __int128 assigned = 0;
    for (std::size_t k = 0; k < n; ++k) {
      m[k] = static_cast<std::uint64_t>(weight[k] * kTotal / sum);
      assigned += m[k];
    }
    for (std::size_t k = 0; assigned < kTotal; ++k, ++assigned)
      ++m[k];
    if (std::set<std::uint64_t>(m.begin(), m.end()).size() != n)
      continue;
    for (std::size_t k = 0; k < n; ++k)
      c[k] = static_cast<double>(m[k]) * 0x1.0p-50;
    return c;
  }
}

Stencil typical_stencil(std::string_view name) {
  const auto t = parse_typical_name(name);
  if (!t) {
    throw InputError("'" + std::string(name) +
                     "' is not a typical stencil; expected {star,box,cross}{2d,3d}{1..4}r.");
  }
  auto offsets = typical_offsets(t->shape, t->dims, t->order);
  auto coefficients = typical_coefficients(offsets);
  return Stencil::make(std::string(name), t->dims, std::move(offsets), std::move(coefficients));
}

std::string stencil_yaml_text(const Stencil& stencil) {
  std::string text = "name: " + stencil.name() + "\ndims: " + std::to_string(stencil.dims()) +
                     "\npoints:  # [dx, dy" + (stencil.dims() == 3 ? ", dz" : "") +
                     ", coefficient]\n";
  char buffer[64];
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[static_cast<std::size_t>(k)];
    const double c = stencil.coefficients()[static_cast<std::size_t>(k)];
    if (stencil.dims() == 3) {
      std::snprintf(buffer, sizeof buffer, "  - [%d, %d, %d, %.17g]\n", o.x, o.y, o.z, c);
    } else {
      std::snprintf(buffer, sizeof buffer, "  - [%d, %d, %.17g]\n", o.x, o.y, c);
    }
    text += buffer;
  }
  return text;
}

}  // namespace isletune
