// Hugging Face GPT-2 export and import (engine/train/hf): config.json's fields, GPT-2's names and Conv1D
// layout, an exact export -> import round trip (f32; f16/bf16 round once and then stay), a float64 NumPy
// forward over the exported file (tests/train/hf_gpt2_forward.py) against Helios' logits, and the refusals.
#include "common.hpp"
#include "engine/core/half.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/io/npy.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/hf/config.hpp"
#include "engine/train/hf/export.hpp"
#include "engine/train/hf/import.hpp"
#include "support/process.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <fmt/format.h>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

model::GptConfig tinyGpt2() {
  model::GptConfig c;
  c.vocab = 53; // odd sizes: nothing lines up by accident
  c.context = 13;
  c.layers = 2;
  c.dim = 32;
  c.heads = 2;
  return c;
}

std::unique_ptr<train::Model> makeGpt(const model::GptConfig& c) {
  nlohmann::json j = train::toJson(c);
  j["kind"] = "gpt";
  return train::makeModel(test::trainCtx(), j, 1);
}

// Weights far from the init (norm gains around 1, non-zero biases), so every tensor moves the logits.
std::map<std::string, std::vector<float>> randomize(train::Model& m) {
  std::map<std::string, std::vector<float>> values;
  for (auto& p : m.parameters()) {
    const bool gain = p.name.find("ln") != std::string::npos && p.name.ends_with(".weight");
    std::vector<float> v = test::randomFloats(p.elements, -0.3f, 0.3f);
    if (gain)
      for (float& x : v)
        x += 1.0f;
    test::trainCtx().uploadVector(p.data, v);
    values[p.name] = v;
  }
  return values;
}

// Exports a checkpoint into a fresh `out` (GPT-2's eos id given).
void exportTo(const fs::path& ckpt, const fs::path& out, train::StoredType dtype,
              std::optional<int64_t> eos = {}) {
  fs::remove_all(out);
  fs::create_directories(out);
  train::hf::ExportOptions o;
  o.dtype = dtype;
  if (eos) o.ids.eos = {*eos};
  train::hf::exportHf(ckpt, out, o);
}

// The imported directory's tensors as Helios parameters.
std::map<std::string, std::vector<float>> importedValues(const fs::path& dir, const model::GptConfig& c) {
  const train::hf::Import im = train::hf::openImport(dir);
  auto m = makeGpt(c);
  std::map<std::string, std::vector<float>> out;
  for (auto& p : m->parameters())
    out[p.name] = train::hf::assemble(im, p.name).values;
  return out;
}

fs::path saveRandomCheckpoint(train::Model& m, const std::string& name) {
  const fs::path dir = test::tempDir(name) / "step";
  const nlohmann::json state{{"tokenizer", train::Tokenizer::byteLevel().toJson()}};
  train::saveCheckpoint(test::trainCtx(), dir, m, 7, state);
  return dir;
}

std::vector<float> heliosLogits(train::Model& m, const std::vector<int32_t>& tokens) {
  vk::Context& ctx = test::trainCtx();
  const uint32_t T = static_cast<uint32_t>(tokens.size());
  vk::Buffer tok = ctx.buffer(4ull * T, "tokens"), logits = ctx.buffer(4ull * T * m.vocab(), "logits");
  ctx.uploadVector(tok, tokens);
  graph::GraphExecutor exec(ctx);
  graph::StepArena arena(ctx);
  m.forward(exec, arena, tok.range(), 1, T, logits.range());
  exec.flush();
  return ctx.downloadVector<float>(logits, size_t(T) * m.vocab());
}

