// .npy reading and writing: round trips, NumPy's own header layout, and every refusal path.
#include "engine/io/input_file.hpp"
#include "engine/io/npy.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace helios::io;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {
fs::path tempPath(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("helios-npy-" + std::to_string(helios::test::testSeed()));
  fs::create_directories(dir);
  return dir / name;
}
// Writes a file exactly as numpy.save does for a C-order array (version 1.0, header padded to 64 bytes).
void writeRaw(const fs::path& p, const std::string& dict, const std::string& payload) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(p, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header << payload;
}
} // namespace

TEST_CASE("float32, float16 and int32 arrays round-trip") {
  auto values = helios::test::randomFloats(7 * 33, -100.0f, 100.0f);
  auto p = tempPath("a.npy");
  writeNpy(p, NpyArray::fromFloat(values, {7, 33}));
  auto back = readNpy(p);
  CHECK(back.dtype == NpyDType::F32);
  CHECK(back.shape == std::vector<uint64_t>{7, 33});
  CHECK(back.toFloat() == values);

  writeNpy(p, NpyArray::fromFloat(values, {231}, NpyDType::F16));
  auto half = readNpy(p).toFloat();
  REQUIRE(half.size() == values.size());
  for (size_t i = 0; i < values.size(); ++i)
    CHECK(std::abs(half[i] - values[i]) <= std::abs(values[i]) * 1e-3f);
  for (const auto& e : fs::directory_iterator(p.parent_path())) // no temporary left beside the file
    CHECK(e.path().filename().string().find(".partial") == std::string::npos);
}

TEST_CASE("a file laid out as numpy.save writes it is read") {
  auto p = tempPath("numpy.npy");
  int32_t ids[3] = {5, -1, 70000};
  writeRaw(p, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
           std::string(reinterpret_cast<char*>(ids), 12));
  auto a = readNpy(p);
  CHECK(a.shapeString() == "(3,)");
  CHECK(a.toInt32() == std::vector<int32_t>{5, -1, 70000});
  CHECK_THROWS_WITH(a.toFloat(), ContainsSubstring("expected a float32 or float16 array"));
}

TEST_CASE("unsupported or damaged files are refused with a message naming the file") {
  auto p = tempPath("bad.npy");
  writeRaw(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0'));
  CHECK_THROWS_WITH(readNpy(p),
                    ContainsSubstring("bad.npy") && ContainsSubstring("dtype '<f8' is not supported"));
  writeRaw(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0'));
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("Fortran-order"));
  writeRaw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }", std::string(60, '\0'));
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("truncated data") && ContainsSubstring("needs 64 bytes"));
  writeRaw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'));
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("trailing bytes"));
  {
    std::ofstream out(p, std::ios::binary);
    out << "hello";
  }
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("not a NumPy .npy file"));
  CHECK_THROWS_WITH(readNpy(tempPath("missing.npy")), ContainsSubstring("cannot open"));
}

TEST_CASE("a header claiming more data than the file holds is refused before anything is allocated") {
  auto p = tempPath("huge.npy");
  // 100000 x 100000 float32 would be 40 GB; the file holds 16 bytes of data.
  writeRaw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", std::string(16, '\0'));
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("huge.npy: truncated data") &&
                                    ContainsSubstring("needs 40000000000 bytes, the file has 16"));
  // A shape whose byte count overflows 64 bits.
  writeRaw(p, "{'descr': '<f2', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "");
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("overflows 64 bits"));
  writeRaw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (123456789012345678901234,), }", "");
  CHECK_THROWS_WITH(readNpy(p), ContainsSubstring("dimension 123456789012345678901234 is too large"));
  // A zero dimension is an empty array, not an overflow.
  writeRaw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296), }", "");
  CHECK(readNpy(p).elements() == 0);
}

