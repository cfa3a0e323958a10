// The typical stencil library as data: exact shapes and point counts of all 24 files,
// the coefficient rule, files equal to the generator, and every loader error path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>

#include "common/error.hpp"
#include "config/stencil_library.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

int expected_points(const TypicalName& t) {
  const int r = t.order;
  switch (t.shape) {
    case TypicalShape::star:
      return (t.dims == 2 ? 4 : 6) * r + 1;
    case TypicalShape::box:
      return t.dims == 2 ? (2 * r + 1) * (2 * r + 1) : (2 * r + 1) * (2 * r + 1) * (2 * r + 1);
    case TypicalShape::cross:
      return (t.dims == 2 ? 4 : 8) * r + 1;
  }
  return 0;
}

// Whether offset o belongs to the shape (independently of typical_offsets).
bool in_shape(const TypicalName& t, const Offset& o) {
  const int ax = std::abs(o.x), ay = std::abs(o.y), az = std::abs(o.z);
  if (t.dims == 2 && o.z != 0)
    return false;
  if (std::max({ax, ay, az}) > t.order)
    return false;
  const int nonzero = (ax > 0) + (ay > 0) + (az > 0);
  if (nonzero == 0)
    return true;
  switch (t.shape) {
    case TypicalShape::star:
      return nonzero == 1;
    case TypicalShape::box:
      return true;
    case TypicalShape::cross:
      return nonzero == t.dims && ax == ay && (t.dims == 2 || ay == az);
  }
  return false;
}

// Writes `text` to a fresh file under the test's temp dir and returns its path.
std::string write_temp(const std::string& file, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("isletune_stencil_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / file).string();
  std::ofstream(path) << text;
  return path;
}

// The message of the InputError thrown by f, or "" when none was thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StencilLibrary, AllTwentyFourFilesHaveExactShapeAndCount) {
  const auto names = typical_names();
  ASSERT_EQ(names.size(), 24u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const Stencil s = load_library_stencil(name);
    const auto t = parse_typical_name(name);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(s.name(), name);
    EXPECT_EQ(s.dims(), t->dims);
    EXPECT_EQ(s.order(), t->order);
    EXPECT_EQ(s.size(), expected_points(*t));
    // Every point in the shape and no duplicates (make checks) + exact count = exact set.
    for (const Offset& o : s.offsets())
      EXPECT_TRUE(in_shape(*t, o)) << o.x << "," << o.y << "," << o.z;
    EXPECT_TRUE(std::find(s.offsets().begin(), s.offsets().end(), Offset{}) != s.offsets().end());
  }
}

TEST(StencilLibrary, CoefficientsDistinctPositiveAndSumToOne) {
  for (const auto& name : typical_names()) {
    SCOPED_TRACE(name);
    const Stencil s = load_library_stencil(name);
    const auto& c = s.coefficients();
    EXPECT_EQ(std::set<double>(c.begin(), c.end()).size(), c.size());
    for (const double v : c)
      EXPECT_GT(v, 0.0);
    EXPECT_NEAR(std::accumulate(c.begin(), c.end(), 0.0), 1.0, 1e-15);
    EXPECT_NEAR(std::accumulate(c.rbegin(), c.rend(), 0.0), 1.0, 1e-15);
  }
}

TEST(StencilLibrary, MirrorNeighboursGetDifferentCoefficients) {
  const Stencil s = load_library_stencil("star2d1r");
  auto coefficient = [&](Offset o) {
    const auto it = std::find(s.offsets().begin(), s.offsets().end(), o);
    return s.coefficients()[static_cast<std::size_t>(it - s.offsets().begin())];
  };
  EXPECT_NE(coefficient({1, 0, 0}), coefficient({-1, 0, 0}));
  EXPECT_NE(coefficient({0, 1, 0}), coefficient({0, -1, 0}));
  EXPECT_NE(coefficient({1, 0, 0}), coefficient({0, 1, 0}));
}

