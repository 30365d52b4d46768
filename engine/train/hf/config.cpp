#include "engine/train/hf/config.hpp"

#include "engine/train/hf/config_families.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train::hf {

namespace {

using model::Family;

constexpr Family kFamilies[] = {Family::Gpt2, Family::Llama, Family::Qwen2, Family::Mistral};

std::string knownArchitectures() {
  std::string s;
  for (const Family f : kFamilies)
    s += (s.empty() ? "" : ", ") + std::string(architectureName(f));
  return s;
}

// The family config.json names: its architectures entry (one known name), else its model_type.
Family familyOf(const Fields& f) {
  if (f.has("architectures")) {
    const nlohmann::json& a = f.raw("architectures");
    if (!a.is_array() || a.size() != 1 || !a[0].is_string())
      f.refuse("architectures", fmt::format("is {}: expected a list of one architecture", a.dump()));
    for (const Family fam : kFamilies)
      if (a[0] == architectureName(fam)) {
        const std::string type = f.text("model_type", model::familyName(fam));
        if (type != model::familyName(fam))
          f.refuse("model_type",
                   fmt::format("is '{}' but architectures names {}", type, architectureName(fam)));
        return fam;
      }
    f.refuse("architectures", fmt::format("names {}, which Helios does not build (it builds {})", a[0].dump(),
                                          knownArchitectures()));
  }
  if (!f.has("model_type")) f.refuse("architectures", "is missing, and so is model_type");
  const std::string type = f.text("model_type", "");
  for (const Family fam : kFamilies)
    if (type == model::familyName(fam)) return fam;
  f.refuse("model_type",
           fmt::format("is '{}', which Helios does not build (it builds {})", type, knownArchitectures()));
}

const char* torchDtype(StoredType t) {
  return t == StoredType::F32 ? "float32" : t == StoredType::F16 ? "float16" : "bfloat16";
}

} // namespace

const char* architectureName(Family f) {
  switch (f) {
  case Family::Gpt2:
    return "GPT2LMHeadModel";
  case Family::Llama:
    return "LlamaForCausalLM";
  case Family::Qwen2:
    return "Qwen2ForCausalLM";
  case Family::Mistral:
    return "MistralForCausalLM";
  }
  return "?";
}

model::GptConfig configFromHf(const nlohmann::json& cfg, const std::string& file) {
  if (!cfg.is_object()) throw std::invalid_argument(file + ": not a JSON object");
  const Fields f(cfg, file);
  const Family family = familyOf(f);
  return family == Family::Gpt2 ? gpt2FromHf(f) : llamaFromHf(f, family);
}

std::string exportIncompatibility(const model::GptConfig& c) {
  return c.family == Family::Gpt2 ? gpt2Incompatibility(c) : llamaIncompatibility(c);
}

nlohmann::ordered_json hfConfig(const model::GptConfig& c, StoredType dtype, const TokenIds& ids) {
  if (const std::string why = exportIncompatibility(c); !why.empty())
    throw std::invalid_argument(fmt::format("cannot export as {}: {}", architectureName(c.family), why));
  nlohmann::ordered_json j = c.family == Family::Gpt2 ? gpt2Config(c, ids) : llamaConfig(c, ids);
  j["torch_dtype"] = torchDtype(dtype); // transformers 4's name
  j["dtype"] = torchDtype(dtype);       // and 5's
  return j;
}

} // namespace helios::train::hf
