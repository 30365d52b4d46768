// Open models in and out (engine/train/hf): small random LlamaForCausalLM (Llama 2, Llama 3 with rope_type
// llama3, SmolLM2-like with a padded vocabulary, every bias), Qwen2ForCausalLM (tied and untied) and
// MistralForCausalLM checkpoints written by tests/train/hf_models.py (single-file and sharded; F32, F16,
// BF16; grouped-query heads; a head dim that is not hidden / heads) load, and Helios' f32 logits match that
// script's float64 NumPy forward; export -> import is bit-identical and, in the stored type of the source,
// writes the source's very bytes; broken checkpoints are refused naming the file and the field or tensor;
// config.json's fields map both ways.
#include "common.hpp"
#include "engine/io/npy.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/hf/config.hpp"
#include "engine/train/hf/export.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/hf/shards.hpp"
#include "hf_models.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

// A checkpoint directory of `name`, optionally broken on purpose.
// `use` names the test case in the directory: ctest runs the cases in parallel, each in its own directory.
fs::path writeCase(const std::string& use, const std::string& name, const std::string& broken = "") {
  const fs::path dir = test::tempDir("hf-" + use + "-" + name + (broken.empty() ? "" : "-" + broken)) / "model";
  test::writeHfCase(name, dir, broken);
  return dir;
}

std::vector<float> referenceLogits(const fs::path& dir, const fs::path& ids) {
  const fs::path out = dir.parent_path() / "reference-logits.npy";
  const auto r = test::hfModels(fmt::format("forward {} {} {}", dir.string(), ids.string(), out.string()));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  return io::readNpy(out).toFloat();
}

std::unique_ptr<train::Model> importModel(const train::hf::Import& im) {
  nlohmann::json arch = train::toJson(im.config);
  arch["kind"] = "gpt";
  auto model = train::makeModel(test::trainCtx(), arch, 1);
  train::hf::loadImport(test::trainCtx(), *model, im);
  return model;
}

std::map<std::string, std::vector<float>> parameters(train::Model& m) {
  std::map<std::string, std::vector<float>> out;
  for (auto& p : m.parameters())
    out[p.name] = test::trainCtx().downloadVector<float>(p.data, p.elements);
  return out;
}

nlohmann::json readJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Every tensor's stored bytes in a directory's safetensors files, by name.
std::map<std::string, std::string> storedTensors(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".safetensors") {
      const train::SafetensorsReader r(entry.path(), train::AcceptTypes::Floats);
      for (const auto& t : r.tensors()) {
        const auto b = r.storedBytes(t.name);
        out[t.name] = std::string(reinterpret_cast<const char*>(b.data()), b.size());
      }
    }
  return out;
}

constexpr const char* kCases[] = {"llama2",     "llama3",       "smollm2", "llama-bias",
                                  "qwen2-tied", "qwen2-untied", "mistral"};

} // namespace

TEST_CASE("hf models: Helios' f32 logits match a float64 NumPy forward of each family", "[train][hf]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const std::string name = GENERATE(from_range(std::begin(kCases), std::end(kCases)));
  INFO(name << ", seed " << test::testSeed());
  const fs::path dir = writeCase("logits", name);
  const train::hf::Import im = train::hf::openImport(dir);
  auto model = importModel(im);
  const uint32_t batch = 2, T = 13; // odd T: no tile lines up
  const std::vector<int32_t> ids = test::randomIds(size_t(batch) * T, im.config.vocab);
  test::writeIds(dir.parent_path() / "ids.npy", ids, batch);
  const std::vector<float> ref = referenceLogits(dir, dir.parent_path() / "ids.npy");
  const std::vector<float> got = test::modelLogits(*model, ids, batch);
  REQUIRE(got.size() == ref.size());
  float worst = 0, scale = 1;
  for (size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - ref[i])); // NaN poison fails the next check
    scale = std::max(scale, std::abs(ref[i]));
    REQUIRE(std::isfinite(got[i]));
  }
  // f32 against float64 over 2 layers of width <= 48: a few 1e-6 of the logits' scale on lavapipe.
  CHECK(worst <= 2e-5f * scale);
}

