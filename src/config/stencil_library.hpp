// Loading stencils from YAML: the typical library in config/stencils/<name>.yaml and any
// user stencil file of the same format:
//
//   name: box3d2r
//   dims: 3
//   points:
//     - [dx, dy, dz, coefficient]   # 2-D rows: [dx, dy, coefficient]
//
// Every error is an InputError of one sentence naming the file (or `where`) and the key.
#pragma once

#include <string>
#include <vector>

#include "stencil/stencil.hpp"

namespace isletune {

// Reads a stencil file. Unknown keys, missing keys, malformed rows and every Stencil::make
// check are reported with the file name and key.
[[nodiscard]] Stencil load_stencil_file(const std::string& path);

// Directories searched for library stencils, in order: $ISLETUNE_DATA_DIR/stencils (an
// installed data directory) and <source dir>/config/stencils.
[[nodiscard]] std::vector<std::string> stencil_library_dirs();

// The library stencil `name` (e.g. "star2d1r") from the first directory holding
// <name>.yaml; the file's own name key must match.
[[nodiscard]] Stencil load_library_stencil(const std::string& name);

// A stencil from rows of numbers, as written inline in a run config: each row is
// [dx, dy, c] (2-D) or [dx, dy, dz, c] (3-D) with integral offsets. `where` names the
// place for messages, e.g. "run.yaml: stencil.points".
[[nodiscard]] Stencil stencil_from_points(const std::string& name, int dims,
                                          const std::vector<std::vector<double>>& points,
                                          const std::string& where);

}  // namespace isletune
