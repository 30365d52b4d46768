#include "engine/train/hf_gpt2.hpp"

#include "engine/io/input_file.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/config.hpp"
#include "engine/train/durable_file.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <set>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

// One tensor of a block: Helios' name, GPT-2's, and whether GPT-2 stores it transposed (Conv1D: [in, out]).
struct NameMap {
  const char* helios;
  const char* hf;
  bool transpose;
};
constexpr NameMap kBlock[] = {
    {"ln1.weight", "ln_1.weight", false},
    {"ln1.bias", "ln_1.bias", false},
    {"attn.qkv.weight", "attn.c_attn.weight", true},
    {"attn.qkv.bias", "attn.c_attn.bias", false},
    {"attn.proj.weight", "attn.c_proj.weight", true},
    {"attn.proj.bias", "attn.c_proj.bias", false},
    {"ln2.weight", "ln_2.weight", false},
    {"ln2.bias", "ln_2.bias", false},
    {"mlp.fc.weight", "mlp.c_fc.weight", true},
    {"mlp.fc.bias", "mlp.c_fc.bias", false},
    {"mlp.proj.weight", "mlp.c_proj.weight", true},
    {"mlp.proj.bias", "mlp.c_proj.bias", false},
};
constexpr NameMap kTop[] = {{"wte.weight", "wte.weight", false},
                            {"wpe.weight", "wpe.weight", false},
                            {"ln_f.weight", "ln_f.weight", false},
                            {"ln_f.bias", "ln_f.bias", false}};

struct Entry {
  std::string helios, hf;
  bool transpose;
  std::vector<uint64_t> shape; // Helios' shape
};

// Every tensor of a GPT-2-compatible configuration, in GPT-2's order, with Helios' (packed) shapes.
std::vector<Entry> entries(const model::GptConfig& c) {
  const uint64_t C = c.dim, hid = uint64_t(c.mlpMult) * c.dim;
  const auto shapeOf = [&](const std::string& n) -> std::vector<uint64_t> {
    if (n == "wte.weight") return {c.vocab, C};
    if (n == "wpe.weight") return {c.context, C};
    if (n == "attn.qkv.weight") return {3 * C, C};
    if (n == "attn.qkv.bias") return {3 * C};
    if (n == "attn.proj.weight") return {C, C};
    if (n == "mlp.fc.weight") return {hid, C};
    if (n == "mlp.fc.bias") return {hid};
    if (n == "mlp.proj.weight") return {C, hid};
    return {C}; // norms and the remaining biases
  };
  std::vector<Entry> out;
  for (int i = 0; i < 2; ++i)
    out.push_back({kTop[i].helios, std::string("transformer.") + kTop[i].hf, false, shapeOf(kTop[i].helios)});
  for (uint32_t l = 0; l < c.layers; ++l)
    for (const NameMap& m : kBlock)
      out.push_back({fmt::format("blocks.{}.{}", l, m.helios), fmt::format("transformer.h.{}.{}", l, m.hf),
                     m.transpose, shapeOf(m.helios)});
  for (int i = 2; i < 4; ++i)
    out.push_back({kTop[i].helios, std::string("transformer.") + kTop[i].hf, false, shapeOf(kTop[i].helios)});
  return out;
}

std::vector<float> transposed(const std::vector<float>& v, uint64_t rows, uint64_t cols) {
  std::vector<float> t(v.size());
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c)
      t[c * rows + r] = v[r * cols + c];
  return t;
}

const SafeTensor& require(const SafeTensorsFile& f, const std::string& name,
                          const std::vector<uint64_t>& shape, const std::string& what) {
  const SafeTensor* t = f.find(name);
  if (!t) throw CheckpointError(fmt::format("{}: tensor '{}' is missing", what, name));
  if (t->shape != shape)
    throw CheckpointError(fmt::format("{}: tensor '{}' has shape {}, expected {}", what, name,
                                      shapeString(t->shape), shapeString(shape)));
  return *t;
}

// A checkpoint with separate Q, K and V projections, packed as one [3C, C] projection (Q, then K, then V).
SafeTensor packQkv(const SafeTensorsFile& f, uint32_t layer, uint64_t C, bool weight) {
  const std::string p = fmt::format("blocks.{}.attn.", layer), suffix = weight ? ".weight" : ".bias";
  SafeTensor out{p + "qkv" + suffix,
                 weight ? std::vector<uint64_t>{3 * C, C} : std::vector<uint64_t>{3 * C},
                 {},
                 StoredType::F32};
  for (const char* part : {"q", "k", "v"}) {
    const SafeTensor& t = require(
        f, p + part + suffix, weight ? std::vector<uint64_t>{C, C} : std::vector<uint64_t>{C}, "checkpoint");
    out.data.insert(out.data.end(), t.data.begin(), t.data.end());
  }
  return out;
}