// GPT-2's forward in float64 NumPy over the exported files; nullopt when /usr/bin/python3 has no NumPy.
std::optional<std::vector<float>> numpyLogits(const fs::path& hfDir, const std::vector<int32_t>& tokens) {
  if (test::runCommand("/usr/bin/python3 -c 'import numpy'").exitCode != 0) return std::nullopt;
  const fs::path in = hfDir / "tokens.npy", out = hfDir / "numpy-logits.npy";
  io::NpyArray a;
  a.dtype = io::NpyDType::I32;
  a.shape = {tokens.size()};
  a.data.resize(tokens.size() * 4);
  std::memcpy(a.data.data(), tokens.data(), a.data.size());
  io::writeNpy(in, a);
  const auto r = test::runCommand(fmt::format("/usr/bin/python3 {}/tests/train/hf_gpt2_forward.py {} {} {}",
                                              HELIOS_SOURCE_DIR, hfDir.string(), in.string(), out.string()));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  return io::readNpy(out).toFloat();
}

float maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

std::vector<int32_t> randomTokens(uint32_t n, uint32_t vocab) {
  std::vector<int32_t> t(n);
  for (auto& x : t)
    x = static_cast<int32_t>(test::rng()() % vocab);
  return t;
}

} // namespace

TEST_CASE("hf export: config.json, GPT-2 names and the Conv1D layout", "[train][hf]") {
  const model::GptConfig c = tinyGpt2();
  auto m = makeGpt(c);
  const auto values = randomize(*m);
  const fs::path ckpt = saveRandomCheckpoint(*m, "hf-layout"), out = ckpt.parent_path() / "hf";
  exportTo(ckpt, out, train::StoredType::F32, 50);

  std::ifstream in(out / "config.json");
  const nlohmann::json cfg = nlohmann::json::parse(in);
  CHECK(cfg["model_type"] == "gpt2");
  CHECK(cfg["architectures"] == nlohmann::json{"GPT2LMHeadModel"});
  CHECK(cfg["vocab_size"] == 53);
  CHECK(cfg["n_positions"] == 13);
  CHECK(cfg["n_embd"] == 32);
  CHECK(cfg["n_layer"] == 2);
  CHECK(cfg["n_head"] == 2);
  CHECK(cfg["n_inner"] == 128);
  CHECK(cfg["activation_function"] == "gelu_new");
  CHECK(cfg["layer_norm_epsilon"].get<double>() == 1e-5);
  CHECK(cfg["tie_word_embeddings"] == true);
  CHECK(cfg["eos_token_id"] == 50);
  CHECK(cfg["torch_dtype"] == "float32");
  CHECK(train::hf::configFromHf(cfg, "config.json").describe() == c.describe());

  const train::SafeTensorsFile hf = train::readSafetensors(out / "model.safetensors");
  CHECK(hf.metadata.at("format") == "pt");
  CHECK(hf.tensors.size() == 4 + 12 * c.layers);
  CHECK_FALSE(hf.find("lm_head.weight"));
  const auto* cAttn = hf.find("transformer.h.1.attn.c_attn.weight");
  REQUIRE(cAttn);
  CHECK(cAttn->shape == std::vector<uint64_t>{32, 96});
  const auto& qkv = values.at("blocks.1.attn.qkv.weight"); // [96, 32]
  bool transposedExactly = true;
  for (uint32_t o = 0; o < 96; ++o)
    for (uint32_t i = 0; i < 32; ++i)
      transposedExactly = transposedExactly && cAttn->data[i * 96 + o] == qkv[o * 32 + i];
  CHECK(transposedExactly);
  CHECK(hf.find("transformer.h.0.mlp.c_fc.weight")->shape == std::vector<uint64_t>{32, 128});
  CHECK(hf.find("transformer.h.0.mlp.c_proj.weight")->shape == std::vector<uint64_t>{128, 32});
  CHECK(hf.find("transformer.h.0.ln_2.bias")->data == values.at("blocks.0.ln2.bias"));
  CHECK(hf.find("transformer.wpe.weight")->data == values.at("wpe.weight"));
}

