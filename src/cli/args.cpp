// Command-line parsing for the subcommands (see args.hpp).
#include "cli/args.hpp"

#include <charconv>
#include <cstdio>

#include "common/error.hpp"
#include "common/exit_codes.hpp"

namespace isletune::cli {

std::optional<std::string> ParsedArgs::option(const std::string& name) const {
  const auto it = options.find(name);
  if (it == options.end())
    return std::nullopt;
  return it->second;
}

ParsedArgs parse_args(const std::string& command, const Args& args,
                      const std::set<std::string>& with_value,
                      const std::set<std::string>& switches) {
  ParsedArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::string name = a;
      std::optional<std::string> value;
      if (const auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
      }
      if (with_value.contains(name)) {
        if (!value) {
          if (i + 1 >= args.size()) {
            throw InputError("option " + name + " of `isletune " + command + "` needs a value.");
          }
          value = args[++i];
        }
        out.options[name] = *value;
      } else if (switches.contains(name) && !value) {
        out.flags.insert(name);
      } else {
        std::string allowed;
        for (const auto& o : with_value)
          allowed += " " + o;
        for (const auto& o : switches)
          allowed += " " + o;
        throw InputError("unknown option " + a + " for `isletune " + command +
                         "` (allowed:" + allowed + " --help).");
      }
    } else {
      out.positional.push_back(a);
    }
  }
  return out;
}

void expect_positional(const ParsedArgs& parsed, std::size_t count, const std::string& usage) {
  if (parsed.positional.size() != count) {
    throw InputError("expected " + std::to_string(count) + " argument" + (count == 1 ? "" : "s") +
                     ", got " + std::to_string(parsed.positional.size()) + "; usage: " + usage);
  }
}

int print_help(const char* help) {
  std::fputs(help, stdout);
  std::fputs(exit_codes_help().c_str(), stdout);
  return kExitOk;
}

unsigned long long parse_unsigned(const std::string& option, const std::string& text) {
  unsigned long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw InputError("option " + option + " expects a non-negative integer, got '" + text + "'.");
  }
  return v;
}

}  // namespace isletune::cli
