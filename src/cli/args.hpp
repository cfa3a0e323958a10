// A small command-line parser for the subcommands: positional arguments, `--name value`
// options, `--flag` switches and `--help`. Unknown options and missing values are one
// InputError sentence naming the subcommand and the option.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace isletune::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--out" → "dir"
  std::set<std::string> flags;                 // "--overwrite"
  bool help = false;

  [[nodiscard]] bool has(const std::string& flag) const { return flags.contains(flag); }
  [[nodiscard]] std::optional<std::string> option(const std::string& name) const;
};

// Parses `args` of subcommand `command`. `with_value` lists options taking a value,
// `switches` options without one.
[[nodiscard]] ParsedArgs parse_args(const std::string& command, const Args& args,
                                    const std::set<std::string>& with_value,
                                    const std::set<std::string>& switches);

// Checks the positional count; throws InputError with the usage line otherwise.
void expect_positional(const ParsedArgs& parsed, std::size_t count, const std::string& usage);

// Prints a subcommand's --help text followed by the exit-code table (common/exit_codes.hpp)
// on stdout; returns kExitOk.
int print_help(const char* help);

// Parses an unsigned integer option value; InputError naming the option otherwise.
[[nodiscard]] unsigned long long parse_unsigned(const std::string& option, const std::string& text);

}  // namespace isletune::cli