TEST_CASE("hf export: export -> import is exact in f32; f16 and bf16 round once", "[train][hf]") {
  const model::GptConfig c = tinyGpt2();
  auto m = makeGpt(c);
  const auto values = randomize(*m);
  const fs::path ckpt = saveRandomCheckpoint(*m, "hf-roundtrip");

  exportTo(ckpt, ckpt.parent_path() / "f32", train::StoredType::F32);
  const train::hf::Import back = train::hf::openImport(ckpt.parent_path() / "f32");
  CHECK(back.config.describe() == c.describe());
  CHECK(back.tokenizer == train::Tokenizer::byteLevel().toJson());
  const auto backValues = importedValues(ckpt.parent_path() / "f32", c);
  REQUIRE(backValues.size() == values.size());
  for (const auto& [name, v] : values) {
    INFO(name);
    CHECK(std::memcmp(backValues.at(name).data(), v.data(), v.size() * 4) == 0);
  }

  for (const auto dtype : {train::StoredType::F16, train::StoredType::BF16}) {
    INFO(train::toString(dtype));
    const fs::path dir = ckpt.parent_path() / train::toString(dtype);
    exportTo(ckpt, dir, dtype);
    const auto header = train::readSafetensors(dir / "model.safetensors", true, train::AcceptTypes::Floats);
    for (const auto& t : header.tensors)
      CHECK(t.stored == dtype);
    const auto imported = importedValues(dir, c);
    bool rounded = true;
    for (const auto& [name, v] : values) {
      const auto& got = imported.at(name);
      for (size_t i = 0; i < v.size(); ++i) {
        const float want =
            dtype == train::StoredType::F16 ? halfToFloat(floatToHalf(v[i])) : bf16ToFloat(floatToBf16(v[i]));
        rounded = rounded && got[i] == want;
      }
    }
    CHECK(rounded);
    // Exporting the imported values again stores the very same bytes.
    auto m2 = makeGpt(c);
    train::hf::loadImport(test::trainCtx(), *m2, train::hf::openImport(dir));
    const fs::path again =
        saveRandomCheckpoint(*m2, std::string("hf-roundtrip-again-") + train::toString(dtype));
    exportTo(again, again.parent_path() / "hf", dtype);
    const train::SafeTensorsFile first =
        train::readSafetensors(dir / "model.safetensors", false, train::AcceptTypes::Floats);
    const train::SafeTensorsFile second = train::readSafetensors(
        again.parent_path() / "hf" / "model.safetensors", false, train::AcceptTypes::Floats);
    REQUIRE(second.tensors.size() == first.tensors.size());
    for (const auto& t : second.tensors)
      CHECK(first.find(t.name)->data == t.data);
  }
}

TEST_CASE("hf export: a NumPy GPT-2 forward over the exported tensors matches Helios' logits",
          "[train][hf]") {
  const model::GptConfig c = tinyGpt2();
  auto m = makeGpt(c);
  randomize(*m);
  const fs::path ckpt = saveRandomCheckpoint(*m, "hf-numpy");
  const std::vector<int32_t> tokens = randomTokens(c.context - 2, c.vocab);

  exportTo(ckpt, ckpt.parent_path() / "f32", train::StoredType::F32);
  const auto ref = numpyLogits(ckpt.parent_path() / "f32", tokens);
  if (!ref) SKIP("/usr/bin/python3 has no NumPy");
  const std::vector<float> helios = heliosLogits(*m, tokens);
  // f32 against float64 (K <= 128, logits of magnitude ~1): about 2e-6 apart on lavapipe; 1e-4 allowed.
  CHECK(maxAbsDiff(helios, *ref) < 1e-4f);

  // f16 and bf16: the imported (rounded) weights loaded into Helios against NumPy over the narrow file.
  for (const auto dtype : {train::StoredType::F16, train::StoredType::BF16}) {
    INFO(train::toString(dtype));
    const fs::path dir = ckpt.parent_path() / train::toString(dtype);
    exportTo(ckpt, dir, dtype);
    train::hf::loadImport(test::trainCtx(), *m, train::hf::openImport(dir));
    CHECK(maxAbsDiff(heliosLogits(*m, tokens), *numpyLogits(dir, tokens)) < 1e-4f);
  }
}

