// The exit codes of `isletune`: the one place they are defined. main.cpp, the run library
// and every subcommand's --help (cli/args.cpp `print_help`) take them from here;
// tests/cli/test_cli.py checks that each --help lists exactly this table.
#pragma once

#include <string>

namespace isletune {

enum ExitCode : int {
  kExitOk = 0,        // done (also: a run stopped by a signal, resumable)
  kExitInternal = 1,  // internal error, out of memory, a rank that failed mid-search
  kExitInput = 2,     // bad input: arguments, config, dataset, trace, output directory
  kExitTrace = 3,     // a trace could not be written (disk full, ...): resume after fixing it
};

struct ExitCodeInfo {
  ExitCode code;
  const char* meaning;
};

inline constexpr ExitCodeInfo kExitCodes[] = {
    {kExitOk, "success (a run stopped by a signal also exits 0 and can be resumed)"},
    {kExitInternal, "internal error, out of memory, or a rank that failed during the search"},
    {kExitInput, "bad input: arguments, config, dataset, trace or output directory"},
    {kExitTrace,
     "the trace could not be written (e.g. disk full); `isletune resume DIR` after "
     "fixing it"},
};

// The "exit codes:" block every --help ends with.
inline std::string exit_codes_help() {
  std::string out = "\nexit codes:\n";
  for (const ExitCodeInfo& e : kExitCodes)
    out += "  " + std::to_string(static_cast<int>(e.code)) + "  " + e.meaning + "\n";
  return out;
}

}  // namespace isletune
