#include "engine/train/gpt_model.hpp"

#include "engine/train/bigram.hpp"
#include "engine/train/config.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

#if HELIOS_TRAIN_HAVE_GPT

namespace {

class GptModel final : public Model {
public:
  GptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed) : gpt_(ctx, config, seed) {}
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
    return j;
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
};

} // namespace

std::unique_ptr<Model> makeGptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed) {
  return std::make_unique<GptModel>(ctx, config, seed);
}

bool gptAvailable() {
  return true;
}

#else

std::unique_ptr<Model> makeGptModel(vk::Context&, const model::GptConfig&, uint64_t) {
  throw std::runtime_error("this build has no GPT model: engine/model is not linked into helios_train yet "
                           "(use --model bigram, or rebuild once the model library exists)");
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
    fromJson(rest, c);
    return makeGptModel(ctx, c, seed);
  }
  throw std::invalid_argument(fmt::format("unknown model kind '{}' in {}", kind, config.dump()));
}

} // namespace helios::train