nlohmann::json readJsonFile(const fs::path& path) {
  io::requireRegularFile(path, "JSON file");
  std::ifstream in(path);
  if (!in)
    throw CheckpointError(
        fmt::format("{}: cannot open (not a Hugging Face model directory?)", path.string()));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw CheckpointError(fmt::format("{}: not a JSON object", path.string()));
  return j;
}

template <class T> T field(const nlohmann::json& hf, const char* key) {
  if (!hf.contains(key) || hf[key].is_null())
    throw std::invalid_argument(fmt::format("config.json: no '{}'", key));
  try {
    return hf[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(fmt::format("config.json: '{}' is {}", key, hf[key].dump()));
  }
}

} // namespace

std::string hfIncompatibility(const model::GptConfig& c) {
  if (c.rope) return "it uses rotary position embeddings (GPT-2 learns absolute positions)";
  if (c.norm != model::NormKind::LayerNorm) return "it uses RMSNorm (GPT-2 uses LayerNorm with a bias)";
  if (c.mlp != model::MlpKind::Gelu) return "its MLP is SwiGLU (GPT-2's is GELU)";
  if (c.kvHeads != 0 && c.kvHeads != c.heads)
    return fmt::format("it uses grouped-query attention ({} kv heads for {} heads)", c.kvHeads, c.heads);
  if (c.dim % c.heads != 0) return "its width is not a multiple of its heads";
  return "";
}

nlohmann::json hfConfig(const model::GptConfig& c, StoredType dtype, std::optional<int64_t> eos) {
  const nlohmann::json eosJson = eos ? nlohmann::json(*eos) : nlohmann::json(nullptr);
  return nlohmann::ordered_json{
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", c.vocab},
      {"n_positions", c.context},
      {"n_ctx", c.context},
      {"n_embd", c.dim},
      {"n_layer", c.layers},
      {"n_head", c.heads},
      {"n_inner", c.mlpMult * c.dim},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", std::stod(fmt::format("{}", c.normEps))}, // shortest form: 1e-05
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"bos_token_id", eosJson},
      {"eos_token_id", eosJson},
      {"torch_dtype", dtype == StoredType::F32   ? "float32"
                      : dtype == StoredType::F16 ? "float16"
                                                 : "bfloat16"},
  };
}

