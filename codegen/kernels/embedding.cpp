#include "codegen/kernels/embedding.hpp"

#include <functional>
#include <stdexcept>
#include <vector>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

namespace {

using spv::FunctionBuilder;
using spv::Value;

// id in [0, vocab): compare as signed so that negative ids are out of range.
Value idInRange(FunctionBuilder& f, spv::Module& m, Value id, Value vocab) {
  return f.logicalAnd(f.ge(id, f.i32(0)), f.lt(id, f.convert(vocab, m.i32())));
}

void gather(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls, Elem type) {
  const spv::Buffer table = m.storageBuffer(0, elemStorageType(m, type), spv::Access::ReadOnly);
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
          inRange,
          [&] { f.storeAt(out, f.iadd(dst, j), elemToF32(f, type, f.loadAt(table, f.iadd(src, j)))); },
          [&] { f.storeAt(out, f.iadd(dst, j), f.f32(0.0f)); });
    });
  });
}

// body(t, id, segment) for every token t (y: grid-stride over tokens) that heads its id's chain in its
// segment (Link's heads table holds t + 1 there); ids out of range head nothing.
void forEachHead(spv::Module& m, FunctionBuilder& f, const spv::Buffer& ids, const spv::Buffer& heads,
                 const spv::PushConstants& pc, const std::function<void(Value, Value, Value)>& body) {
  const Value tokens = f.loadPush(pc, 0), vocab = f.loadPush(pc, 2), segment = f.loadPush(pc, 3);
  f.forRange(f.workgroupId(1), tokens, f.builtin(spv::BuiltIn::NumWorkgroups, 1), [&](Value t) {
    const Value id = f.loadAt(ids, t);
    const Value inRange = idInRange(f, m, id, vocab);
    const Value v = f.select(inRange, f.convert(id, m.u32()), f.u32(0)), seg = f.udiv(t, segment);
    f.ifThen(f.logicalAnd(inRange, f.eq(f.loadAt(heads, f.iadd(f.imul(seg, vocab), v)), f.iadd(t, f.u32(1)))),
             [&] { body(t, v, seg); });
  });
}

