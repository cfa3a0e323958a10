// The isletune version: `git describe` of the built checkout (VERSION-g<hash>[-dirty]
// without a tag), or the project version of CMakeLists.txt outside git. Its one home is the
// source cmake/write_version.cmake generates at every build; --version, every trace's root
// attribute isletune_version and every exported .cu carry it.
#pragma once

namespace isletune {

[[nodiscard]] const char* version();

}  // namespace isletune
