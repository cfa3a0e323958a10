// The `isletune` subcommands. Each takes the arguments after its name and returns the
// process exit code; main.cpp dispatches by name. Each prints its own --help.
#pragma once

#include <string>
#include <vector>

namespace isletune::cli {

using Args = std::vector<std::string>;

int run_command(const Args& args);      // isletune run CONFIG [--backend] [--out] [--seed] ...
int resume_command(const Args& args);   // isletune resume DIR
int space_command(const Args& args);    // isletune space CONFIG
int report_command(const Args& args);   // isletune report DIR|FILE
int export_command(const Args& args);   // isletune export DIR --best -o best.cu
int measure_command(const Args& args);  // isletune measure CONFIG (--random N|--exhaustive) -o F

}  // namespace isletune::cli
