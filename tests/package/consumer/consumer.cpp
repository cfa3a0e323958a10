// Uses isletune::core as an outside project would: a typical stencil, the default space of
// a grid on the H100 defaults, its naive setting. Prints "VERSION SIZE KEY" for the test.
#include <cstdio>

#include "common/version.hpp"
#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

int main() {
  const isletune::Stencil stencil = isletune::typical_stencil("star2d1r");
  const isletune::Grid grid{4096, 4096, 1};
  const isletune::Space space(stencil, grid, isletune::DeviceLimits{},
                              isletune::Space::default_values(stencil.dims(), grid));
  const isletune::Setting naive = isletune::naive_setting(stencil.dims());
  std::printf("%s %.0f %s %s\n", isletune::version(), space.size(1),
              isletune::canonical_key(naive).c_str(), space.valid(naive) ? "valid" : "invalid");
  return 0;
}