TEST_CASE("hf export: models GPT-2 cannot represent and broken imports are refused by name", "[train][hf]") {
  model::GptConfig rope = tinyGpt2();
  rope.rope = true;
  CHECK_THAT(train::hf::exportIncompatibility(rope), ContainsSubstring("rotary"));
  model::GptConfig rms = tinyGpt2();
  rms.norm = model::NormKind::RMSNorm;
  CHECK_THROWS_WITH(train::hf::hfConfig(rms, train::StoredType::F32, {}), ContainsSubstring("RMSNorm"));
  model::GptConfig gqa = tinyGpt2();
  gqa.kvHeads = 1;
  CHECK_THAT(train::hf::exportIncompatibility(gqa), ContainsSubstring("grouped-query"));
  model::GptConfig swiglu = tinyGpt2();
  swiglu.mlp = model::MlpKind::SwiGLU;
  CHECK_THAT(train::hf::exportIncompatibility(swiglu), ContainsSubstring("SwiGLU"));
  CHECK(train::hf::exportIncompatibility(tinyGpt2()).empty());

  const model::GptConfig c = tinyGpt2();
  nlohmann::json cfg = train::hf::hfConfig(c, train::StoredType::F32, {});
  cfg["activation_function"] = "gelu";
  CHECK_THROWS_WITH(train::hf::configFromHf(cfg, "config.json"),
                    ContainsSubstring("activation_function' is 'gelu'"));
  cfg = train::hf::hfConfig(c, train::StoredType::F32, {});
  cfg["model_type"] = "llama";
  CHECK_THROWS_WITH(train::hf::configFromHf(cfg, "config.json"), ContainsSubstring("model_type"));

  auto m = makeGpt(c);
  const fs::path ckpt = saveRandomCheckpoint(*m, "hf-refusals"), dir = ckpt.parent_path() / "hf";
  exportTo(ckpt, dir, train::StoredType::F32);
  train::SafeTensorsFile hf = train::readSafetensors(dir / "model.safetensors");
  SECTION("a wrong shape") {
    for (auto& t : hf.tensors)
      if (t.name == "transformer.h.0.attn.c_attn.weight") t.shape = {96, 32}; // Linear's layout, not Conv1D's
    train::writeSafetensors(dir / "model.safetensors", hf);
    CHECK_THROWS_WITH(train::hf::openImport(dir), ContainsSubstring("has shape"));
  }
  SECTION("an extra layer's tensor") {
    hf.tensors.push_back({"transformer.h.9.ln_1.weight", {32}, std::vector<float>(32, 1.0f)});
    train::writeSafetensors(dir / "model.safetensors", hf);
    CHECK_THROWS_WITH(train::hf::openImport(dir),
                      ContainsSubstring("not part of a GPT2LMHeadModel with 2 layers"));
  }
  SECTION("an untied head; a tied one and the mask buffers pass, prefix or not") {
    train::SafeTensor head = *hf.find("transformer.wte.weight");
    head.name = "lm_head.weight";
    hf.tensors.push_back(head);
    hf.tensors.push_back({"h.0.attn.bias", {1, 1, 13, 13}, std::vector<float>(169, 1.0f)});
    for (auto& t : hf.tensors)
      if (t.name.rfind("transformer.h.1.", 0) == 0) t.name = t.name.substr(12);
    train::writeSafetensors(dir / "model.safetensors", hf);
    CHECK_NOTHROW(train::hf::loadImport(test::trainCtx(), *m, train::hf::openImport(dir)));
    hf.tensors[hf.tensors.size() - 2].data[3] += 1.0f;
    train::writeSafetensors(dir / "model.safetensors", hf);
    CHECK_THROWS_WITH(train::hf::openImport(dir), ContainsSubstring("lm_head.weight differs"));
  }
  SECTION("a missing tensor") {
    hf.tensors.erase(hf.tensors.begin() + 3);
    train::writeSafetensors(dir / "model.safetensors", hf);
    CHECK_THROWS_WITH(train::hf::openImport(dir), ContainsSubstring("is missing"));
  }
}
