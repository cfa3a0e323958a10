// unit.Export.*: `isletune export` and `isletune measure` as a user runs them, in every
// build (with or without the CUDA Toolkit): the binary links no CUDA library, export
// writes the standalone .cu and the project's one Kernel Tuner cache (the Python analysis
// package's export-kt runs the same writer), named after the recorded GPU; measure with the
// replay backend draws only recorded
// settings from a space that also holds part-2 settings, bad input is one sentence.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "trace/reader.hpp"

#ifdef ISLETUNE_BINARY

namespace fs = std::filesystem;

namespace {

const std::string kBinary = ISLETUNE_BINARY;
const std::string kAnalysis = ISLETUNE_ANALYSIS_DIR;
const std::string kSynthetic = std::string(ISLETUNE_TEST_DATA) + "/synthetic-star2d1r.h5";
const std::string kH200 = std::string(ISLETUNE_TEST_DATA) + "/h200-star2d1r.h5";

// What a command printed and returned.
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

// The whole text of a file ("" if missing).
std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fresh scratch directory per test.
class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("isletune-export-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a shell command line, capturing stdout, stderr and the exit code.
  Ran run(const std::string& command) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string line = command + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(line.c_str());
    Ran r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }

  // A replay config over the synthetic star2d1r dataset; `extra` adds space entries.
  fs::path replay_config(const std::string& extra) const {
    const fs::path p = dir_ / "replay.yaml";
    std::ofstream f(p);
    f << "stencil: star2d1r\ngrid: [4096, 4096]\nsteps: 48\nspace:\n"
         "  tbx: {values: [8, 32, 64, 128, 256]}\n  tby: {values: [1, 2, 4, 8, 16, 32]}\n"
         "  mfx: {values: [1, 2, 4]}\n  mfy: {values: [1, 2, 4]}\n"
         "  ufx: {values: [1, 2]}\n  ufy: {values: [1, 2]}\n"
      << extra << "evaluator:\n  backend: replay\n  dataset: " << kSynthetic << "\n";
    return p;
  }

  // The Python package's Kernel Tuner cache of a trace (isletune-analyze export-kt).
  Ran python_cache(const std::string& trace, const fs::path& out) const {
    return run("cd " + kAnalysis + " && ISLETUNE_BIN=" + kBinary +
               " /usr/bin/python3 -m isletune_analysis export-kt " + trace + " -o " + out.string());
  }

  // Compares two cache files field by field in Python; "" when equal, else the difference.
  std::string compare_caches(const fs::path& cpp, const fs::path& py) const {
    const fs::path script = dir_ / "compare.py";
    std::ofstream(script) << R"py(import json, math, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
def same(x, y, where):
    if isinstance(x, dict) and isinstance(y, dict):
        if list(x) != list(y):
            sys.exit(f"{where}: keys differ: {sorted(set(x) ^ set(y))[:5]} (or order)")
        for k in x:
            same(x[k], y[k], f"{where}/{k}")
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            sys.exit(f"{where}: {len(x)} vs {len(y)} items")
        for i, (u, v) in enumerate(zip(x, y)):
            same(u, v, f"{where}[{i}]")
    elif type(x) != type(y) and not (isinstance(x, (int, float)) and isinstance(y, (int, float))):
        sys.exit(f"{where}: {x!r} vs {y!r}")
    elif x != y:
        sys.exit(f"{where}: {x!r} vs {y!r}")
same(a, b, "")
print(len(a["cache"]), "entries equal")
)py";
    const Ran r =
        run("/usr/bin/python3 " + script.string() + " " + cpp.string() + " " + py.string());
    return r.code == 0 ? std::string() : r.out + r.err;
  }

  fs::path dir_;
};

// The isletune binary links no CUDA library, so it starts (replay, export) without a driver.
TEST_F(Export, BinaryLinksNoCudaLibrary) {
  const Ran r = run("ldd " + kBinary);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("libc.so"), std::string::npos) << r.out;  // ldd did list the libraries
  for (const char* lib : {"libcuda.", "libcudart", "libnvrtc", "libnvidia"})
    EXPECT_EQ(r.out.find(lib), std::string::npos) << lib << " in:\n" << r.out;
}

// One Kernel Tuner writer: `isletune-analyze export-kt` runs `isletune export`, so both
// files are byte-identical, on a dataset with every status and on a real H200 dataset; the
// device is the recorded GPU's name and every timestamp is Kernel Tuner's own shape.
TEST_F(Export, KernelTunerCacheHasOneWriter) {
  for (const std::string& trace : {kSynthetic, kH200}) {
    const fs::path cpp = dir_ / "cpp.json", py = dir_ / "py.json";
    fs::remove(cpp);  // outputs are new files (an existing one needs --overwrite)
    fs::remove(py);
    const Ran c = run(kBinary + " export " + trace + " --kernel-tuner-cache " + cpp.string());
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.out.find("Kernel Tuner cache"), std::string::npos) << c.out;
    const Ran p = python_cache(trace, py);
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(read_text(cpp), read_text(py)) << trace;
  }
  const fs::path h200 = dir_ / "cpp.json";
  const fs::path script = dir_ / "shape.py";
  std::ofstream(script) << R"py(import json, re, sys
