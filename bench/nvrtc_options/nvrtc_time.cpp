// NVRTC time of one source with the given options (and the phases with --time=FILE).
//   nvrtc_time SOURCE OPTIONS...
#include <nvrtc.h>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  std::ifstream f(argv[1]);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string src = ss.str();
  std::vector<const char*> o;
  for (int i = 2; i < argc; ++i)
    o.push_back(argv[i]);
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram p;
  nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
  nvrtcResult rc = nvrtcCompileProgram(p, (int)o.size(), o.data());
  auto t1 = std::chrono::steady_clock::now();
  size_t n = 0;
  nvrtcGetProgramLogSize(p, &n);
  std::string log(n, 0);
  nvrtcGetProgramLog(p, log.data());
  size_t cn = 0;
  nvrtcGetCUBINSize(p, &cn);
  std::printf("rc=%d ms=%.1f cubin=%zu %s\n", (int)rc,
              std::chrono::duration<double, std::milli>(t1 - t0).count(), cn,
              log.size() > 1 ? log.substr(0, 300).c_str() : "");
}