model::GptConfig gptConfigFromHf(const nlohmann::json& hf) {
  const auto refuse = [](const std::string& why) {
    throw std::invalid_argument("config.json: " + why + ": Helios builds GPT-2 models only");
  };
  if (hf.value("model_type", "") != "gpt2")
    refuse(fmt::format("model_type is {}", hf.contains("model_type") ? hf["model_type"].dump() : "missing"));
  const std::string act = hf.value("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    refuse("activation_function '" + act + "' (Helios' GELU is the tanh form, gelu_new)");
  if (!hf.value("tie_word_embeddings", true)) refuse("tie_word_embeddings is false (Helios ties the head)");
  if (!hf.value("scale_attn_weights", true)) refuse("scale_attn_weights is false");
  if (hf.value("scale_attn_by_inverse_layer_idx", false)) refuse("scale_attn_by_inverse_layer_idx is true");
  model::GptConfig c;
  c.vocab = field<uint32_t>(hf, "vocab_size");
  c.context = field<uint32_t>(hf, "n_positions");
  c.dim = field<uint32_t>(hf, "n_embd");
  c.layers = field<uint32_t>(hf, "n_layer");
  c.heads = field<uint32_t>(hf, "n_head");
  c.normEps = static_cast<float>(hf.value("layer_norm_epsilon", 1e-5));
  if (c.dim == 0 || c.heads == 0 || c.dim % c.heads != 0)
    refuse(fmt::format("n_embd {} is not a positive multiple of n_head {}", c.dim, c.heads));
  const uint32_t inner =
      hf.contains("n_inner") && !hf["n_inner"].is_null() ? field<uint32_t>(hf, "n_inner") : 4 * c.dim;
  if (inner == 0 || inner % c.dim != 0)
    refuse(fmt::format("n_inner {} is not a multiple of n_embd {}", inner, c.dim));
  c.mlpMult = inner / c.dim;
  c.kvHeads = 0;
  return c;
}

SafeTensorsFile toHfTensors(const model::GptConfig& c, const SafeTensorsFile& helios, StoredType dtype) {
  if (const std::string why = hfIncompatibility(c); !why.empty())
    throw std::invalid_argument("cannot export as Hugging Face GPT-2: " + why);
  SafeTensorsFile out;
  out.metadata["format"] = "pt";
  for (const Entry& e : entries(c)) {
    SafeTensor t;
    const bool qkv = e.helios.find(".attn.qkv.") != std::string::npos;
    if (qkv && !c.packedQkv) {
      const uint32_t layer = static_cast<uint32_t>(std::stoul(e.helios.substr(7)));
      t = packQkv(helios, layer, c.dim, e.transpose);
    } else {
      t = require(helios, e.helios, e.shape, "checkpoint");
    }
    t.name = e.hf;
    t.stored = dtype;
    if (e.transpose) {
      t.data = transposed(t.data, e.shape[0], e.shape[1]);
      t.shape = {e.shape[1], e.shape[0]};
    }
    out.tensors.push_back(std::move(t));
  }
  return out;
}

SafeTensorsFile fromHfTensors(const model::GptConfig& c, const SafeTensorsFile& hf) {
  // GPT-2 names without the "transformer." prefix (GPT2Model's own files) are the same tensors.
  SafeTensorsFile in;
  const SafeTensor* lmHead = nullptr;
  for (const SafeTensor& t : hf.tensors) {
    std::string name = t.name.rfind("transformer.", 0) == 0 ? t.name.substr(12) : t.name;
    const bool maskBuffer = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    if (maskBuffer) continue;
    if (name == "lm_head.weight") {
      lmHead = &t;
      continue;
    }
    SafeTensor copy = t;
    copy.name = "transformer." + name;
    in.tensors.push_back(std::move(copy));
  }
  SafeTensorsFile out;
  size_t used = 0;
  for (const Entry& e : entries(c)) {
    const std::vector<uint64_t> hfShape =
        e.transpose ? std::vector<uint64_t>{e.shape[1], e.shape[0]} : e.shape;
    SafeTensor t = require(in, e.hf, hfShape, "Hugging Face model");
    ++used;
    t.name = e.helios;
    t.stored = StoredType::F32;
    if (e.transpose) {
      t.data = transposed(t.data, e.shape[1], e.shape[0]);
      t.shape = e.shape;
    }
    out.tensors.push_back(std::move(t));
  }
  if (used != in.tensors.size()) {
    std::set<std::string> known;
    for (const Entry& e : entries(c))
      known.insert(e.hf);
    for (const SafeTensor& t : in.tensors)
      if (!known.count(t.name))
        throw CheckpointError(fmt::format(
            "Hugging Face model: tensor '{}' is not part of a GPT-2 with {} layers", t.name, c.layers));
  }
  if (lmHead && lmHead->data != out.find("wte.weight")->data)
    throw CheckpointError("Hugging Face model: lm_head.weight differs from wte.weight; Helios ties the head "
                          "to the token embedding");
  return out;
}

model::GptConfig exportHf(const fs::path& checkpointDir, const fs::path& outDir, StoredType dtype,
                          std::optional<int64_t> eos) {
  const fs::path src = checkpointDir / "model.safetensors";
  const SafeTensorsFile helios = readCheckpointFile(src);
  const auto meta = [&](const char* key) {
    auto it = helios.metadata.find(key);
    return it == helios.metadata.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  };
  nlohmann::json arch = meta("helios.model");
  if (!arch.is_object()) throw CheckpointError(src.string() + ": no helios.model in __metadata__");
  if (arch.value("kind", "") != "gpt")
    throw std::invalid_argument(
        fmt::format("{}: a {} model has no Hugging Face GPT-2 form", src.string(), arch.value("kind", "?")));
  arch.erase("kind");
  model::GptConfig c;
  fromJson(arch, c);
  for (const SafeTensor& t : helios.tensors)
    for (size_t i = 0; i < t.data.size(); ++i)
      if (!std::isfinite(t.data[i]))
        throw CheckpointError(
            fmt::format("{}: tensor '{}' holds a non-finite value at element {}", src.string(), t.name, i));
  SafeTensorsFile hf = toHfTensors(c, helios, dtype);
  hf.metadata["helios.model"] = toJson(c).dump();
  if (auto it = helios.metadata.find("helios.tokenizer"); it != helios.metadata.end())
    hf.metadata["helios.tokenizer"] = it->second;
  fs::create_directories(outDir);
  writeSafetensors(outDir / "model.safetensors", hf);
  writeFileDurably(outDir / "config.json", hfConfig(c, dtype, eos).dump(2) + "\n");
  return c;
}

HfImport importHf(const fs::path& dir) {
  HfImport out;
  nlohmann::json hf = readJsonFile(dir / "config.json");
  out.config = gptConfigFromHf(hf);
  const SafeTensorsFile file = readSafetensors(dir / "model.safetensors", false, AcceptTypes::Floats);
  // A directory Helios exported says so (helios.model) and carries checksums: they must be there and match.
  if (file.metadata.count("helios.model")) requireChecksums(file, dir / "model.safetensors");
  for (const SafeTensor& t : file.tensors)
    for (size_t i = 0; i < t.data.size(); ++i)
      if (!std::isfinite(t.data[i]))
        throw CheckpointError(fmt::format("{}: tensor '{}' holds a non-finite value at element {}",
                                          (dir / "model.safetensors").string(), t.name, i));
  out.tensors = fromHfTensors(out.config, file);
  if (auto it = file.metadata.find("helios.tokenizer"); it != file.metadata.end())
    out.tokenizer = nlohmann::json::parse(it->second, nullptr, false);
  if (out.tokenizer.is_discarded()) out.tokenizer = nullptr;
  return out;
}

} // namespace helios::train
