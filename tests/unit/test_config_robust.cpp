// unit.ConfigRobust.*: malformed configs found by the fuzz harness (tests/fuzz) are one
// short sentence naming the file and the key: duplicate and non-scalar keys, ga.rows x
// ga.cols past int, huge grids, space values the space rejects or that leave no valid
// setting, long values, control bytes, unreadable config paths.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "common/text.hpp"
#include "config/config.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = ISLETUNE_SOURCE_DIR;

// The message of the InputError parsing `yaml` (as run.yaml) throws; "" when it does not.
std::string error_of(const std::string& yaml) {
  try {
    (void)parse_config(yaml, "run.yaml", kSource);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// One short line naming run.yaml and `key`, with no control byte.
void expect_clear(const std::string& msg, const std::string& key) {
  ASSERT_FALSE(msg.empty()) << "expected an InputError for " << key;
  EXPECT_EQ(msg.rfind("run.yaml: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(key), std::string::npos) << "key " << key << " not in: " << msg;
  EXPECT_LE(msg.size(), 300u) << msg;
  for (const char c : msg) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << "control byte in " << msg;
  }
}

const std::string kHead = "stencil: star2d1r\ngrid: [64, 64]\n";

TEST(ConfigRobust, DuplicateKeysAreRejectedAtEveryLevel) {
  std::string msg = error_of(kHead + "steps: 4\nsteps: 8\n");
  expect_clear(msg, "steps");
  EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;  // the first one
  expect_clear(error_of(kHead + "ga: {rows: 2, cols: 2, rows: 4}\n"), "ga.rows");
  expect_clear(error_of(kHead + "space:\n  tbx: {values: [8]}\n  tbx: {values: [16]}\n"),
               "space.tbx");
  expect_clear(error_of(kHead + "space:\n  tbx: {values: [8], values: [16]}\n"),
               "space.tbx.values");
  expect_clear(error_of("stencil: star2d1r\nstencil: star2d2r\ngrid: [64, 64]\n"), "stencil");
}

TEST(ConfigRobust, NonScalarKeysAndNonMappingFilesAreOneSentence) {
  expect_clear(error_of(kHead + "? [a, b]\n: 1\n"), "top level");
  expect_clear(error_of(kHead + "ga:\n  ? {x: 1}\n  : 2\n"), "ga");
  expect_clear(error_of("- a\n- b\n"), "must be a mapping");
  expect_clear(error_of(""), "must be a mapping");
}

TEST(ConfigRobust, IslandGridBeyondIntIsRejected) {
  // 2^20 x 2^20 overflows int: it used to wrap to population 0 and pass.
  expect_clear(error_of(kHead + "ga: {rows: 1048576, cols: 1048576}\n"), "ga.rows");
  expect_clear(error_of(kHead + "ga: {rows: 65536, cols: 65537}\n"), "ga.rows");
  expect_clear(error_of(kHead + "ga: {rows: 1, cols: 1}\n"), "ga.rows");
  expect_clear(error_of(kHead + "ga: {rows: 46341, cols: 46341, population: 4}\n"),
               "ga.population");
}

TEST(ConfigRobust, GridExtentsAndCellsAreBounded) {
  expect_clear(error_of("stencil: star2d1r\ngrid: [1073741824, 64]\n"), "grid[0]");
  expect_clear(error_of("stencil: star2d1r\ngrid: [64, 2147483647]\n"), "grid[1]");
  const std::string cells = error_of("stencil: star2d1r\ngrid: [65536, 65536]\n");
  expect_clear(cells, "grid");
  EXPECT_NE(cells.find("cells"), std::string::npos) << cells;
  expect_clear(error_of("stencil: star3d1r\ngrid: [2048, 2048, 1024]\n"), "grid");
  EXPECT_EQ(error_of("stencil: star3d1r\ngrid: [1024, 1024, 1024]\n"), "");
}

TEST(ConfigRobust, LongValuesAreCutAndControlBytesEscaped) {
  const std::string big(1 << 16, 'x');
  expect_clear(error_of(kHead + "steps: " + big + "\n"), "steps");
  expect_clear(error_of(kHead + "strategy: " + big + "\n"), "strategy");
  expect_clear(error_of("stencil: " + big + "\ngrid: [64, 64]\n"), "stencil");
  const std::string ctl = error_of(kHead + "strategy: \"a\\e[31m\\a\"\n");
  expect_clear(ctl, "strategy");
  EXPECT_NE(ctl.find("\\x1b"), std::string::npos) << ctl;
  expect_clear(error_of(kHead + "\"bad\\x01key\": 1\n"), "bad\\x01key");
  expect_clear(error_of(kHead + "evaluator: {dataset: /" + std::string(5000, 'd') + "}\n"),
               "evaluator.dataset");
}

TEST(ConfigRobust, SpaceValueErrorsNameTheFileAndKey) {
  // The space's own range check used to surface without the file (from `space`/`run`).
  const std::string msg = error_of(kHead + "space:\n  tbx: {values: [3]}\n");
  expect_clear(msg, "space");
  EXPECT_NE(msg.find("tbx"), std::string::npos) << msg;
  expect_clear(error_of(kHead + "space:\n  tbz: {values: [2]}\n"), "space");
}

TEST(ConfigRobust, SpaceWithoutAnyValidSettingIsRejected) {
  // Unrolling by 4 along x needs a merge factor of at least 4: no setting is valid.
  const std::string msg =
      error_of(kHead + "space:\n  mfx: {values: [1, 2]}\n  ufx: {values: [4]}\n");
  expect_clear(msg, "space");
  EXPECT_NE(msg.find("no valid setting"), std::string::npos) << msg;
}

TEST(ConfigRobust, UnreadableConfigPathsAreOneSentence) {
  const fs::path dir = fs::temp_directory_path() / ("isletune-cfg-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto message = [](const fs::path& p) {
    try {
      (void)load_config(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string is_dir = message(dir);
  EXPECT_NE(is_dir.find("directory"), std::string::npos) << is_dir;
  const std::string too_long = message(dir / (std::string(300, 'x') + ".yaml"));
  EXPECT_NE(too_long.find("cannot read the config file"), std::string::npos) << too_long;
  EXPECT_LE(too_long.size(), 300u) << too_long;
  const std::string ctl = message(dir / "a\x1b[1m.yaml");
  EXPECT_NE(ctl.find("a\\x1b[1m.yaml"), std::string::npos) << ctl;
  fs::remove_all(dir);
}

// Text that cannot be a configuration says why in one sentence, not where yaml-cpp
// stopped ("invalid YAML at line 26, column 100005: bad file").
TEST(ConfigRobust, OversizedBinaryAndMultiDocumentTextIsOneSentence) {
  std::string msg = error_of(kHead + "#" + std::string(5 << 20, 'x') + "\n");
  EXPECT_NE(msg.find("run.yaml holds"), std::string::npos) << msg.substr(0, 200);
  EXPECT_NE(msg.find("at most 4 MiB"), std::string::npos) << msg.substr(0, 200);
  msg = error_of(kHead + std::string("\x01\x02\xff: [\x03\n"));
  EXPECT_NE(msg.find("run.yaml is not a text file"), std::string::npos) << msg;
  msg = error_of(kHead + std::string("x: \0\n", 6));
  EXPECT_NE(msg.find("NUL byte"), std::string::npos) << msg;
  msg = error_of(kHead + "---\nseed: 3\n");
  EXPECT_NE(msg.find("run.yaml holds 2 YAML documents"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("line"), std::string::npos) << msg;
  EXPECT_EQ(error_of(kHead + "---\n"), "");  // an empty second document is still one
}

TEST(ConfigRobust, TooLargeConfigFileIsRefusedBeforeReading) {
  const fs::path big =
      fs::temp_directory_path() / ("isletune-big-" + std::to_string(getpid()) + ".yaml");
  { std::ofstream(big) << kHead << "#" << std::string(5 << 20, 'x') << "\n"; }
  try {
    (void)load_config(big);
    ADD_FAILURE() << "a 5 MiB config was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 4 MiB"), std::string::npos) << e.what();
  }
  fs::remove(big);
}

// The problem a dataset recorded (replay compares it with the config's).
TEST(ConfigRobust, RecordedProblemReadsGridAndStepsLeniently) {
  RecordedProblem p = recorded_problem("stencil: box2d2r\ngrid: [8192, 4096]\nsteps: 7\n");
  ASSERT_TRUE(p.grid.has_value());
  EXPECT_EQ(*p.grid, (Grid{8192, 4096, 1}));
  EXPECT_EQ(p.steps, 7);
  p = recorded_problem("grid: [64, 32, 16]\n");
  EXPECT_EQ(*p.grid, (Grid{64, 32, 16}));
  EXPECT_EQ(p.steps, 48);  // the default
  EXPECT_FALSE(recorded_problem("").grid.has_value());
  EXPECT_FALSE(recorded_problem("grid: [a, b]\n").grid.has_value());
  EXPECT_FALSE(recorded_problem("grid: [1, 2]\n---\ngrid: [3, 4]\n").grid.has_value());
  EXPECT_FALSE(recorded_problem("{{{").grid.has_value());
}

}  // namespace
}  // namespace isletune

// The one escape (issue 50): what a terminal or a compiler would obey is written \xNN --
// C0 controls, DEL, C1 controls (8-bit CSI), bidirectional overrides, line separators and
// bytes that are not UTF-8 -- while readable UTF-8 stays as it is; long text is cut.
TEST(Text, PrintableEscapesWhatATerminalOrACompilerWouldObey) {
  using isletune::printable;
  EXPECT_EQ(printable("a\nb\x1b[2J\x7f"), "a\\x0ab\\x1b[2J\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\xc2\\x9b31m");                                                    // U+009B (CSI)
  EXPECT_EQ(printable("x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");                   // U+202E
  EXPECT_EQ(printable("\xe2\x80\xa8"), "\\xe2\\x80\\xa8");                       // U+2028
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");                                // not UTF-8
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                                // overlong '/'
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // é ✓ kept
  EXPECT_EQ(printable(std::string(1 << 20, 'N'), 60).size(),
            60u + std::string("... (1048576 bytes)").size());
  EXPECT_TRUE(isletune::is_plain_name("star2d1r"));
  EXPECT_TRUE(isletune::is_plain_name("my stencil */ x"));
  for (const char* bad : {"", "a\nb", "caf\xc3\xa9", "back\\slash", "\x1b"})
    EXPECT_FALSE(isletune::is_plain_name(bad)) << bad;
  EXPECT_FALSE(isletune::is_plain_name(std::string(65, 'x')));
}