doc = json.load(open(sys.argv[1]))
assert doc["device_name"] == "NVIDIA H200", doc["device_name"]
for e in doc["cache"].values():
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\+00:00", e["timestamp"]), e
print(len(doc["cache"]))
)py";
  const Ran check = run("/usr/bin/python3 " + script.string() + " " + h200.string());
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_EQ(check.out, "4000\n");
}

// A trace recorded by replay (whose environment older versions wrote as "replay: NVIDIA
// H200", and "replay: replay: ..." when replaying a replayed run) exports the GPU's name.
TEST_F(Export, KernelTunerDeviceIsTheGpuNameWithoutReplayMarks) {
  const fs::path copy = dir_ / "replayed.h5";
  fs::copy_file(kH200, copy);
  const fs::path script = dir_ / "mark.py";
  std::ofstream(script) << R"py(import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f["environment/rank_0000"].attrs["gpu_name"] = "replay: replay: NVIDIA H200"
)py";
  ASSERT_EQ(run("/usr/bin/python3 " + script.string() + " " + copy.string()).code, 0);
  const fs::path kt = dir_ / "kt.json";
  const Ran c = run(kBinary + " export " + copy.string() + " --kernel-tuner-cache " + kt.string());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(read_text(kt).find("\"device_name\": \"NVIDIA H200\""), std::string::npos);
  EXPECT_NE(c.out.find("device NVIDIA H200"), std::string::npos) << c.out;
}

// benchmark_time is Kernel Tuner's wall time of benchmarking a configuration: the recorded
// run_ms (warm-up + timed runs) of the entry's evaluation, not the sum of its per-step
// times (~18x smaller on the synthetic dataset).
TEST_F(Export, KernelTunerBenchmarkTimeIsTheTimingWallTime) {
  const fs::path cpp = dir_ / "cpp.json";
  const Ran c = run(kBinary + " export " + kSynthetic + " --kernel-tuner-cache " + cpp.string());
  ASSERT_EQ(c.code, 0) << c.err;
  const fs::path script = dir_ / "bench.py";
  std::ofstream(script) << R"py(import h5py, json, sys
doc = json.load(open(sys.argv[2]))
e = h5py.File(sys.argv[1], "r")["ranks/0000/evaluations"][()]
run_ms = {",".join(str(int(v)) for v in row["values"]): float(row["run_ms"]) for row in e}
checked = 0
for key, entry in doc["cache"].items():
    if isinstance(entry["time"], float):
        assert entry["benchmark_time"] == run_ms[key], (key, entry["benchmark_time"], run_ms[key])
        assert entry["benchmark_time"] > 5 * sum(entry["times"]), key
        checked += 1
print(checked > 100)
)py";
  const Ran check =
      run("/usr/bin/python3 " + script.string() + " " + kSynthetic + " " + cpp.string());
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_EQ(check.out, "True\n");
}

// Device and kernel names with quotes, backslashes, control characters and UTF-8 come out as
// valid JSON that reads back as the same text.
TEST_F(Export, KernelTunerCacheEscapesStrings) {
  const fs::path copy = dir_ / "odd.h5";
  fs::copy_file(kSynthetic, copy);
  const fs::path script = dir_ / "odd.py";
  std::ofstream(script) << R"py(import h5py, json, sys
NAME = 'GPU "quoted" back\\slash\ttab\nnew \u00e9\x01'
if sys.argv[1] == "write":
    with h5py.File(sys.argv[2], "r+") as f:
        f["environment/rank_0000"].attrs["gpu_name"] = NAME
else:
    assert json.load(open(sys.argv[2]))["device_name"] == NAME, "device_name differs"
    print("same name")
)py";
  const Ran edit = run("/usr/bin/python3 " + script.string() + " write " + copy.string());
  ASSERT_EQ(edit.code, 0) << edit.err;
  const fs::path cpp = dir_ / "cpp.json", py = dir_ / "py.json";
  const Ran c = run(kBinary + " export " + copy.string() + " --kernel-tuner-cache " + cpp.string());
  ASSERT_EQ(c.code, 0) << c.err;
  ASSERT_EQ(python_cache(copy.string(), py).code, 0);
  EXPECT_EQ(compare_caches(cpp, py), "");
  const Ran name = run("/usr/bin/python3 " + script.string() + " check " + cpp.string());
  EXPECT_EQ(name.code, 0) << name.err;
  EXPECT_EQ(name.out, "same name\n");
}

