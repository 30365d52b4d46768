#include "engine/train/hf/import.hpp"

#include "engine/train/hf/config.hpp"
#include "engine/train/hf/tensor_map.hpp"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <set>

namespace helios::train::hf {

namespace fs = std::filesystem;

namespace {

nlohmann::json readConfig(const fs::path& path) {
  std::ifstream in(path);
  if (!in)
    throw CheckpointError(
        fmt::format("{}: cannot open (not a Hugging Face model directory?)", path.string()));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw CheckpointError(fmt::format("{}: not a JSON object", path.string()));
  return j;
}

// Each file tensor by its canonical name; every one a mapped tensor, a buffer, or a tied head's copy.
std::map<std::string, std::string> checkNames(const Import& im, const std::vector<MappedTensor>& map) {
  std::set<std::string> mapped;
  for (const MappedTensor& m : map)
    mapped.insert(m.hf);
  std::map<std::string, std::string> names;
  for (const TensorInfo* t : im.weights->tensors()) {
    const std::string canonical = canonicalName(im.config.family, t->name);
    const bool tiedCopy = canonical == "lm_head.weight" && im.config.tiedHead;
    if (!mapped.count(canonical) && !isBuffer(im.config.family, t->name) && !tiedCopy)
      throw CheckpointError(fmt::format("{}: tensor '{}' is not part of a {} with {} layers{}",
                                        im.weights->fileOf(t->name).string(), t->name,
                                        architectureName(im.config.family), im.config.layers,
                                        canonical == "lm_head.weight" ? " and an untied head" : ""));
    if (names.count(canonical))
      throw CheckpointError(fmt::format("{}: tensor '{}' is there twice (as '{}' and '{}')", im.dir.string(),
                                        canonical, names[canonical], t->name));
    names[canonical] = t->name;
  }
  for (const MappedTensor& m : map) {
    if (!names.count(m.hf))
      throw CheckpointError(fmt::format("{}: tensor '{}' is missing ({} needs it)", im.dir.string(), m.hf,
                                        architectureName(im.config.family)));
    const TensorInfo* t = im.weights->find(names[m.hf]);
    if (t->shape != m.shape)
      throw CheckpointError(fmt::format("{}: tensor '{}' has shape {}, expected {}",
                                        im.weights->fileOf(t->name).string(), t->name, shapeString(t->shape),
                                        shapeString(m.shape)));
  }
  return names;
}

std::vector<float> readFinite(const Import& im, const std::string& fileName) {
  std::vector<float> v = im.weights->read(fileName);
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw CheckpointError(fmt::format("{}: tensor '{}' holds a non-finite value at element {}",
                                        im.weights->fileOf(fileName).string(), fileName, i));
  return v;
}

std::vector<float> transposed(const std::vector<float>& v, uint64_t rows, uint64_t cols) {
  std::vector<float> t(v.size());
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c)
      t[c * rows + r] = v[r * cols + c];
  return t;
}

// A tied head stored anyway must be the embedding (transformers would tie it to the embedding).
void checkTiedCopy(const Import& im, const std::vector<float>& embedding) {
  auto it = im.fileNames.find("lm_head.weight");
  if (it == im.fileNames.end() || !im.config.tiedHead) return;
  if (readFinite(im, it->second) != embedding)
    throw CheckpointError(
        fmt::format("{}: lm_head.weight differs from the token embedding, but the config ties "
                    "them (tie_word_embeddings)",
                    im.weights->fileOf(it->second).string()));
}

} // namespace

Import openImport(const fs::path& dir) {
  Import im;
  im.dir = dir;
  const fs::path configPath = dir / "config.json";
  im.config = configFromHf(readConfig(configPath), configPath.string());
  im.weights = std::make_unique<Weights>(dir);
  const std::vector<MappedTensor> map = tensorMap(im.config);
  im.fileNames = checkNames(im, map);
  if (im.config.tiedHead && im.fileNames.count("lm_head.weight"))
    for (const MappedTensor& m : map)
      if (m.helios == "wte.weight") checkTiedCopy(im, readFinite(im, im.fileNames.at(m.hf)));
  auto it = im.weights->metadata().find("helios.tokenizer");
  if (it != im.weights->metadata().end()) im.tokenizer = nlohmann::json::parse(it->second, nullptr, false);
  if (im.tokenizer.is_discarded()) im.tokenizer = nullptr;
  return im;
}

Assembled assemble(const Import& im, const std::string& helios) {
  std::vector<MappedTensor> parts;
  for (MappedTensor& m : tensorMap(im.config))
    if (m.helios == helios) parts.push_back(std::move(m));
  if (parts.empty()) throw CheckpointError(fmt::format("{}: no tensor fills '{}'", im.dir.string(), helios));
  Assembled out;
  if (parts.size() == 1 && parts[0].transpose) { // GPT-2's Conv1D: [in, out] -> [out, in]
    const MappedTensor& m = parts[0];
    out.shape = {m.shape[1], m.shape[0]};
    out.values = transposed(readFinite(im, im.fileNames.at(m.hf)), m.shape[0], m.shape[1]);
    return out;
  }
  out.shape = parts[0].shape;
  if (parts.size() == 1 && parts[0].row == 0) {
    out.values = readFinite(im, im.fileNames.at(parts[0].hf));
    return out;
  }
  out.shape[0] = 0;
  for (const MappedTensor& m : parts)
    out.shape[0] = std::max(out.shape[0], m.row + m.shape[0]);
  const uint64_t rowElements = out.shape.size() > 1 ? out.shape[1] : 1;
  out.values.resize(out.shape[0] * rowElements);
  for (const MappedTensor& m : parts) { // row blocks: q, k, v into the packed projection
    const std::vector<float> v = readFinite(im, im.fileNames.at(m.hf));
    std::memcpy(out.values.data() + m.row * rowElements, v.data(), v.size() * 4);
  }
  return out;
}

void loadImport(vk::Context& ctx, Model& model, const Import& im) {
  std::set<std::string> names;
  for (const model::Parameter& p : model.parameters())
    names.insert(p.name);
  for (const MappedTensor& m : tensorMap(im.config))
    if (!names.count(m.helios))
      throw CheckpointError(fmt::format("{}: tensor '{}' has no parameter '{}' in this model",
                                        im.dir.string(), m.hf, m.helios));
  for (model::Parameter& p : model.parameters()) {
    const Assembled a = assemble(im, p.name);
    const std::vector<uint64_t> want(p.shape.begin(), p.shape.end());
    if (a.shape != want)
      throw CheckpointError(fmt::format("{}: the tensors for '{}' make shape {}, the model's is {}",
                                        im.dir.string(), p.name, shapeString(a.shape), shapeString(want)));
    model::uploadValues(ctx, p, a.values); // bf16 parameters: rounded to nearest even
  }
}

std::optional<Tokenizer> importTokenizer(const Import& im) {
  if (im.tokenizer.is_object()) {
    const std::string kind = im.tokenizer.value("kind", "");
    if (kind == "byte" || kind == "char") return Tokenizer::fromJson(im.tokenizer);
  }
  for (const char* file : {"tokenizer.json", "tokenizer.model", "vocab.json", "encoder.json"})
    if (fs::exists(im.dir / file)) return Tokenizer::open(im.dir.string());
  return std::nullopt;
}

} // namespace helios::train::hf
