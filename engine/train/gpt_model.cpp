#include "engine/train/gpt_model.hpp"

#include "engine/train/bigram.hpp"
#include "engine/train/config.hpp"
#include "engine/train/lora_base.hpp"

#include <fmt/format.h>
#include <optional>
#include <stdexcept>

namespace helios::train {

#if HELIOS_TRAIN_HAVE_GPT

namespace {

class GptModel final : public Model {
public:
  GptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed) : gpt_(ctx, config, seed) {}
  // A LoRA model: the base named by `base` (its seed initialises the model; a directory is loaded and
  // checked).
  GptModel(vk::Context& ctx, const model::GptConfig& config, LoraBase base)
      : gpt_(ctx, config, base.seed), base_(std::move(base)) {
    loadLoraBase(ctx, gpt_, *base_);
  }
  std::vector<model::Parameter>& parameters() override { return gpt_.parameters(); }
  const std::vector<model::ParameterGroup>& parameterGroups() const override {
    return gpt_.parameterGroups();
  }
  model::Gpt* gpt() override { return &gpt_; }
  uint32_t vocab() const override { return gpt_.config().vocab; }
  uint32_t context() const override { return gpt_.config().context; }
  std::string describe() const override { return gpt_.config().describe(); }
  nlohmann::json configJson() const override {
    nlohmann::json j = toJson(gpt_.config());
    j["kind"] = "gpt";
    if (base_) j["lora_base"] = loraBaseToJson(*base_);
    return j;
  }
  nlohmann::json runtimeState() override {
    if (gpt_.config().lora.dropout <= 0) return nullptr;
    return {{"lora_dropout_step", gpt_.dropoutStep()}};
  }
  void restoreRuntimeState(const nlohmann::json& state) override {
    if (state.is_object() && state.contains("lora_dropout_step"))
      gpt_.setDropoutStep(state.at("lora_dropout_step").get<uint32_t>());
  }
  void forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                       const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                       const vk::BufferRange& lossOut, float gradScale,
                       const vk::BufferRange& positions) override {
    gpt_.forwardBackward(exec, arena, tokens, targets, batch, T, lossOut, gradScale, positions);
  }
  void forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t batch,
               uint32_t T, const vk::BufferRange& logitsOut, const vk::BufferRange* targets,
               const vk::BufferRange* lossOut, const vk::BufferRange& positions) override {
    gpt_.forward(exec, arena, tokens, batch, T, logitsOut, targets, lossOut, positions);
  }

private:
  model::Gpt gpt_;
  std::optional<LoraBase> base_; // LoRA models only
};

} // namespace

std::unique_ptr<Model> makeGptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed) {
  return std::make_unique<GptModel>(ctx, config, seed);
}

std::unique_ptr<Model> makeLoraModel(vk::Context& ctx, const model::GptConfig& config, LoraBase base) {
  return std::make_unique<GptModel>(ctx, config, std::move(base));
}

bool gptAvailable() {
  return true;
}

#else

std::unique_ptr<Model> makeGptModel(vk::Context&, const model::GptConfig&, uint64_t) {
  throw std::runtime_error("this build has no GPT model: engine/model is not linked into helios_train yet "
                           "(use --model bigram, or rebuild once the model library exists)");
}

std::unique_ptr<Model> makeLoraModel(vk::Context& ctx, const model::GptConfig& config, LoraBase) {
  return makeGptModel(ctx, config, 0);
}

bool gptAvailable() {
  return false;
}

#endif

std::unique_ptr<Model> makeModel(vk::Context& ctx, const nlohmann::json& config, uint64_t seed) {
  const std::string kind = config.value("kind", "");
  if (kind == "bigram") return std::make_unique<BigramModel>(ctx, config.at("vocab").get<uint32_t>(), seed);
  if (kind == "gpt") {
    model::GptConfig c;
    nlohmann::json rest = config;
    rest.erase("kind");
    rest.erase("lora_base");
    fromJson(rest, c);
    if (c.lora.enabled() != config.contains("lora_base"))
      throw std::invalid_argument(
          fmt::format("a LoRA model needs its base (lora_base) and only a LoRA model has "
                      "one: {}",
                      config.dump()));
    if (c.lora.enabled()) return makeLoraModel(ctx, c, loraBaseFromJson(config.at("lora_base")));
    return makeGptModel(ctx, c, seed);
  }
  throw std::invalid_argument(fmt::format("unknown model kind '{}' in {}", kind, config.dump()));
}

} // namespace helios::train
