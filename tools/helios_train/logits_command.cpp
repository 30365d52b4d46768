#include "logits_command.hpp"

#include "engine/graph/graph_executor.hpp"
#include "engine/io/npy.hpp"
#include "engine/train/config.hpp"
#include "engine/vk/context.hpp"

#include <cstdio>
#include <fmt/format.h>

namespace helios::train_cli {

CLI::App* addLogitsCommand(CLI::App& app, LogitsFlags& f) {
  auto* cmd = app.add_subcommand("logits", "Write the model's logits for token ids (.npy in, .npy out)");
  addModelSourceOptions(*cmd, f.source);
  cmd->add_option("--tokens", f.tokens, "int32 .npy of token ids, [T] or [B, T]")->required();
  cmd->add_option("--out", f.out, "float32 .npy written: [T, vocab] or [B, T, vocab]")->required();
  cmd->add_option("--precision", f.precision,
                  "How the forward computes: f32 (default) or mixed (f16 GEMM inputs); any precision the "
                  "training config takes");
  cmd->add_option("--device", f.device, "Device index or name substring");
  return cmd;
}

namespace {

struct Ids {
  std::vector<int32_t> values;
  uint32_t batch = 1, T = 0;
  bool batched = false; // [B, T] rather than [T]
};

// The ids, checked against the model before any device work.
Ids readIds(const std::string& path, uint32_t vocab, uint32_t context) {
  const io::NpyArray a = io::readNpy(path);
  if (a.dtype != io::NpyDType::I32 || a.shape.empty() || a.shape.size() > 2)
    throw std::invalid_argument(fmt::format("{}: expected int32 ids of shape [T] or [B, T], got {} {}", path,
                                            io::npyDTypeName(a.dtype), a.shapeString()));
  Ids ids;
  ids.batched = a.shape.size() == 2;
  ids.batch = ids.batched ? static_cast<uint32_t>(a.shape[0]) : 1;
  ids.T = static_cast<uint32_t>(a.shape.back());
  if (ids.batch == 0 || ids.T == 0 || ids.T > context)
    throw std::invalid_argument(
        fmt::format("{}: {} ids per sequence; the model takes 1 to {}", path, ids.T, context));
  ids.values = a.toInt32();
  for (size_t i = 0; i < ids.values.size(); ++i)
    if (ids.values[i] < 0 || uint32_t(ids.values[i]) >= vocab)
      throw std::invalid_argument(fmt::format("{}: id {} at position {} is outside the vocabulary [0, {})",
                                              path, ids.values[i], i, vocab));
  return ids;
}

} // namespace

int runLogits(const LogitsFlags& f) {
  const ModelSource source = openModelSource(f.source);
  const uint32_t vocab = source.architecture.at("vocab").get<uint32_t>();
  const Ids ids = readIds(f.tokens, vocab, source.architecture.at("context").get<uint32_t>());
  const std::string precision = f.precision.empty() ? "f32" : f.precision;
  model::GptConfig named; // the training config's parser names the precisions there are, before any work
  train::fromJson(nlohmann::json{{"precision", precision}}, named);
  auto ctx = vk::Context::create({.device = f.device});
  auto model = loadModel(*ctx, source, precision);
  const uint32_t T = ids.T;
  vk::Buffer tok = ctx->buffer(4ull * T, "logits tokens"), logits = ctx->buffer(4ull * T * vocab, "logits");
  graph::GraphExecutor exec(*ctx);
  graph::StepArena arena(*ctx);
  std::vector<float> out;
  out.reserve(size_t(ids.batch) * T * vocab);
  for (uint32_t b = 0; b < ids.batch; ++b) { // one sequence at a time: the logits buffer stays [T, vocab]
    const auto first = ids.values.begin() + std::ptrdiff_t(b) * T;
    ctx->uploadVector(tok, std::vector<int32_t>(first, first + T));
    arena.reset();
    model->forward(exec, arena, tok.range(), 1, T, logits.range());
    exec.flush();
    const std::vector<float> row = ctx->downloadVector<float>(logits, size_t(T) * vocab);
    out.insert(out.end(), row.begin(), row.end());
  }
  std::vector<uint64_t> shape{T, vocab};
  if (ids.batched) shape.insert(shape.begin(), ids.batch);
  const io::NpyArray array = io::NpyArray::fromFloat(out, shape);
  io::writeNpy(f.out, array);
  std::printf("wrote %s: logits %s of %s (%s, %s)\n", f.out.c_str(), array.shapeString().c_str(),
              source.name.c_str(), model->describe().c_str(), precision.c_str());
  return 0;
}

} // namespace helios::train_cli
