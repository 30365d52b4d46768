#include "codegen/kernels/embedding.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

namespace {

using spv::FunctionBuilder;
using spv::Value;

// id in [0, vocab): compare as signed so that negative ids are out of range.
Value idInRange(FunctionBuilder& f, spv::Module& m, Value id, Value vocab) {
  return f.logicalAnd(f.ge(id, f.i32(0)), f.lt(id, f.convert(vocab, m.i32())));
}

void gather(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer table = m.storageBuffer(0, m.f32(), spv::Access::ReadOnly);
  const spv::Buffer ids = m.storageBuffer(1, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer out = m.storageBuffer(2, m.f32(), spv::Access::WriteOnly);
  const Value tokens = f.loadPush(pc, 0), dim = f.loadPush(pc, 1), vocab = f.loadPush(pc, 2);
  const Value strideX = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value strideY = f.builtin(spv::BuiltIn::NumWorkgroups, 1);
  f.forRange(f.workgroupId(1), tokens, strideY, [&](Value t) {
    const Value id = f.loadAt(ids, t);
    const Value inRange = idInRange(f, m, id, vocab);
    const Value src = f.imul(f.convert(id, m.u32()), dim);
    const Value dst = f.imul(t, dim);
    f.forRange(f.globalId(0), dim, strideX, [&](Value j) {
      f.ifThenElse(
          inRange, [&] { f.storeAt(out, f.iadd(dst, j), f.loadAt(table, f.iadd(src, j))); },
          [&] { f.storeAt(out, f.iadd(dst, j), f.f32(0.0f)); });
    });
  });
}

void link(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer ids = m.storageBuffer(0, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer ws = m.storageBuffer(1, m.u32(), spv::Access::ReadWrite);
  const Value tokens = f.loadPush(pc, 0);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value next = f.variable(m.u32());
  f.forRange(f.globalId(0), tokens, stride, [&](Value t) {
    const Value id = f.loadAt(ids, t);
    f.store(next, f.u32(kEmbeddingChainEnd));
    f.forRange(f.iadd(t, f.u32(1)), tokens, [&](Value s) {
      f.ifThen(f.eq(f.loadAt(ids, s), id), [&] {
        f.store(next, s);
        f.breakLoop();
      });
    });
    const Value nx = f.load(next);
    f.storeAt(ws, t, nx);
    f.ifThen(f.ne(nx, f.u32(kEmbeddingChainEnd)), [&] { f.storeAt(ws, f.iadd(tokens, nx), f.u32(1)); });
  });
}

void accumulate(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer dOut = m.storageBuffer(0, m.f32(), spv::Access::ReadOnly);
  const spv::Buffer ids = m.storageBuffer(1, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer ws = m.storageBuffer(2, m.u32(), spv::Access::ReadOnly);
  const spv::Buffer dTable = m.storageBuffer(3, m.f32(), spv::Access::ReadWrite);
  const Value tokens = f.loadPush(pc, 0), dim = f.loadPush(pc, 1), vocab = f.loadPush(pc, 2);
  const Value strideX = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value strideY = f.builtin(spv::BuiltIn::NumWorkgroups, 1);
  const Value acc = f.variable(m.f32());
  const Value cur = f.variable(m.u32());
  f.forRange(f.workgroupId(1), tokens, strideY, [&](Value t) {
    const Value id = f.loadAt(ids, t);
    const Value head = f.eq(f.loadAt(ws, f.iadd(tokens, t)), f.u32(0));
    f.ifThen(f.logicalAnd(head, idInRange(f, m, id, vocab)), [&] {
      const Value row = f.imul(f.convert(id, m.u32()), dim);
      f.forRange(f.globalId(0), dim, strideX, [&](Value j) {
        const Value dst = f.iadd(row, j);
        f.store(acc, f.loadAt(dTable, dst));
        f.store(cur, t);
        f.whileLoop([&] { return f.ne(f.load(cur), f.u32(kEmbeddingChainEnd)); },
                    [&] {
                      const Value s = f.load(cur);
                      f.store(acc, f.fadd(f.load(acc), f.loadAt(dOut, f.iadd(f.imul(s, dim), j))));
                      f.store(cur, f.loadAt(ws, s));
                    });
        f.storeAt(dTable, dst, f.load(acc));
      });
    });
  });
}

// Per-segment sums for a small vocabulary: invocation `lid` of workgroup (x, s) owns column
// c = x * ls + lid and keeps one running sum per id in shared memory (its own slots only, so no barriers),
// walking segment s's tokens in order; then writes partials[s, id, c] for every id.
void segmentSums(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer dOut = m.storageBuffer(0, m.f32(), spv::Access::ReadOnly);
  const spv::Buffer ids = m.storageBuffer(1, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer partials = m.storageBuffer(2, m.f32(), spv::Access::WriteOnly);
  const Value sums = m.workgroupArray(m.f32(), kEmbeddingSmallVocab * ls);
  const Value tokens = f.loadPush(pc, 0), dim = f.loadPush(pc, 1), vocab = f.loadPush(pc, 2),
              segment = f.loadPush(pc, 3);
  const Value lid = f.localId(0), c = f.globalId(0), s = f.workgroupId(1);
  f.ifThen(f.lt(c, dim), [&] {
    f.forRange(f.u32(0), vocab, [&](Value v) {
      f.store(f.accessChain(sums, {f.iadd(f.imul(v, f.u32(ls)), lid)}), f.f32(0.0f));
    });
    const Value first = f.imul(s, segment), last = f.umin(tokens, f.iadd(first, segment));
    f.forRange(first, last, [&](Value t) {
      const Value id = f.loadAt(ids, t);
      f.ifThen(idInRange(f, m, id, vocab), [&] {
        const Value slot = f.accessChain(sums, {f.iadd(f.imul(f.convert(id, m.u32()), f.u32(ls)), lid)});
        f.store(slot, f.fadd(f.load(slot), f.loadAt(dOut, f.iadd(f.imul(t, dim), c))));
      });
    });
    f.forRange(f.u32(0), vocab, [&](Value v) {
      f.storeAt(partials, f.iadd(f.imul(f.iadd(f.imul(s, vocab), v), dim), c),
                f.load(f.accessChain(sums, {f.iadd(f.imul(v, f.u32(ls)), lid)})));
    });
  });
}

} // namespace

const char* toString(EmbeddingKernel k) {
  switch (k) {
  case EmbeddingKernel::Gather:
    return "gather";
  case EmbeddingKernel::Link:
    return "link";
  case EmbeddingKernel::Accumulate:
    return "accumulate";
  case EmbeddingKernel::SegmentSums:
    return "segment_sums";
  }
  return "?";
}

std::string EmbeddingParams::cacheKey() const {
  return std::string("embedding:") + toString(kernel) + ":f32:wg" + std::to_string(localSize);
}

Kernel generateEmbedding(const EmbeddingParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("embedding: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  spv::Module m;
  const spv::PushConstants pc = m.pushConstants({m.u32(), m.u32(), m.u32(), m.u32()});
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  uint32_t numBuffers = 0;
  switch (p.kernel) {
  case EmbeddingKernel::Gather:
    gather(m, f, pc, p.localSize);
    numBuffers = 3;
    break;
  case EmbeddingKernel::Link:
    link(m, f, pc, p.localSize);
    numBuffers = 2;
    break;
  case EmbeddingKernel::Accumulate:
    accumulate(m, f, pc, p.localSize);
    numBuffers = 4;
    break;
  case EmbeddingKernel::SegmentSums:
    if (p.localSize > 32)
      throw std::invalid_argument("embedding: segment_sums keeps " + std::to_string(kEmbeddingSmallVocab) +
                                  " sums per invocation in shared memory (16 KiB at 32, the Vulkan minimum); "
                                  "localSize must be <= 32, got " +
                                  std::to_string(p.localSize));
    segmentSums(m, f, pc, p.localSize);
    numBuffers = 3;
    break;
  }
  f.ret();
  Kernel k;
  k.name = std::string("embedding_") + toString(p.kernel) + "_f32_wg" + std::to_string(p.localSize);
  k.cacheKey = p.cacheKey();
  k.spirv = m.build();
  k.numBuffers = numBuffers;
  k.pushConstantBytes = pc.size;
  k.localSize = {p.localSize, 1, 1};
  return k;
}

void registerEmbedding(KernelRegistry& registry) {
  registry.add(
      {"embedding",
       "embedding gather (out-of-range id -> zeros); deterministic backward: chain-linked scatter-add, or "
       "per-segment sums for small vocabularies",
       [] { return generateEmbedding({}); },
       [] {
         std::vector<Kernel> ks;
         for (auto k : {EmbeddingKernel::Gather, EmbeddingKernel::Link, EmbeddingKernel::Accumulate})
           for (uint32_t ls : {64u, 256u})
             ks.push_back(generateEmbedding({k, ls}));
         ks.push_back(generateEmbedding({EmbeddingKernel::SegmentSums, 32}));
         return ks;
       }});
}

} // namespace helios::codegen
