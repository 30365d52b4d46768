#pragma once
// Internal to engine/model: the GPT's parameters by index, whichever store holds them. A full model trains
// all of them (ParameterStore: values, gradients, moments); a LoRA model keeps its base frozen (FrozenStore:
// values only, GEMM weights and embeddings in half precision) and trains only its adapters. Indices are what
// Gpt's block tables hold; tensor(i) is the autograd view, a parameter or a constant.
#include "engine/autograd/tensor.hpp"
#include "engine/model/frozen_store.hpp"
#include "engine/model/parameter_store.hpp"

#include <map>
#include <string>
#include <vector>

namespace helios::model::detail {

// How a parameter starts: N(0, scale), zeros, ones, or U(-scale, scale).
struct Init {
  enum Kind { Normal, Zeros, Ones, Uniform } kind = Zeros;
  double scale = 0;
};

// What a parameter is to the stores: a GEMM weight or embedding (frozen in the base storage type), anything
// else (norms, biases, learned positions: frozen in f32), or a LoRA adapter (always trainable).
enum class Role { Matrix, Plain, Adapter };

class ParameterTable {
public:
  // frozenBase: every parameter but the adapters is frozen, its matrices stored as `storage`. Otherwise the
  // matrices are trainable parameters of `paramDtype` (f32 or bf16; GptConfig::paramDtype).
  ParameterTable(bool frozenBase, BaseStorage storage, codegen::Elem paramDtype)
      : frozenBase_(frozenBase), storage_(storage), paramDtype_(paramDtype) {}
  // Registers a parameter; returns its index.
  int add(const std::string& name, std::vector<uint32_t> shape, Init init, bool decay, Role role);
  // Allocates the stores and uploads every parameter's initial values (drawn from `seed`, each parameter from
  // its own stream; the draws run on several threads).
  void build(vk::Context& ctx, uint64_t seed);

  size_t size() const { return entries_.size(); }
  const std::string& name(int i) const;
  const std::vector<uint32_t>& shape(int i) const;
  bool frozen(int i) const { return entries_[size_t(i)].frozen; }
  int find(const std::string& name) const; // -1 when absent
  // The autograd view: a parameter (with its persistent gradient) or a constant of its storage type. Empty
  // for i < 0. `elements` > 0: only the first that many elements (a prefix view).
  autograd::Tensor tensor(int i, uint32_t elements = 0) const;

  // The trainable parameter behind index i; null when it is frozen.
  const Parameter* trainableParameter(int i) const;
  std::vector<Parameter>& trainable() { return trainable_; }
  std::vector<FrozenTensor>& frozenTensors() { return frozen_; }
  const std::vector<ParameterGroup>& groups() const { return store_.groups(); }

private:
  struct Entry {
    bool frozen = false;
    size_t index = 0; // into trainable_ or frozen_
    Init init;
  };
  void upload(vk::Context& ctx, const Entry& e, const std::vector<float>& values);

  bool frozenBase_;
  BaseStorage storage_;
  codegen::Elem paramDtype_;
  std::vector<Entry> entries_;
  std::vector<Parameter> trainable_;
  std::vector<FrozenTensor> frozen_;
  std::map<std::string, int> byName_;
  ParameterStore store_;
  FrozenStore frozenStore_;
};

} // namespace helios::model::detail
