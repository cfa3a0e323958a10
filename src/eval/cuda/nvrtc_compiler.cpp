// NVRTC compilation to cubin with a disk cache keyed by source (without its comment lines),
// options, version and arch.
#include "eval/cuda/nvrtc_compiler.hpp"

#include <nvrtc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel/source_text.hpp"

namespace isletune::cuda {
namespace {

std::uint64_t fnv1a(std::uint64_t h, const std::string& text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h ^ 0xff;  // separator, so ("ab","c") and ("a","bc") differ
}

// Reads a whole file; false if it cannot be read.
bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::ostringstream s;
  s << f.rdbuf();
  out = s.str();
  return static_cast<bool>(f) || f.eof();
}

// Writes a file atomically (temporary + rename) so concurrent workers never see half a cubin.
void write_file_atomic(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "_" +
                          std::to_string(std::hash<std::string>{}(data)&0xffff);
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f)
      return;
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f)
      return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

}  // namespace

std::string cubin_cache_key(const std::string& source, const std::vector<std::string>& options,
                            const std::string& nvrtc_version, int arch) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv1a(h, source);
  for (const auto& o : options)
    h = fnv1a(h, o);
  h = fnv1a(h, nvrtc_version);
  h = fnv1a(h, std::to_string(arch));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("ISLETUNE_CACHE_DIR"); d && *d)
    return d;
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/isletune/cubins";
  }
  return {};
}

CubinCompiler::CubinCompiler(int arch, std::string cache_dir)
    : arch_(arch), cache_dir_(std::move(cache_dir)), version_(nvrtc_version()) {
  options_ = {"--gpu-architecture=sm_" + std::to_string(arch_), "-std=c++17"};
  if (!cache_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    if (ec)
      cache_dir_.clear();
  }
}

// Comment lines do not change the cubin: settings that build the same kernel share one.
std::string CubinCompiler::key(const std::string& source) const {
  return cubin_cache_key(without_comment_lines(source), options_, version_, arch_);
}

std::optional<CompileResult> CubinCompiler::cached(const std::string& source) const {
  if (cache_dir_.empty())
    return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  if (!read_file(cache_dir_ + "/" + key(source) + ".cubin", r.cubin) || r.cubin.empty())
    return std::nullopt;
  r.ok = true;
  r.cached = true;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void CubinCompiler::store(const std::string& source, const CompileResult& r) const {
  if (r.ok && !r.cached && !cache_dir_.empty())
    write_file_atomic(cache_dir_ + "/" + key(source) + ".cubin", r.cubin);
}

CompileResult CubinCompiler::compile(const std::string& source) const {
  return compile(source, [this](const std::string& s) { return compile_fresh(s); });
}

CompileResult CubinCompiler::compile(
    const std::string& source,
    const std::function<CompileResult(const std::string&)>& fresh) const {
  if (auto hit = cached(source))
    return std::move(*hit);
  CompileResult r = fresh(source);
  store(source, r);
  return r;
}

CompileResult CubinCompiler::compile_fresh(const std::string& source) const {
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  CompileResult r;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), "isletune_kernel.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed";
    r.ms = elapsed_ms();
    return r;
  }
  std::vector<const char*> opts;
  for (const auto& o : options_)
    opts.push_back(o.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    r.log.resize(log_size);
    nvrtcGetProgramLog(prog, r.log.data());
    r.log.resize(log_size - 1);
  }
  if (rc == NVRTC_SUCCESS) {
    std::size_t size = 0;
    if (nvrtcGetCUBINSize(prog, &size) == NVRTC_SUCCESS && size > 0) {
      r.cubin.resize(size);
      r.ok = nvrtcGetCUBIN(prog, r.cubin.data()) == NVRTC_SUCCESS;
    }
    if (!r.ok && r.log.empty())
      r.log = "NVRTC produced no cubin";
  } else if (r.log.empty()) {
    r.log = nvrtcGetErrorString(rc);
  }
  nvrtcDestroyProgram(&prog);
  r.ms = elapsed_ms();
  return r;
}

}  // namespace isletune::cuda
