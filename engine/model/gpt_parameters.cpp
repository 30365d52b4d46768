#include "engine/model/gpt_parameters.hpp"

#include "engine/core/fnv1a.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <future>
#include <stdexcept>
#include <thread>

namespace helios::model::detail {

namespace {

// The FNV-1a offset basis the parameter streams have used since the first checkpoints (their
// initialisation is reproducible only with it).
constexpr uint64_t kNameBasis = 1469598103934665603ull;

// Deterministic, platform-independent init: splitmix64 streams and Box-Muller.
uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// (0, 1) from the stream.
double unit(uint64_t& state) {
  return (double((splitmix(state) >> 11)) + 0.5) / 9007199254740992.0;
}

std::vector<float> normal(size_t n, double stddev, uint64_t seed, const std::string& name) {
  uint64_t state = seed ^ fnv1a64(name, kNameBasis); // each parameter has its own stream
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(unit(state))), t = 6.283185307179586 * unit(state);
    v[i] = static_cast<float>(stddev * r * std::cos(t));
    if (i + 1 < n) v[i + 1] = static_cast<float>(stddev * r * std::sin(t));
  }
  return v;
}

std::vector<float> uniform(size_t n, double bound, uint64_t seed, const std::string& name) {
  uint64_t state = seed ^ fnv1a64(name, kNameBasis);
  std::vector<float> v(n);
  for (float& x : v)
    x = static_cast<float>(bound * (2.0 * unit(state) - 1.0));
  return v;
}

std::vector<float> draw(Init init, uint32_t n, uint64_t seed, const std::string& name) {
  return init.kind == Init::Normal ? normal(n, init.scale, seed, name) : uniform(n, init.scale, seed, name);
}

uint32_t elementsOf(const std::vector<uint32_t>& shape) {
  uint32_t n = 1;
  for (uint32_t d : shape)
    n *= d;
  return n;
}

} // namespace

int ParameterTable::add(const std::string& name, std::vector<uint32_t> shape, Init init, bool decay,
                        Role role) {
  Entry e;
  e.init = init;
  e.frozen = frozenBase_ && role != Role::Adapter;
  if (e.frozen) {
    e.index = frozen_.size();
    const BaseStorage storage = role == Role::Matrix ? storage_ : BaseStorage::F32;
    frozen_.push_back({name, shape, elementsOf(shape), storage, {}});
  } else {
    e.index = trainable_.size();
    Parameter p;
    p.name = name;
    p.shape = std::move(shape);
    p.elements = elementsOf(p.shape);
    p.decay = decay;
    if (role == Role::Matrix) p.dtype = paramDtype_;
    trainable_.push_back(std::move(p));
  }
  entries_.push_back(e);
  byName_[name] = int(entries_.size() - 1);
  return int(entries_.size() - 1);
}

const std::string& ParameterTable::name(int i) const {
  const Entry& e = entries_[size_t(i)];
  return e.frozen ? frozen_[e.index].name : trainable_[e.index].name;
}

const std::vector<uint32_t>& ParameterTable::shape(int i) const {
  const Entry& e = entries_[size_t(i)];
  return e.frozen ? frozen_[e.index].shape : trainable_[e.index].shape;
}

int ParameterTable::find(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? -1 : it->second;
}

const Parameter* ParameterTable::trainableParameter(int i) const {
  const Entry& e = entries_[size_t(i)];
  return e.frozen ? nullptr : &trainable_[e.index];
}

autograd::Tensor ParameterTable::tensor(int i, uint32_t elements) const {
  if (i < 0) return {};
  const Entry& e = entries_[size_t(i)];
  if (e.frozen) {
    const FrozenTensor& f = frozen_[e.index];
    const autograd::DType type = f.storage;
    if (elements == 0) return autograd::Tensor::constant(f.data.range(), f.shape, type);
    return autograd::Tensor::constant(
        vk::subrange(f.data.range(), 0, uint64_t(elements) * autograd::dtypeBytes(type)), {elements}, type);
  }
  const Parameter& p = trainable_[e.index];
  if (elements == 0) return autograd::Tensor::parameter(p.data.range(), p.grad.range(), p.shape, p.dtype);
  return autograd::Tensor::parameter(
      vk::subrange(p.data.range(), 0, uint64_t(elements) * autograd::dtypeBytes(p.dtype)),
      vk::subrange(p.grad.range(), 0, uint64_t(elements) * 4), {elements}, p.dtype);
}

void ParameterTable::upload(vk::Context& ctx, const Entry& e, const std::vector<float>& values) {
  if (e.frozen)
    FrozenStore::upload(ctx, frozen_[e.index], values);
  else
    uploadValues(ctx, trainable_[e.index], values); // bf16 parameters: rounded to nearest even
}

// Each parameter draws from its own stream, so the draws run on several threads (GPT-2 small's 124M values
// took seconds on one) while the results are uploaded in order, at most one window ahead.
void ParameterTable::build(vk::Context& ctx, uint64_t seed) {
  store_.build(ctx, trainable_); // zeroed: gradients, moments, and zero-initialised parameters stay so
  frozenStore_.build(ctx, frozen_);
  std::vector<size_t> drawn;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const uint32_t n = e.frozen ? frozen_[e.index].elements : trainable_[e.index].elements;
    if (e.init.kind == Init::Normal || e.init.kind == Init::Uniform) drawn.push_back(i);
    if (e.init.kind == Init::Ones) upload(ctx, e, std::vector<float>(n, 1.0f));
    if (e.init.kind == Init::Zeros && e.frozen) upload(ctx, e, std::vector<float>(n, 0.0f));
  }
  const size_t window = std::max(1u, std::thread::hardware_concurrency());
  std::deque<std::future<std::vector<float>>> inflight;
  size_t launched = 0;
  for (size_t k = 0; k < drawn.size(); ++k) {
    for (; launched < drawn.size() && launched < k + window; ++launched) {
      const int i = int(drawn[launched]);
      const Entry& e = entries_[size_t(i)];
      const uint32_t n = e.frozen ? frozen_[e.index].elements : trainable_[e.index].elements;
      inflight.push_back(std::async(std::launch::async, draw, e.init, n, seed, std::cref(name(i))));
    }
    upload(ctx, entries_[drawn[k]], inflight.front().get());
    inflight.pop_front();
  }
}

} // namespace helios::model::detail