// measure (replay) then export --best -o and --kernel-tuner-cache together; works in a build
// without the CUDA Toolkit too.
TEST_F(Export, MeasureThenExportBothOutputs) {
  const fs::path config = replay_config("");
  const fs::path ds = dir_ / "ds.h5", cu = dir_ / "best.cu", kt = dir_ / "kt.json";
  const Ran m =
      run(kBinary + " measure " + config.string() + " --random 25 --batch 10 -o " + ds.string());
  ASSERT_EQ(m.code, 0) << m.err;
  const Ran e = run(kBinary + " export " + ds.string() + " --best -o " + cu.string() +
                    " --kernel-tuner-cache " + kt.string());
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string source = read_text(cu);
  EXPECT_NE(source.find("int main"), std::string::npos);
  EXPECT_NE(source.find("isl_reference_step"), std::string::npos);
  EXPECT_NE(e.out.find("25 entries"), std::string::npos) << e.out;
  const fs::path py = dir_ / "py.json";
  ASSERT_EQ(python_cache(ds.string(), py).code, 0);
  EXPECT_EQ(compare_caches(kt, py), "");
}

// A space that also holds part-2 settings (streaming, tdeg > 1): replay draws only the
// recorded settings inside it, so no row is `invalid` for want of a record.
TEST_F(Export, MeasureReplayDrawsOnlyRecordedSettings) {
  const fs::path config =
      replay_config("  streaming: {values: [0, 1]}\n  tdeg: {values: [1, 2, 4]}\n");
  const fs::path ds = dir_ / "ds.h5";
  const Ran m = run(kBinary + " measure " + config.string() + " --random 60 -o " + ds.string());
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("60 evaluations"), std::string::npos) << m.out;
  const isletune::TraceReader reader(ds);
  const auto evals = reader.evaluations(0);
  ASSERT_EQ(evals.size(), 60u);
  const isletune::TraceReader source(kSynthetic);
  std::set<isletune::Setting> recorded;
  for (const auto& e : source.evaluations(0))
    recorded.insert(e.setting);
  std::set<isletune::Setting> distinct;
  for (const auto& e : evals) {
    EXPECT_TRUE(recorded.contains(e.setting)) << isletune::canonical_key(e.setting);
    EXPECT_NE(e.measurement.status, isletune::Status::invalid) << e.measurement.message;
    EXPECT_EQ(e.setting[isletune::Param::streaming], 0);
    distinct.insert(e.setting);
  }
  EXPECT_EQ(distinct.size(), 60u);

  // --exhaustive measures exactly the recorded settings inside the space.
  const fs::path all = dir_ / "all.h5";
  const Ran x = run(kBinary + " measure " + config.string() + " --exhaustive -o " + all.string());
  ASSERT_EQ(x.code, 0) << x.err;
  const auto every = isletune::TraceReader(all).evaluations(0);
  EXPECT_GT(every.size(), 60u);
  for (const auto& e : every)
    EXPECT_TRUE(recorded.contains(e.setting));
}

// Bad usage and a missing backend are one sentence on stderr and exit code 2.
TEST_F(Export, BadInputIsOneSentence) {
  const auto one_line = [](const Ran& r) {
    return r.code == 2 && !r.err.empty() && r.err.find('\n') == r.err.size() - 1;
  };
  Ran r = run(kBinary + " export " + kSynthetic + " --best");
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("--best and -o FILE go together"), std::string::npos) << r.err;
  r = run(kBinary + " export " + kSynthetic);
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("--kernel-tuner-cache"), std::string::npos) << r.err;
  r = run(kBinary + " export " + (dir_ / "missing.h5").string() + " --kernel-tuner-cache x.json");
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_FALSE(fs::exists("x.json"));
  r = run(kBinary + " export " + kSynthetic + " --kernel-tuner-cache " +
          (dir_ / "no-such-dir" / "x.json").string());
  EXPECT_TRUE(one_line(r)) << r.err;
#ifndef ISLETUNE_WITH_WORKER
  // Without the CUDA Toolkit there is no worker: --backend cuda says so in one sentence.
  r = run(kBinary + " measure " + replay_config("").string() + " --backend cuda --random 1 -o " +
          (dir_ / "c.h5").string());
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("built without the CUDA evaluator"), std::string::npos) << r.err;
#endif
}

}  // namespace

#else

TEST(Export, NeedsTheBinary) {
  GTEST_SKIP() << "built without the isletune binary (tests/gpu/CMakeLists.txt not added)";
}

#endif
