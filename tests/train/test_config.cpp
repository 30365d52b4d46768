// The configuration's enum keys (one table per enum, engine/core/enum_names.hpp) and its presets: every
// spelling reads back as its value and is written as it reads, a bad spelling names the key and every
// accepted one, and a preset sets exactly its documented values.
#include "engine/core/enum_names.hpp"
#include "engine/train/config.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;

namespace {

enum class Three { A, B, C, Missing };
constexpr EnumName<Three> kOne[] = {{Three::A, "a"}};
constexpr EnumName<Three> kTwo[] = {{Three::A, "a"}, {Three::B, "b"}};
constexpr EnumName<Three> kThree[] = {{Three::A, "a"}, {Three::B, "b"}, {Three::C, "c"}};

// Every name of `table` set under `key` in the "gpt" JSON reads back as its value, and toJson writes it back
// (keys written only where they differ from the default are checked where they do).
template <class E, size_t N>
void roundTrips(const EnumName<E> (&table)[N], const char* key, E model::GptConfig::*field) {
  for (const EnumName<E>& e : table) {
    INFO(key << " = " << e.name);
    model::GptConfig c;
    c.*field = table[(&e - table + 1) % N].value; // another value first: the read must replace it
    train::fromJson(nlohmann::json{{key, e.name}}, c);
    CHECK(c.*field == e.value);
    const nlohmann::json j = train::toJson(c);
    if (e.value != model::GptConfig{}.*field || j.contains(key))
      CHECK(j.at(key).get<std::string>() == e.name);
    model::GptConfig back;
    train::fromJson(j, back);
    CHECK(back.*field == e.value);
  }
}

} // namespace

TEST_CASE("config: an enum table names each value once, both ways", "[train][config]") {
  CHECK(enumSpellings(kOne) == "a");
  CHECK(enumSpellings(kTwo) == "a or b");
  CHECK(enumSpellings(kThree) == "a, b or c");
  CHECK(std::string(enumName(kThree, Three::B)) == "b");
  CHECK(std::string(enumName(kThree, Three::Missing)) == "?");
  CHECK(parseEnum(kThree, "c", "letter") == Three::C);
  CHECK_THROWS_WITH(parseEnum(kThree, "d", "letter"), Equals("letter 'd' (a, b or c)"));
  CHECK_THROWS_WITH(parseEnum(kThree, "", "letter"), Equals("letter '' (a, b or c)"));
}

TEST_CASE("config: every enum key reads and writes its spellings; a bad one names the key and the choices",
          "[train][config]") {
  roundTrips(model::kNormNames, "norm", &model::GptConfig::norm);
  roundTrips(model::kMlpNames, "mlp", &model::GptConfig::mlp);
  roundTrips(model::kPrecisionNames, "precision", &model::GptConfig::precision);
  roundTrips(model::kBiasPlacementNames, "bias", &model::GptConfig::bias);
  roundTrips(model::kFamilyNames, "family", &model::GptConfig::family);
  model::GptConfig c;
  train::fromJson(nlohmann::json{{"param_dtype", "bf16"}}, c);
  CHECK(c.paramDtype == codegen::Elem::BF16);
  CHECK(train::toJson(c).at("param_dtype") == "bf16");

  const struct {
    const char* key;
    const char* value;
    const char* says;
  } bad[] = {
      {"norm", "batchnorm", "norm 'batchnorm' (layernorm or rmsnorm)"},
      {"mlp", "relu", "mlp 'relu' (gelu or swiglu)"},
      {"precision", "fp8", "precision 'fp8' (f32, mixed or bf16)"},
      {"param_dtype", "f16", "param_dtype 'f16' (f32 or bf16)"},
      {"bias", "some", "bias 'some' (all, none, qkv, attention or mlp)"},
      {"family", "gpt3", "family 'gpt3' (gpt2, llama, qwen2 or mistral)"},
  };
  for (const auto& b : bad) {
    model::GptConfig d;
    const nlohmann::json before = train::toJson(d);
    CHECK_THROWS_WITH(train::fromJson(nlohmann::json{{b.key, b.value}}, d), Equals(b.says));
    CHECK(train::toJson(d) == before); // nothing read
  }
  CHECK_THROWS_WITH(train::fromJson(nlohmann::json{{"norm", 3}}, c),
                    ContainsSubstring("config key 'norm': 3 is not a valid value"));
  CHECK(train::parsePrecision("mixed") == model::Precision::Mixed);
  CHECK_THROWS_WITH(train::parsePrecision("fp8"), Equals("precision 'fp8' (f32, mixed or bf16)"));
  CHECK_THROWS_WITH(train::parseParamDtype("f16"), Equals("parameter dtype 'f16' (f32 or bf16)"));
  CHECK(std::string(train::precisionName(model::Precision::BF16)) == "bf16");

  model::GptConfig llama;
  llama.norm = model::NormKind::RMSNorm, llama.mlp = model::MlpKind::SwiGLU;
  llama.family = model::Family::Llama, llama.bias = model::BiasPlacement::None;
  CHECK_THAT(train::describeGpt(llama), ContainsSubstring("rmsnorm swiglu"));
  CHECK_THAT(llama.describe(), ContainsSubstring(" rmsnorm swiglu"));
  CHECK_THAT(llama.describe(), ContainsSubstring(" bias-none"));
  CHECK_THAT(llama.describe(), ContainsSubstring(" llama"));
}

