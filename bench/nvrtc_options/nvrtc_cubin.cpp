// The cubin NVRTC makes of SOURCE with OPTIONS, written to OUT (to compare options).
//   nvrtc_cubin SOURCE OUT OPTIONS...
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
  for (int i = 3; i < argc; ++i)
    o.push_back(argv[i]);
  nvrtcProgram p;
  nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
  nvrtcResult rc = nvrtcCompileProgram(p, (int)o.size(), o.data());
  size_t cn = 0;
  nvrtcGetCUBINSize(p, &cn);
  std::string c(cn, 0);
  nvrtcGetCUBIN(p, c.data());
  std::ofstream(argv[2], std::ios::binary) << c;
  return rc;
}
