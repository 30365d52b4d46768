// Safe output files: symlinks written through (the link stays, its target is replaced), directories, devices
// and FIFOs refused untouched, and no temporary file left behind by any of it; files written in pieces
// (AtomicFileWriter), directories that appear whole (StagedDirectory), files mapped for reading (MappedFile).
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"
#include "engine/io/staged_directory.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

using namespace helios::io;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  auto d = fs::temp_directory_path() /
           ("helios-atomic-" + std::to_string(helios::test::testSeed()) + "-" + std::to_string(::getpid())) /
           name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> names(const fs::path& d) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(d))
    s.insert(e.path().filename().string());
  return s;
}

std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

} // namespace

TEST_CASE("a new file is written and an existing one replaced, keeping its mode") {
  auto d = freshDir("plain");
  const std::string text = "fresh " + std::to_string(helios::test::rng()());
  writeFileAtomically(d / "a.txt", text);
  CHECK(contents(d / "a.txt") == text);
  fs::permissions(d / "a.txt", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  writeFileAtomically(d / "a.txt", std::string("second"));
  CHECK(contents(d / "a.txt") == "second");
  CHECK(fs::status(d / "a.txt").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  CHECK(names(d) == std::set<std::string>{"a.txt"});
}

TEST_CASE("a symlink is written through: the link stays, its target is replaced") {
  auto d = freshDir("symlink");
  fs::create_directories(d / "real");
  { std::ofstream(d / "real" / "t.npy") << "old"; }
  fs::create_symlink("real/t.npy", d / "link.npy");
  fs::create_symlink("link.npy", d / "chain.npy"); // a chain of two links
  writeFileAtomically(d / "chain.npy", std::string("new"));
  CHECK(fs::is_symlink(d / "link.npy"));
  CHECK(fs::is_symlink(d / "chain.npy"));
  CHECK(fs::read_symlink(d / "link.npy") == "real/t.npy");
  CHECK(contents(d / "real" / "t.npy") == "new");
  CHECK(names(d) == std::set<std::string>{"chain.npy", "link.npy", "real"});
  CHECK(names(d / "real") == std::set<std::string>{"t.npy"});

  // A dangling link gets its target created.
  fs::create_symlink("real/later.npy", d / "dangling.npy");
  writeFileAtomically(d / "dangling.npy", std::string("made"));
  CHECK(fs::is_symlink(d / "dangling.npy"));
  CHECK(contents(d / "real" / "later.npy") == "made");
}

TEST_CASE("directories, devices, FIFOs and symlink loops are refused untouched, with nothing left behind") {
  auto d = freshDir("refused");
  fs::create_directories(d / "sub");
  CHECK_THROWS_WITH(writeFileAtomically(d / "sub", std::string("x")),
                    ContainsSubstring("sub: is a directory; refusing to write over it"));
  CHECK(fs::is_directory(d / "sub"));

  REQUIRE(::mkfifo((d / "pipe").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(writeFileAtomically(d / "pipe", std::string("x")), ContainsSubstring("is a FIFO"));
  CHECK(fs::is_fifo(d / "pipe"));

  // A device node of our own (a null device made with mknod, root only), so that a bug here could never
  // replace the machine's /dev/null; /dev/null itself is only inspected through a symlink.
  if (::mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    CHECK_THROWS_WITH(writeFileAtomically(d / "null", std::string("x")),
                      ContainsSubstring("null: is a device"));
    CHECK(fs::is_character_file(d / "null"));
  } else {
    std::ofstream(d / "null") << ""; // keeps the listing below the same
    WARN("mknod is not permitted here: the own-device case is skipped");
  }
  fs::create_symlink("/dev/null", d / "to-null");
  CHECK_THROWS_WITH(writeFileAtomically(d / "to-null", std::string("x")), ContainsSubstring("is a device"));
  CHECK(fs::is_symlink(d / "to-null"));
  CHECK(fs::is_character_file("/dev/null"));

  fs::create_symlink("loop-b", d / "loop-a");
  fs::create_symlink("loop-a", d / "loop-b");
  CHECK_THROWS_WITH(writeFileAtomically(d / "loop-a", std::string("x")), ContainsSubstring("symbolic links"));

  CHECK_THROWS_WITH(writeFileAtomically(d / "missing-dir" / "f", std::string("x")),
                    ContainsSubstring("cannot open for writing"));
  CHECK(names(d) == std::set<std::string>{"sub", "pipe", "null", "to-null", "loop-a", "loop-b"});
  CHECK(fs::is_empty(d / "sub"));
}

TEST_CASE("an output directory is created and probed; one that cannot be is refused by name") {
  auto d = freshDir("rundir");
  requireWritableDirectory(d / "runs" / "a");
  CHECK(fs::is_directory(d / "runs" / "a"));
  CHECK(fs::is_empty(d / "runs" / "a"));
  { std::ofstream(d / "file") << "x"; }
  CHECK_THROWS_WITH(requireWritableDirectory(d / "file"),
                    ContainsSubstring("file") && ContainsSubstring("directory"));
  CHECK_THROWS_WITH(requireWritableDirectory(d / "file" / "sub"),
                    ContainsSubstring("cannot create the output directory"));
  CHECK(contents(d / "file") == "x");
}

TEST_CASE("AtomicFileWriter: pieces and a patch land at commit; abandoned, nothing changes", "[io]") {
  const fs::path dir = freshDir("writer"), target = dir / "out.bin";
  std::ofstream(target) << "old";
  {
    AtomicFileWriter w(target);
    w.append(bytes("hello, "));
    w.append(bytes("world"));
    CHECK(w.size() == 12);
    w.writeAt(0, bytes("J"));
    CHECK_THROWS_WITH(w.writeAt(10, bytes("xyz")), ContainsSubstring("outside the bytes written"));
    CHECK(contents(target) == "old"); // not yet
  }
  CHECK(contents(target) == "old"); // abandoned: the temporary is gone, the target untouched
  CHECK(names(dir).size() == 1);
  AtomicFileWriter w(target);
  w.append(bytes("hello, world"));
  w.writeAt(7, bytes("W"));
  w.commit();
  CHECK(contents(target) == "hello, World");
  CHECK(names(dir).size() == 1);
  CHECK_THROWS_WITH(w.append(bytes("late")), ContainsSubstring("after commit"));
}

TEST_CASE("StagedDirectory: appears whole at commit, replaces an earlier export, refuses anything else",
          "[io]") {
  const fs::path root = freshDir("staged"), target = root / "export";
  {
    StagedDirectory s(target, "config.json");
    std::ofstream(s.path() / "config.json") << "{}";
    CHECK_FALSE(fs::exists(target));
  }
  CHECK_FALSE(fs::exists(target)); // abandoned: nothing anywhere
  CHECK(names(root).size() == 0);
  {
    StagedDirectory s(target, "config.json");
    std::ofstream(s.path() / "config.json") << "first";
    std::ofstream(s.path() / "a.bin") << "a";
    s.commit();
  }
  CHECK(contents(target / "config.json") == "first");
  {
    StagedDirectory s(target, "config.json"); // holds config.json: an earlier export, replaced whole
    std::ofstream(s.path() / "config.json") << "second";
    s.commit();
  }
  CHECK(contents(target / "config.json") == "second");
  CHECK_FALSE(fs::exists(target / "a.bin"));
  CHECK(names(root).size() == 1);

  const fs::path mine = root / "mine";
  fs::create_directories(mine);
  std::ofstream(mine / "notes.txt") << "keep";
  CHECK_THROWS_WITH(StagedDirectory(mine, "config.json"), ContainsSubstring("holds no config.json"));
  CHECK(contents(mine / "notes.txt") == "keep");
  std::ofstream(root / "file") << "x";
  CHECK_THROWS_WITH(StagedDirectory(root / "file", "config.json"), ContainsSubstring("not a directory"));
  fs::create_directories(root / "empty");
  StagedDirectory empty(root / "empty", "config.json");
  empty.commit();
  CHECK(fs::is_directory(root / "empty"));
}

TEST_CASE("MappedFile: the bytes of the file; a missing file is named", "[io]") {
  const fs::path dir = freshDir("mapped");
  std::ofstream(dir / "f.bin", std::ios::binary) << std::string("ab\0cd", 5);
  const MappedFile m(dir / "f.bin");
  REQUIRE(m.size() == 5);
  CHECK(std::to_integer<char>(m.bytes()[3]) == 'c');
  std::ofstream(dir / "empty.bin");
  CHECK(MappedFile(dir / "empty.bin").size() == 0);
  CHECK_THROWS_WITH(MappedFile(dir / "missing.bin"), ContainsSubstring("missing.bin: cannot open"));
}