TEST_CASE("writeNpy refuses a directory and writes through a symlink") {
  auto d = tempPath("npy-out");
  fs::remove_all(d);
  fs::create_directories(d / "dir.npy");
  auto a = NpyArray::fromFloat(helios::test::randomFloats(6), {2, 3});
  CHECK_THROWS_WITH(writeNpy(d / "dir.npy", a), ContainsSubstring("is a directory"));
  CHECK(fs::is_empty(d / "dir.npy"));
  writeNpy(d / "real.npy", NpyArray::fromFloat({1.0f}, {1}));
  fs::create_symlink("real.npy", d / "link.npy");
  writeNpy(d / "link.npy", a);
  CHECK(fs::is_symlink(d / "link.npy"));
  CHECK(readNpy(d / "real.npy").toFloat() == a.toFloat());
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d))
    ++entries;
  CHECK(entries == 3); // dir.npy, real.npy, link.npy: no temporary left
}

TEST_CASE("a shape with a negative, signed or malformed dimension is refused, never read as another") {
  auto p = tempPath("shape.npy");
  struct Case {
    const char* shape;
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{{"(-37, 53)", "negative dimension -37"},
                                                   {"(37, -53)", "negative dimension -53"},
                                                   {"(+37, 53)", "'+37' is not a dimension"},
                                                   {"(37 53)", "'37 53' is not a dimension"},
                                                   {"(37,, 53)", "'' is not a dimension"},
                                                   {"(3.5,)", "'3.5' is not a dimension"},
                                                   {"(0x10,)", "'0x10' is not a dimension"},
                                                   {"[37, 53]", "not a tuple"}}) {
    writeRaw(p, std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + c.shape + ", }",
             std::string(37 * 53 * 4, '\0'));
    INFO(c.shape);
    CHECK_THROWS_AS(readNpy(p), NpyError);
    CHECK_THROWS_WITH(readNpy(p), ContainsSubstring(p.string()) && ContainsSubstring(c.says));
  }
  // What NumPy writes stays readable: scalars, 1-tuples, Python 2's long suffix, spaces.
  for (const char* ok : {"()", "(4,)", "(2, 2)", "(2L, 2L)", "( 2 , 2 , )"}) {
    INFO(ok);
    writeRaw(p, std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + ok + ", }",
             std::string(std::string(ok) == "()" ? 4 : 16, '\0'));
    CHECK_NOTHROW(readNpy(p));
  }
}

TEST_CASE("input files: what a path is, and non-regular files refused before they are opened") {
  const auto d = tempPath("special");
  fs::remove_all(d);
  fs::create_directories(d / "dir");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  std::ofstream(d / "file") << "x";
  fs::create_symlink(d / "fifo", d / "link-to-fifo");
  CHECK(fileKind(d / "file") == "a regular file");
  CHECK(fileKind(d / "dir") == "a directory");
  CHECK(fileKind(d / "fifo") == "a FIFO (named pipe)");
  CHECK(fileKind(d / "link-to-fifo") == "a FIFO (named pipe)"); // symlinks are followed
  CHECK(fileKind("/dev/null") == "a character device");
  CHECK(fileKind(d / "missing") == "missing");
  CHECK_NOTHROW(requireRegularFile(d / "file", "input"));
  CHECK_NOTHROW(requireRegularFile(d / "missing", "input")); // the caller's open() says it
  CHECK_THROWS_AS(requireRegularFile(d / "link-to-fifo", "input"), InputFileError);
  CHECK_THROWS_WITH(requireRegularFile(d / "fifo", "shard"),
                    (d / "fifo").string() + ": the shard is not a regular file (it is a FIFO (named pipe))");
  // readNpy asks first (a FIFO would block its open(); the CLI tests run that case under a timeout).
  CHECK_THROWS_WITH(readNpy(d / "dir"), ContainsSubstring("is not a regular file (it is a directory)"));
  CHECK_THROWS_WITH(readNpy(d / "missing.npy"), ContainsSubstring("cannot open for reading"));
}
