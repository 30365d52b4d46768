// safetensors in pieces: SafetensorsWriter writes tensor by tensor (F32, F16, BF16; large tensors in chunks)
// and patches the checksums into the header it wrote first; what it writes reads back through the mapped
// SafetensorsReader with every checksum verified; a short write leaves the target as it was.
#include "common.hpp"

#include "engine/core/half.hpp"
#include "engine/train/safetensors.hpp"
#include "support/files.hpp"
#include "support/random.hpp"

#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

TEST_CASE("safetensors streaming: tensor by tensor, checksums patched in, read back mapped",
          "[train][checkpoint]") {
  const fs::path dir = test::tempDir("safetensors-stream"), path = dir / "s.safetensors";
  // One tensor past the writer's 4M-value chunk, so its bytes and checksum are built in pieces.
  const std::vector<float> big = test::randomFloats((4u << 20) + 77, -3.0f, 3.0f);
  const std::vector<float> small = test::randomFloats(33, -1.0f, 1.0f);
  std::vector<train::TensorInfo> infos{{"big", {big.size()}, train::StoredType::F32},
                                       {"half", {3, 11}, train::StoredType::F16},
                                       {"brain", {33}, train::StoredType::BF16}};
  {
    train::SafetensorsWriter w(path, {{"format", "pt"}, {"k", "v"}}, infos);
    w.write(big);
    w.write(small);
    CHECK_THROWS_WITH(w.commit(), ContainsSubstring("2 of 3 tensors written"));
  }
  CHECK_FALSE(fs::exists(path)); // nothing replaced by an unfinished write
  train::SafetensorsWriter w(path, {{"format", "pt"}, {"k", "v"}}, infos);
  CHECK_THROWS_WITH(w.write(small), ContainsSubstring("has 33 values for shape [4194381]"));
  w.write(big);
  w.write(small);
  w.write(small);
  w.commit();

  const train::SafetensorsReader r(path, train::AcceptTypes::Floats);
  CHECK(r.checksummed());
  CHECK(r.metadata().at("k") == "v");
  REQUIRE(r.tensors().size() == 3);
  CHECK(r.tensors()[1].name == "half");
  CHECK(std::memcmp(r.read("big").data(), big.data(), big.size() * 4) == 0);
  const std::vector<float> half = r.read("half"), brain = r.read("brain");
  for (size_t i = 0; i < small.size(); ++i) {
    CHECK(half[i] == halfToFloat(floatToHalf(small[i])));
    CHECK(brain[i] == bf16ToFloat(floatToBf16(small[i])));
  }
  CHECK(r.storedBytes("brain").size() == 66);
  // The same bytes as the whole-file writer, and its checksums hold when one byte changes.
  CHECK(train::readSafetensors(path, false, train::AcceptTypes::Floats).checksummed);
  std::string raw = test::slurp(path);
  raw[raw.size() - 1] = char(raw[raw.size() - 1] ^ 1);
  test::spit(path, raw);
  const train::SafetensorsReader altered(path, train::AcceptTypes::Floats);
  CHECK_THROWS_WITH(altered.read("brain"), ContainsSubstring("checksum mismatch in tensor 'brain'"));
  CHECK_NOTHROW(altered.read("half"));
}
