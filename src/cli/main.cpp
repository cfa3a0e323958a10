// isletune entry point: dispatches `isletune COMMAND ARGS...` to the subcommands of
// commands.hpp. Bad input is one sentence on stderr and exit code kExitInput; nothing
// aborts. Exit codes: common/exit_codes.hpp (listed by every --help).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/exit_codes.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "run/signals.hpp"

namespace {

constexpr const char* kUsage =
    "usage: isletune COMMAND [ARGS] (each command has --help)\n"
    "\n"
    "  run CONFIG [--backend cuda|replay] [--out DIR] [--seed N] [--overwrite]\n"
    "                         tune (under mpirun/srun: one island per rank and GPU)\n"
    "  resume DIR             continue an interrupted run from its last generation\n"
    "  space CONFIG [--json]  parameters, constraints, OCs with counts, space size\n"
    "  report DIR|FILE [--json] [--top K]\n"
    "                         best setting, per-generation table, failures by status\n"
    "  export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]\n"
    "                         the best kernel as a standalone .cu; a Kernel Tuner cache\n"
    "  measure CONFIG (--random N|--exhaustive) -o FILE   record a replay dataset\n"
    "\n"
    "  --version              print the version\n";

// Longest message printed (a message quoting input is cut, never echoed whole).
constexpr std::size_t kMessageChars = 280;

using Command = int (*)(const isletune::cli::Args&);

#ifndef ISLETUNE_HAVE_MEASURE_EXPORT
// Stand-in while measure/export (src/cli/measure_command.cpp, export_command.cpp) are
// not part of this build.
int not_built(const isletune::cli::Args&) {
  std::fputs("isletune: this command is not built in this configuration.\n", stderr);
  return isletune::kExitInput;
}
#endif

// The subcommand of a name, or nullptr.
Command find_command(std::string_view name) {
  using namespace isletune::cli;
  if (name == "run")
    return run_command;
  if (name == "resume")
    return resume_command;
  if (name == "space")
    return space_command;
  if (name == "report")
    return report_command;
#ifdef ISLETUNE_HAVE_MEASURE_EXPORT
  if (name == "export")
    return export_command;
  if (name == "measure")
    return measure_command;
#else
  if (name == "export" || name == "measure")
    return not_built;
#endif
  return nullptr;
}

// A message without the "isletune NAME: ", "isletune: " or "isletune NAME " it may start
// with (main prints the prefix "isletune NAME: " once).
std::string without_prefix(const std::string& name, std::string message) {
  for (const std::string& prefix :
       {"isletune " + name + ": ", std::string("isletune: "), "isletune " + name + " "}) {
    if (message.rfind(prefix, 0) == 0)
      return message.substr(prefix.size());
  }
  return message;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    std::fputs(isletune::exit_codes_help().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? isletune::kExitInput : isletune::kExitOk;
  }
  const std::string name = argv[1];
  if (name == "--version") {
    std::printf("isletune %s\n", isletune::version());
    return isletune::kExitOk;
  }
  const Command command = find_command(name);
  if (command == nullptr) {
    std::fprintf(stderr,
                 "isletune: unknown command '%s' (expected run, resume, space, report, export "
                 "or measure; see isletune --help).\n",
                 isletune::printable(name, 40).c_str());
    return isletune::kExitInput;
  }
  // Before MPI starts (Open MPI keeps handlers already installed).
  if (name == "run" || name == "resume" || name == "measure")
    isletune::run::install_termination_handlers();
  // Messages are one line: control bytes escaped and length bounded whatever they quote.
  try {
    return command(isletune::cli::Args(argv + 2, argv + argc));
  } catch (const isletune::InputError& e) {
    std::fprintf(stderr, "isletune %s: %s\n", name.c_str(),
                 isletune::printable(without_prefix(name, e.what()), kMessageChars).c_str());
    return isletune::kExitInput;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the system refuses (too long, not a directory, no permission).
    std::fprintf(stderr, "isletune %s: %s: %s.\n", name.c_str(),
                 isletune::display_path(e.path1()).c_str(), e.code().message().c_str());
    return isletune::kExitInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "isletune %s: out of memory.\n", name.c_str());
    return isletune::kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "isletune %s: internal error: %s\n", name.c_str(),
                 isletune::printable(e.what(), kMessageChars).c_str());
    return isletune::kExitInternal;
  }
}