// Token t of segment s = t / segment: next[t] = the next token of its segment with the same id (kChainEnd if
// none); the first token of each id in its segment (a head) records itself, plus one, in heads[s, id].
// Both scans stay inside the segment.
void link(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer ids = m.storageBuffer(0, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer next = m.storageBuffer(1, m.u32(), spv::Access::WriteOnly);
  const spv::Buffer heads = m.storageBuffer(2, m.u32(), spv::Access::WriteOnly);
  const Value tokens = f.loadPush(pc, 0), vocab = f.loadPush(pc, 2), segment = f.loadPush(pc, 3);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value found = f.variable(m.u32()), isHead = f.variable(m.boolType());
  f.forRange(f.globalId(0), tokens, stride, [&](Value t) {
    const Value id = f.loadAt(ids, t);
    const Value seg = f.udiv(t, segment), first = f.imul(seg, segment);
    f.store(found, f.u32(kEmbeddingChainEnd));
    f.forRange(f.iadd(t, f.u32(1)), f.umin(tokens, f.iadd(first, segment)), [&](Value u) {
      f.ifThen(f.eq(f.loadAt(ids, u), id), [&] {
        f.store(found, u);
        f.breakLoop();
      });
    });
    f.storeAt(next, t, f.load(found));
    f.store(isHead, f.boolean(true));
    f.forRange(first, t, [&](Value u) {
      f.ifThen(f.eq(f.loadAt(ids, u), id), [&] {
        f.store(isHead, f.boolean(false));
        f.breakLoop();
      });
    });
    f.ifThen(f.logicalAnd(f.load(isHead), idInRange(f, m, id, vocab)), [&] {
      f.storeAt(heads, f.iadd(f.imul(seg, vocab), f.convert(id, m.u32())), f.iadd(t, f.u32(1)));
    });
  });
}

// For each head t (x: columns, y: tokens): partials[t, j] = the sum of dOut[s, j] over its segment's chain,
// in token order.
void accumulate(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer dOut = m.storageBuffer(0, m.f32(), spv::Access::ReadOnly);
  const spv::Buffer ids = m.storageBuffer(1, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer next = m.storageBuffer(2, m.u32(), spv::Access::ReadOnly);
  const spv::Buffer heads = m.storageBuffer(3, m.u32(), spv::Access::ReadOnly);
  const spv::Buffer partials = m.storageBuffer(4, m.f32(), spv::Access::WriteOnly);
  const Value dim = f.loadPush(pc, 1);
  const Value strideX = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value acc = f.variable(m.f32());
  const Value cur = f.variable(m.u32());
  forEachHead(m, f, ids, heads, pc, [&](Value t, Value, Value) {
    f.forRange(f.globalId(0), dim, strideX, [&](Value j) {
      f.store(acc, f.f32(0.0f));
      f.store(cur, t);
      f.whileLoop([&] { return f.ne(f.load(cur), f.u32(kEmbeddingChainEnd)); },
                  [&] {
                    const Value u = f.load(cur);
                    f.store(acc, f.fadd(f.load(acc), f.loadAt(dOut, f.iadd(f.imul(u, dim), j))));
                    f.store(cur, f.loadAt(next, u));
                  });
      f.storeAt(partials, f.iadd(f.imul(t, dim), j), f.load(acc));
    });
  });
}

// For each head t whose segment is the first holding its id (x: columns, y: tokens): dTable[id, j] += the
// partials of that id's heads, in segment order. Exactly one invocation writes each (id, column).
void combine(spv::Module& m, FunctionBuilder& f, const spv::PushConstants& pc, uint32_t ls) {
  const spv::Buffer ids = m.storageBuffer(0, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer heads = m.storageBuffer(1, m.u32(), spv::Access::ReadOnly);
  const spv::Buffer partials = m.storageBuffer(2, m.f32(), spv::Access::ReadOnly);
  const spv::Buffer dTable = m.storageBuffer(3, m.f32(), spv::Access::ReadWrite);
  const Value tokens = f.loadPush(pc, 0), dim = f.loadPush(pc, 1), vocab = f.loadPush(pc, 2),
              segment = f.loadPush(pc, 3);
  const Value segments = f.udiv(f.iadd(tokens, f.isub(segment, f.u32(1))), segment);
  const Value strideX = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(ls));
  const Value acc = f.variable(m.f32()), firstSeg = f.variable(m.boolType());
  forEachHead(m, f, ids, heads, pc, [&](Value, Value v, Value seg) {
    f.store(firstSeg, f.boolean(true));
    f.forRange(f.u32(0), seg, [&](Value s) {
      f.ifThen(f.ne(f.loadAt(heads, f.iadd(f.imul(s, vocab), v)), f.u32(0)), [&] {
        f.store(firstSeg, f.boolean(false));
        f.breakLoop();
      });
    });
    f.ifThen(f.load(firstSeg), [&] {
      const Value row = f.imul(v, dim);
      f.forRange(f.globalId(0), dim, strideX, [&](Value j) {
        const Value dst = f.iadd(row, j);
        f.store(acc, f.loadAt(dTable, dst));
        f.forRange(seg, segments, [&](Value s) {
          const Value h = f.loadAt(heads, f.iadd(f.imul(s, vocab), v));
          f.ifThen(f.ne(h, f.u32(0)), [&] {
            const Value src = f.iadd(f.imul(f.isub(h, f.u32(1)), dim), j);
            f.store(acc, f.fadd(f.load(acc), f.loadAt(partials, src)));
          });
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
  case EmbeddingKernel::Combine:
    return "combine";
  }
  return "?";
}

std::string EmbeddingParams::cacheKey() const {
  return std::string("embedding:") + toString(kernel) + ":" + elemName(table) + ":wg" +
         std::to_string(localSize);
}

Kernel generateEmbedding(const EmbeddingParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("embedding: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  if (p.table != Elem::F32 && p.kernel != EmbeddingKernel::Gather)
    throw std::invalid_argument("embedding: only the gather reads a 16-bit table");
  spv::Module m;
  const spv::PushConstants pc = declarePush<EmbeddingPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  uint32_t numBuffers = 0;
  switch (p.kernel) {
  case EmbeddingKernel::Gather:
    gather(m, f, pc, p.localSize, p.table);
    numBuffers = 3;
    break;
  case EmbeddingKernel::Link:
    link(m, f, pc, p.localSize);
    numBuffers = 3;
    break;
  case EmbeddingKernel::Accumulate:
    accumulate(m, f, pc, p.localSize);
    numBuffers = 5;
    break;
  case EmbeddingKernel::Combine:
    combine(m, f, pc, p.localSize);
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
  std::string name = std::string("embedding_") + toString(p.kernel) + "_" + elemName(p.table) + "_wg" +
                     std::to_string(p.localSize);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), numBuffers, pc.size, p.localSize);
}

void registerEmbedding(KernelRegistry& registry) {
  registry.add(
      {"embedding",
       "embedding gather (out-of-range id -> zeros); deterministic backward: per-segment chains combined in "
       "segment order, or per-segment sums for small vocabularies",
       [] { return generateEmbedding({}); },
       [] {
         std::vector<Kernel> ks;
         for (auto k : {EmbeddingKernel::Gather, EmbeddingKernel::Link, EmbeddingKernel::Accumulate,
                        EmbeddingKernel::Combine})
           for (uint32_t ls : {64u, 256u})
             ks.push_back(generateEmbedding({k, ls}));
         ks.push_back(generateEmbedding({EmbeddingKernel::SegmentSums, 32}));
         for (Elem table : {Elem::F16, Elem::BF16})
           ks.push_back(generateEmbedding({EmbeddingKernel::Gather, 256, table}));
         return ks;
       }});
}

} // namespace helios::codegen
