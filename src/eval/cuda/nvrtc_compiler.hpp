// NVRTC → cubin compilation with an on-disk cubin cache, used by the CUDA worker (and by
// the codegen tests, which compile generated sources on machines without a GPU).
// Links NVRTC only; no CUDA driver or runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace isletune::cuda {

struct CompileResult {
  bool ok = false;
  std::string cubin;  // the binary image, when ok
  std::string log;    // NVRTC's log (errors and warnings)
  double ms = 0;      // wall time of compiling or reading the cache
  bool cached = false;
  // The cubin loaded on the device by the thread that compiled it (the worker's queue: the
  // GPU's thread then only runs it), and the time that took; null: not loaded yet.
  std::shared_ptr<void> module;
  double load_ms = 0;
};

// Cache key of a cubin: 64-bit FNV-1a over source, options, NVRTC version and arch, in hex.
[[nodiscard]] std::string cubin_cache_key(const std::string& source,
                                          const std::vector<std::string>& options,
                                          const std::string& nvrtc_version, int arch);

// "MAJOR.MINOR" of the NVRTC library in use.
[[nodiscard]] std::string nvrtc_version();

// $ISLETUNE_CACHE_DIR, else ~/.cache/isletune/cubins (empty string: no cache).
[[nodiscard]] std::string default_cache_dir();

class CubinCompiler {
 public:
  // arch = compute capability as major*10 + minor (90 for sm_90); cache_dir "" disables
  // the disk cache.
  CubinCompiler(int arch, std::string cache_dir);

  // Compiles one source straight to an sm_XX cubin, or reads it from the cache (and stores a
  // fresh one there). Thread-safe.
  [[nodiscard]] CompileResult compile(const std::string& source) const;
  // The same, with `fresh` compiling what the cache does not hold (e.g. in a compile process).
  [[nodiscard]] CompileResult compile(
      const std::string& source,
      const std::function<CompileResult(const std::string&)>& fresh) const;
  // NVRTC alone, no cache.
  [[nodiscard]] CompileResult compile_fresh(const std::string& source) const;

  [[nodiscard]] const std::vector<std::string>& options() const { return options_; }
  [[nodiscard]] std::string key(const std::string& source) const;

 private:
  int arch_;
  std::string cache_dir_;
  std::string version_;
  std::vector<std::string> options_;

  // The cached cubin (nullopt: none, or no cache), and storing a fresh one (nothing for a
  // failed, cached or cache-less one).
  [[nodiscard]] std::optional<CompileResult> cached(const std::string& source) const;
  void store(const std::string& source, const CompileResult& r) const;
};

}  // namespace isletune::cuda