TEST_CASE("config: a preset sets its documented values and leaves the rest", "[train][config]") {
  CHECK(std::string(train::presetNames()) == "tiny, char, gpt2-small");
  // Values no preset sets, different from the defaults: a preset must leave them.
  train::TrainConfig start;
  start.seed = 77, start.gradAccum = 3, start.beta1 = 0.8f, start.gpt.rope = true, start.gpt.mlpMult = 2;
  start.gpt.precision = model::Precision::BF16;

  train::TrainConfig tiny = start;
  train::applyPreset(tiny, "tiny");
  CHECK(tiny.model == "gpt");
  CHECK(tiny.tokenizer == "byte");
  CHECK((tiny.gpt.vocab == 256 && tiny.gpt.layers == 4 && tiny.gpt.dim == 128 && tiny.gpt.heads == 4));
  CHECK((tiny.gpt.context == 128 && tiny.seqLen == 128 && tiny.batch == 8));
  CHECK(tiny.lr == 1e-3f);
  CHECK((tiny.warmup == 20 && tiny.steps == 200 && tiny.evalEvery == 50));
  CHECK(tiny.gpt.precision == model::Precision::BF16);

  train::TrainConfig chr = start;
  train::applyPreset(chr, "char");
  CHECK(chr.tokenizer == "char");
  CHECK((chr.gpt.vocab == 0 && chr.gpt.layers == 6 && chr.gpt.dim == 384 && chr.gpt.heads == 6));
  CHECK((chr.gpt.context == 256 && chr.seqLen == 256 && chr.batch == 64));
  CHECK(chr.lr == 1e-3f);
  CHECK(chr.beta2 == 0.99f);
  CHECK((chr.warmup == 100 && chr.steps == 5000 && chr.evalEvery == 250));

  train::TrainConfig small = start;
  train::applyPreset(small, "gpt2-small");
  CHECK(
      (small.gpt.vocab == 50304 && small.gpt.layers == 12 && small.gpt.dim == 768 && small.gpt.heads == 12));
  CHECK((small.gpt.context == 1024 && small.seqLen == 1024 && small.batch == 16));
  CHECK(small.lr == 6e-4f);
  CHECK((small.warmup == 700 && small.steps == 20000 && small.evalEvery == 500));
  CHECK(small.gpt.precision == model::Precision::Mixed);

  for (const train::TrainConfig* c : {&tiny, &chr, &small}) {
    CHECK((c->seed == 77 && c->gradAccum == 3 && c->beta1 == 0.8f && c->gpt.rope && c->gpt.mlpMult == 2));
    CHECK_NOTHROW(c->validate());
  }
  CHECK(tiny.beta2 == start.beta2);

  train::TrainConfig unknown = start;
  CHECK_THROWS_WITH(train::applyPreset(unknown, "huge"),
                    Equals("unknown preset 'huge' (tiny, char, gpt2-small)"));
  CHECK(train::toJson(unknown) == train::toJson(start));
}