TEST(StencilLibrary, FilesEqualGeneratorOutputBitForBit) {
  for (const auto& name : typical_names()) {
    SCOPED_TRACE(name);
    const Stencil file = load_library_stencil(name);
    const Stencil code = typical_stencil(name);
    EXPECT_EQ(file.offsets(), code.offsets());
    EXPECT_EQ(file.coefficients(), code.coefficients());  // exact: %.17g round-trips
    // And the text itself, so a regenerated library would not differ.
    std::ifstream in(std::string(ISLETUNE_SOURCE_DIR) + "/config/stencils/" + name + ".yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto body = text.substr(text.find('\n') + 1);  // after the header comment
    EXPECT_EQ(body, stencil_yaml_text(code));
  }
}

TEST(StencilLibrary, DataDirOverrideIsSearchedFirst) {
  const auto path = write_temp("stencils/star2d1r.yaml", "");
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "name: star2d1r\ndims: 2\npoints:\n  - [0, 0, 1.0]\n";
  const auto data_dir = std::filesystem::path(path).parent_path().parent_path().string();
  ::setenv("ISLETUNE_DATA_DIR", data_dir.c_str(), 1);
  const Stencil s = load_library_stencil("star2d1r");
  ::unsetenv("ISLETUNE_DATA_DIR");
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(load_library_stencil("star2d1r").size(), 5);
}

TEST(StencilLibrary, UnknownNameNamesTheStencilAndTheLibrary) {
  const auto msg = error_of([] { (void)load_library_stencil("hex2d1r"); });
  EXPECT_NE(msg.find("unknown stencil 'hex2d1r'"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { (void)load_library_stencil("../etc/passwd"); }), "");
  EXPECT_NE(error_of([] { (void)typical_stencil("box5d1r"); }).find("box5d1r"), std::string::npos);
}

struct BadFile {
  const char* label;
  const char* text;
  const char* expect;  // phrase the sentence must contain
};

TEST(StencilLibrary, EveryMalformedFileThrowsOneSentenceNamingFileAndProblem) {
  const BadFile cases[] = {
      {"dims_mismatch", "name: s\ndims: 2\npoints:\n  - [0, 0, 0, 1.0]\n",
       "points[0] has 4 numbers"},
      {"duplicate", "name: s\ndims: 2\npoints:\n  - [1, 0, 0.5]\n  - [1, 0, 0.5]\n",
       "duplicate offset"},
      {"empty", "name: s\ndims: 2\npoints: []\n", "no points"},
      {"order9", "name: s\ndims: 2\npoints:\n  - [9, 0, 1.0]\n", "maximum order is 8"},
      {"nan", "name: s\ndims: 2\npoints:\n  - [0, 0, .nan]\n", "non-finite coefficient"},
      {"inf", "name: s\ndims: 3\npoints:\n  - [0, 0, 0, .inf]\n", "non-finite coefficient"},
      {"bad_key", "name: s\ndims: 2\ncoefs: 1\npoints:\n  - [0, 0, 1.0]\n",
       "line 3 holds a key other than name, dims and points"},
      {"name_newline", "name: \"s\\nstatic int pwn = 1;\"\ndims: 2\npoints:\n  - [0, 0, 1.0]\n",
       "key 'name' (line 1) must be a name of 1 to 64 printable ASCII"},
      {"name_long",
       "name: nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\ndims: "
       "2\npoints:\n  - [0, 0, 1.0]\n",
       "key 'name' (line 1) must be"},
      {"missing_key", "name: s\npoints:\n  - [0, 0, 1.0]\n", "missing key 'dims'"},
      {"dims4", "name: s\ndims: 4\npoints:\n  - [0, 0, 1.0]\n", "expected 2 or 3"},
      {"dims_text", "name: s\ndims: two\npoints:\n  - [0, 0, 1.0]\n", "key 'dims' must be 2 or 3"},
      {"fraction", "name: s\ndims: 2\npoints:\n  - [0.5, 0, 1.0]\n", "expected an integer"},
      {"word", "name: s\ndims: 2\npoints:\n  - [0, x, 1.0]\n", "points[0][1] must be a number"},
      {"z_in_2d", "name: s\ndims: 2\npoints:\n  - [0, 0]\n", "expected [dx, dy, coefficient]"},
      {"not_list", "name: s\ndims: 2\npoints: 3\n", "key 'points' must be a list"},
      {"syntax", "name: s\ndims: [2\n", "invalid YAML"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    const auto path = write_temp(std::string(c.label) + ".yaml", c.text);
    const auto msg = error_of([&] { (void)load_stencil_file(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NE(error_of([] { (void)load_stencil_file("/nonexistent/x.yaml"); }).find("cannot open"),
            std::string::npos);
}

// `stencil: {file: F}` may name any file the user can read: its messages name the file, the
// key and the line, never what the file holds (issue 50: /etc/shadow's first line was quoted
// as an "unknown key").
TEST(StencilLibrary, MessagesNeverQuoteTheFilesContents) {
  const std::string secret = "root:$6$SECRETHASH:19000:0:99999:7:::";
  for (const std::string& text :
       {secret + "\nbin:*:19000:0:99999:7:::\n", "name: s\ndims: " + secret + "\npoints: []\n",
        "name: s\ndims: 2\npoints:\n  - [0, " + secret + ", 1.0]\n", "{" + secret + ": 1}\n"}) {
    const auto path = write_temp("secret.yaml", text);
    const auto msg = error_of([&] { (void)load_stencil_file(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_EQ(msg.find("SECRET"), std::string::npos) << msg;
  }
}

// The name rule holds for every stencil, not only those of configs: Stencil::make refuses a
// name that could leave a comment of generated code.
TEST(StencilLibrary, EveryStencilHasAPlainName) {
  for (const std::string& bad : {std::string("s\nstatic int pwn = 1;"), std::string(65, 'x'),
                                 std::string("a\\"), std::string("\xe2\x80\xae"), std::string()}) {
    const auto msg = error_of([&] { (void)Stencil::make(bad, 2, {{0, 0, 0}}, {1.0}); });
    EXPECT_NE(msg.find("is not a name of 1 to 64 printable ASCII"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_EQ(Stencil::make("my stencil-2.v1 */ x", 2, {{0, 0, 0}}, {1.0}).name(),
            "my stencil-2.v1 */ x");
}

TEST(StencilLibrary, InlinePointsNameTheirPlace) {
  const auto ok =
      stencil_from_points("mine", 3, {{0, 0, 0, 0.5}, {0, 0, 1, 0.5}}, "run.yaml: stencil.points");
  EXPECT_EQ(ok.size(), 2);
  EXPECT_EQ(ok.radius(2), 1);
  const auto msg = error_of([] {
    (void)stencil_from_points("mine", 3, {{0, 0, 0, 0.5}, {0, 0, 0.5}}, "run.yaml: stencil.points");
  });
  EXPECT_NE(msg.find("run.yaml: stencil.points[1] has 3 numbers"), std::string::npos) << msg;
  const auto dup = error_of([] {
    (void)stencil_from_points("mine", 2, {{1, 1, 0.5}, {1, 1, 0.5}}, "run.yaml: stencil.points");
  });
  EXPECT_NE(dup.find("run.yaml: stencil.points"), std::string::npos) << dup;
  EXPECT_NE(dup.find("duplicate"), std::string::npos) << dup;
}

}  // namespace
}  // namespace isletune