TEST_CASE("hf models: export -> import is bit-identical, and the source's stored type gives its bytes",
          "[train][hf]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const std::string name = GENERATE(as<std::string>{}, "llama2", "llama3", "qwen2-tied", "mistral");
  INFO(name);
  const fs::path dir = writeCase("roundtrip", name);
  const train::hf::Import im = train::hf::openImport(dir);
  auto model = importModel(im);
  const auto before = parameters(*model);
  const fs::path ckpt = dir.parent_path() / "step";
  const nlohmann::json state{{"tokenizer", train::hf::importTokenizer(im)->toJson()}};
  train::saveCheckpoint(test::trainCtx(), ckpt, *model, 1, state);

  const auto sourceBytes = storedTensors(dir);
  train::hf::ExportOptions o;
  o.dtype = im.weights->tensors().front()->stored;
  o.maxShardBytes = name == "qwen2-tied" ? 20000 : 5'000'000'000; // sharded: several files and the index
  const fs::path out = dir.parent_path() / "export";
  fs::create_directories(out);
  const std::vector<std::string> files = train::hf::exportHf(ckpt, out, o);
  CHECK(files.front() == "config.json");
  CHECK((files.size() > 3) == (name == "qwen2-tied"));
  if (name == "qwen2-tied") {
    const nlohmann::json index = readJson(out / "model.safetensors.index.json");
    CHECK(index["weight_map"]["model.embed_tokens.weight"] == files[1]);
    CHECK(index["metadata"]["total_size"].get<uint64_t>() > 0);
  }
  const auto exported = storedTensors(out);
  for (const auto& [tensor, bytes] : sourceBytes) {
    INFO(tensor);
    if (tensor.ends_with("rotary_emb.inv_freq")) {
      CHECK_FALSE(exported.count(tensor)); // a buffer, not a parameter
      continue;
    }
    REQUIRE(exported.count(tensor));
    CHECK(exported.at(tensor) == bytes);
  }
  const nlohmann::json src = readJson(dir / "config.json"), cfg = readJson(out / "config.json");
  for (const char* key :
       {"architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "vocab_size", "max_position_embeddings", "tie_word_embeddings"})
    CHECK(cfg.at(key) == src.at(key));

  const train::hf::Import back = train::hf::openImport(out);
  CHECK(train::toJson(back.config) == train::toJson(im.config));
  auto again = importModel(back);
  const auto after = parameters(*again);
  for (const auto& [param, v] : before) {
    INFO(param);
    CHECK(std::memcmp(after.at(param).data(), v.data(), v.size() * 4) == 0);
  }
}

TEST_CASE("hf models: broken checkpoints are refused naming the file and the field or tensor",
          "[train][hf]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  struct Break {
    const char* name;
    const char* model;
    std::vector<std::string> says;
  };
  const Break b = GENERATE(
      Break{"unknown-architecture",
            "llama2",
            {"config.json: field 'architectures'", "GemmaForCausalLM", "does not build"}},
      Break{"missing-field", "llama3", {"config.json: field 'hidden_size' is missing"}},
      Break{"bad-kv-heads",
            "qwen2-tied",
            {"field 'num_key_value_heads' (3) does not divide num_attention_heads 4"}},
      Break{"bad-eps", "mistral", {"field 'rms_norm_eps' is -1e-06: expected a number in (0, 1]"}},
      Break{"rope-yarn", "llama2", {"rope_scaling: field 'rope_type' is 'yarn'", "default and llama3"}},
      Break{"missing-shard",
            "llama3",
            {"model.safetensors.index.json: shard model-00003-of-00003.safetensors", "missing"}},
      Break{"wrong-shape",
            "qwen2-untied",
            {"model.safetensors: tensor 'model.layers.1.mlp.up_proj.weight' has shape [32, 56], expected "
             "[56, 32]"}},
      Break{"wrong-dtype",
            "llama2",
            {"model.safetensors: tensor 'model.layers.0.self_attn.v_proj.weight' has dtype F64"}},
      Break{"missing-tensor",
            "qwen2-tied",
            {"tensor 'model.layers.1.post_attention_layernorm.weight' is missing"}},
      Break{"unexpected-tensor",
            "mistral",
            {"tensor 'model.layers.2.input_layernorm.weight' is not part of a MistralForCausalLM with 2 "
             "layers"}},
      Break{"untied-copy-differs", "smollm2", {"lm_head.weight differs from the token embedding"}});
  INFO(b.name);
  const fs::path dir = writeCase("refuse", b.model, b.name);
  std::string message;
  try {
    train::hf::openImport(dir);
  } catch (const std::exception& e) {
    message = e.what();
  }
  INFO(message);
  for (const std::string& s : b.says)
    CHECK_THAT(message, ContainsSubstring(s));
}

TEST_CASE("hf config: each family's fields map to the GptConfig transformers computes, and back",
          "[train][hf]") {
  nlohmann::json llama{{"architectures", {"LlamaForCausalLM"}},
                       {"model_type", "llama"},
                       {"vocab_size", 128256},
                       {"hidden_size", 2048},
                       {"intermediate_size", 8192},
                       {"num_hidden_layers", 16},
                       {"num_attention_heads", 32},
                       {"num_key_value_heads", 8},
                       {"head_dim", 64},
                       {"max_position_embeddings", 131072},
                       {"rms_norm_eps", 1e-5},
                       {"rope_theta", 500000.0},
                       {"rope_scaling",
                        {{"rope_type", "llama3"},
                         {"factor", 32.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}}},
                       {"tie_word_embeddings", true}};
  model::GptConfig c = train::hf::configFromHf(llama, "config.json");
  CHECK(c.family == model::Family::Llama);
  CHECK(c.headDim == 0); // 64 = 2048 / 32: the derived value
  CHECK(c.headSize() == 64);
  CHECK(c.kvHeadCount() == 8);
  CHECK(c.mlpWidth() == 8192);
  CHECK(c.context == 131072);
  CHECK(c.ropeTheta == 500000.0);
  CHECK(c.ropeScaling.kind == model::RopeScalingKind::Llama3);
  CHECK(c.ropeScaling.factor == 32.0);
  CHECK(c.ropeScaling.originalContext == 8192);
  CHECK(c.bias == model::BiasPlacement::None);
  CHECK(c.tiedHead);
  CHECK(c.parameterCount() == 1235814400); // Llama-3.2-1B's published count
  const nlohmann::ordered_json out =
      train::hf::hfConfig(c, train::StoredType::BF16, {128000, {128001, 128009}});
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
                          "tie_word_embeddings", "rope_theta", "architectures", "model_type"})
    CHECK(nlohmann::json(out.at(key)) == llama.at(key));
  CHECK(out.at("rope_scaling").at("rope_type") == "llama3");
  CHECK(out.at("rope_parameters").at("factor") == 32.0);
  CHECK(out.at("rope_parameters").at("rope_theta") == 500000.0);
  CHECK(out.at("attention_bias") == false);
  CHECK(out.at("mlp_bias") == false);
  CHECK(out.at("rms_norm_eps").get<double>() == 1e-5);
  CHECK(out.at("torch_dtype") == "bfloat16");
  CHECK(out.at("dtype") == "bfloat16");
  CHECK(out.at("bos_token_id") == 128000);
  CHECK(out.at("eos_token_id") == nlohmann::json{128001, 128009});
  CHECK(train::toJson(train::hf::configFromHf(nlohmann::json(out), "export")) == train::toJson(c));

  // Qwen2.5-0.5B in transformers 5's form (rope_parameters, no rope_theta at the top).
  nlohmann::json qwen{{"architectures", {"Qwen2ForCausalLM"}},
                      {"vocab_size", 151936},
                      {"hidden_size", 896},
                      {"intermediate_size", 4864},
                      {"num_hidden_layers", 24},
                      {"num_attention_heads", 14},
                      {"num_key_value_heads", 2},
                      {"max_position_embeddings", 32768},
                      {"rms_norm_eps", 1e-6},
                      {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1000000.0}}},
                      {"tie_word_embeddings", true},
                      {"use_sliding_window", false},
                      {"sliding_window", 32768}};
  c = train::hf::configFromHf(qwen, "config.json");
  CHECK(c.family == model::Family::Qwen2);
  CHECK(c.bias == model::BiasPlacement::Qkv);
  CHECK(c.ropeTheta == 1000000.0);
  CHECK(c.slidingWindow == 0);
  CHECK(c.parameterCount() == 494032768); // Qwen2.5-0.5B's published count
  qwen["use_sliding_window"] = true;
  qwen["max_window_layers"] = 21;
  CHECK_THROWS_WITH(train::hf::configFromHf(qwen, "q/config.json"),
                    ContainsSubstring("q/config.json: field 'use_sliding_window'"));

  nlohmann::json mistral{{"architectures", {"MistralForCausalLM"}},
                         {"vocab_size", 32000},
                         {"hidden_size", 64},
                         {"intermediate_size", 96},
                         {"num_hidden_layers", 2},
                         {"num_attention_heads", 16}};
  c = train::hf::configFromHf(mistral, "config.json");
  CHECK(c.slidingWindow == 4096); // MistralConfig's defaults: window 4096, 8 kv heads, 2^17 positions
  CHECK(c.kvHeadCount() == 8);
  CHECK(c.context == 131072);
  CHECK(c.normEps == 1e-6f);
  CHECK_FALSE(c.tiedHead);
  mistral["sliding_window"] = nullptr;
  CHECK(train::hf::configFromHf(mistral, "config.json").slidingWindow == 0);
  CHECK(train::hf::hfConfig(train::hf::configFromHf(mistral, "c"), train::StoredType::F32, {})
            .at("sliding_window") == nullptr);

  nlohmann::json llama2 = llama;
  llama2.erase("head_dim");
  llama2["hidden_act"] = "gelu";
  CHECK_THROWS_WITH(train::hf::configFromHf(llama2, "x.json"),
                    ContainsSubstring("x.json: field 'hidden_act' is 'gelu'"));
  llama2["hidden_act"] = "silu";
  llama2["model_type"] = "mistral";
  CHECK_THROWS_WITH(train::hf::configFromHf(llama2, "x.json"),
                    ContainsSubstring("field 'model_type' is 'mistral'"));
  llama2.erase("architectures");
  CHECK(train::hf::configFromHf(llama2, "x.json").family == model::Family::Mistral);

  // Helios' own layouts a family cannot hold are refused by name on export.
  model::GptConfig native;
  native.norm = model::NormKind::RMSNorm;
  CHECK_THAT(train::hf::exportIncompatibility(native), ContainsSubstring("RMSNorm"));
  native.family = model::Family::Qwen2;
  native.mlp = model::MlpKind::SwiGLU;
  native.rope = true;
  CHECK_THAT(train::hf::exportIncompatibility(native), ContainsSubstring("biases (all)"));
  native.family = model::Family::Llama;
  CHECK(train::hf::exportIncompatibility(native).empty()); // every bias: attention_bias and mlp_bias
}

TEST_CASE("hf shards: tensors fill files in order up to the limit; a larger tensor gets its own",
          "[train][hf]") {
  const train::hf::ShardPlan one = train::hf::planShards({10, 20, 30}, 100);
  CHECK(one.files == std::vector<std::string>{"model.safetensors"});
  const train::hf::ShardPlan three = train::hf::planShards({40, 50, 200, 10, 10}, 100);
  CHECK(three.files == std::vector<std::string>{"model-00001-of-00003.safetensors",
                                                "model-00002-of-00003.safetensors",
                                                "model-00003-of-00003.safetensors"});
  CHECK(three.fileOf == std::vector<size_t>{0, 0, 1, 2, 2});
  CHECK(three.totalBytes == 310);
  const auto index = train::hf::shardIndex(three, {"a", "b", "c", "d", "e"});
  CHECK(index.at("weight_map").at("c") == "model-00002-of-00003.safetensors");
  CHECK(index.at("metadata").at("total_size") == 310);
}
