// YAML loader for stencil files and the typical library (the only yaml-cpp code of the
// stencil side; run configs are parsed elsewhere and call stencil_from_points).
#include "config/stencil_library.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "common/error.hpp"
#include "common/text.hpp"

namespace isletune {
namespace {

// Reads a scalar of type T at `node`, or throws naming file and key. A stencil file may be
// any file the user can read (`stencil: {file: ...}`), so its messages name the file, the
// key and the line, never what the file holds.
template <typename T>
T scalar(const YAML::Node& node, const std::string& where, const std::string& expected) {
  if (!node.IsScalar())
    throw InputError(where + " must be " + expected + ".");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(where + " must be " + expected + " (line " +
                     std::to_string(node.Mark().line + 1) + ").");
  }
}

// The stencil described by a parsed YAML document of file `path`.
Stencil stencil_from_node(const YAML::Node& root, const std::string& path) {
  if (!root.IsMap()) {
    throw InputError(path + ": expected a mapping with keys name, dims and points.");
  }
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      throw InputError(path +
                       ": has a key that is a list or mapping; expected name, dims and "
                       "points.");
    }
    const std::string key = entry.first.Scalar();
    if (key != "name" && key != "dims" && key != "points") {
      throw InputError(path + ": line " + std::to_string(entry.first.Mark().line + 1) +
                       " holds a key other than name, dims and points; expected a stencil file "
                       "with only those keys.");
    }
  }
  for (const char* key : {"name", "dims", "points"}) {
    if (!root[key])
      throw InputError(path + ": missing key '" + key + "'.");
  }
  const auto name = scalar<std::string>(root["name"], path + ": key 'name'", "a string");
  if (!is_plain_name(name)) {
    throw InputError(path + ": key 'name' (line " + std::to_string(root["name"].Mark().line + 1) +
                     ") must be " + kPlainNameRule + ".");
  }
  const int dims = scalar<int>(root["dims"], path + ": key 'dims'", "2 or 3");
  const YAML::Node points = root["points"];
  if (!points.IsSequence()) {
    throw InputError(path + ": key 'points' must be a list of [dx, dy(, dz), coefficient] rows.");
  }
  std::vector<std::vector<double>> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const YAML::Node row = points[i];
    const std::string at = path + ": points[" + std::to_string(i) + "]";
    if (!row.IsSequence())
      throw InputError(at + " must be a list of numbers.");
    std::vector<double> values;
    for (std::size_t j = 0; j < row.size(); ++j) {
      values.push_back(scalar<double>(row[j], at + "[" + std::to_string(j) + "]", "a number"));
    }
    rows.push_back(std::move(values));
  }
  return stencil_from_points(name, dims, rows, path + ": points");
}

}  // namespace

Stencil stencil_from_points(const std::string& name, int dims,
                            const std::vector<std::vector<double>>& points,
                            const std::string& where) {
  if (dims != 2 && dims != 3) {
    throw InputError(where + ": stencil " + quote_value(name) + " has dims " +
                     std::to_string(dims) + "; expected 2 or 3.");
  }
  if (points.empty()) {
    throw InputError(where + ": stencil " + quote_value(name) +
                     " has no points; expected at least one row.");
  }
  std::vector<Offset> offsets;
  std::vector<double> coefficients;
  const std::size_t width = static_cast<std::size_t>(dims) + 1;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& row = points[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (row.size() != width) {
      throw InputError(at + " has " + std::to_string(row.size()) + " numbers; expected " +
                       (dims == 3 ? "[dx, dy, dz, coefficient]" : "[dx, dy, coefficient]") +
                       " for a " + std::to_string(dims) + "-D stencil.");
    }
    std::array<int, 3> o{};
    for (std::size_t a = 0; a < static_cast<std::size_t>(dims); ++a) {
      const double v = row[a];
      if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 1000) {
        throw InputError(at + " has offset " + std::to_string(v) + "; expected an integer.");
      }
      o[a] = static_cast<int>(v);
    }
    offsets.push_back(Offset{o[0], o[1], o[2]});
    coefficients.push_back(row[width - 1]);
  }
  try {
    return Stencil::make(name, dims, std::move(offsets), std::move(coefficients));
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
}

Stencil load_stencil_file(const std::string& file) {
  const std::string path = display_path(file);
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw InputError(path + ": cannot open the stencil file.");
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(path + ": at line " + std::to_string(e.mark.line + 1) +
                     " the YAML is nested deeper than yaml-cpp reads; a stencil file nests "
                     "two levels.");
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                     printable(e.msg, 80) + ".");
  }
  return stencil_from_node(root, path);
}

std::vector<std::string> stencil_library_dirs() {
  std::vector<std::string> dirs;
  if (const char* data = std::getenv("ISLETUNE_DATA_DIR"); data != nullptr && *data != '\0') {
    dirs.push_back(std::string(data) + "/stencils");
  }
  // An installed isletune (cmake --install): PREFIX/share/isletune/stencils beside PREFIX/bin.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::is_directory(
                 exe.parent_path().parent_path() / "share" / "isletune" / "stencils", ec)) {
    dirs.push_back((exe.parent_path().parent_path() / "share" / "isletune" / "stencils").string());
  }
  dirs.push_back(std::string(ISLETUNE_SOURCE_DIR) + "/config/stencils");
  return dirs;
}

Stencil load_library_stencil(const std::string& name) {
  const bool plain = !name.empty() && name.find_first_of("/\\.") == std::string::npos;
  if (!plain) {
    throw InputError("stencil name " + quote_value(name) +
                     " is not a library name; expected e.g. star2d1r (or give a file path).");
  }
  std::string searched;
  for (const auto& dir : stencil_library_dirs()) {
    const std::string path = dir + "/" + name + ".yaml";
    if (std::error_code ec; std::filesystem::is_regular_file(path, ec)) {
      Stencil s = load_stencil_file(path);
      if (s.name() != name) {
        throw InputError(path + ": key 'name' is '" + s.name() + "'; expected '" + name +
                         "' to match the file name.");
      }
      return s;
    }
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  throw InputError("unknown stencil " + quote_value(name) + ": no such .yaml in " + searched +
                   " (the library holds {star,box,cross}{2d,3d}{1..4}r).");
}

}  // namespace isletune
