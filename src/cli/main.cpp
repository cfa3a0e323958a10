// isletune entry point (subcommands are added by the CLI module).
#include <cstdio>

int main() {
  std::puts("isletune: under construction");
  return 0;
}
