// The key splits' merge (AttentionCoopParams::keySplits): the groups of subgroups that walked shares of the
// same rows' key tiles trade each row's max and sum, then add their partial outputs in group order through
// the staged tiles' bytes (attention_coop_emitter.hpp declares these members).
#include "codegen/kernels/attention_coop_emitter.hpp"

#include "codegen/kernels/half_pack.hpp"

namespace helios::codegen::detail {

using namespace helios::spv;

AttentionCoopEmitter::MergeChunk AttentionCoopEmitter::mergeChunk() const {
  // Staged f32 rows of `blocks` coopN-column blocks, padded by a vector so that the coop stores of 8 rows at
  // once spread over the banks; each subgroup's coopM rows form one region.
  const auto geometry = [&](uint32_t blocks) {
    const uint32_t stride = blocks * p_.coopN / 4 + 1;
    return MergeChunk{blocks, stride, p_.coopM * stride, blocks * p_.coopN / 8};
  };
  uint32_t n = blocks_; // the most blocks at once that divide D's and fit the staged tiles
  while (n > 1 && (blocks_ % n || p_.allSubgroups() * geometry(n).region > p_.stagedVectors()))
    --n;
  return geometry(n);
}

Value AttentionCoopEmitter::publishRowScales(const RowScales& scales) {
  if (scales.all.valid()) return {};
  const Value published = m_.workgroupArray(f32_, p_.allSubgroups() * p_.coopM);
  for (uint32_t i = 0; i < rowsPerLane_; ++i) {
    const auto publish = [&, i] {
      const Value entry = f().iadd(f().imul(sgId_, c(p_.coopM)), rowInSg_[i]);
      f().store(f().accessChain(published, {entry}), scales.perRow[i]);
    };
    lanes_ == 1 ? publish() : f().ifThen(f().eq(part_, c(0)), publish);
  }
  return published;
}

void AttentionCoopEmitter::writeSplitRows(const std::vector<Value>& accs, const RowScales& scales,
                                          const Buffer& out, const HeadRows& at, Value total) {
  const MergeChunk m = mergeChunk();
  const uint32_t work = p_.rows() * m.units, n = p_.invocations();
  const SplitUnits units{m, publishRowScales(scales), scales.all, &out, at, total};
  const Value mine = f().imul(sgId_, c(m.region));
  for (uint32_t k = 0; k < blocks_ / m.blocks; ++k) {
    if (k) f().workgroupBarrier(); // the previous chunk is read
    for (uint32_t j = 0; j < m.blocks; ++j)
      f().coopStore(f().accessChain(staged_, {f().iadd(mine, c(j * p_.coopN / 4))}),
                    f().load(accs[k * m.blocks + j]), c(m.stride), CoopLayout::RowMajorKHR);
    f().workgroupBarrier();
    for (uint32_t e = 0; e < (work + n - 1) / n; ++e) {
      const Value u = f().iadd(lid_, c(e * n));
      const auto unit = [&, u] { writeSplitUnit(units, u, k); };
      (e + 1) * n <= work ? unit() : f().ifThen(f().lt(u, c(work)), unit);
    }
  }
}

void AttentionCoopEmitter::writeSplitUnit(const SplitUnits& w, Value u, uint32_t chunk) {
  const MergeChunk& m = w.chunk;
  const Value r = f().udiv(u, c(m.units)), col = f().rem(u, c(m.units)), row = f().iadd(blockRow_, r);
  const Value group = f().udiv(r, c(p_.coopM)), inGroup = f().rem(r, c(p_.coopM));
  f().ifThen(f().lt(row, w.total), [&] {
    Value sum[2];
    for (uint32_t s = 0; s < p_.keySplits; ++s) { // group s's subgroup over these rows, in group order
      const Value sg = f().iadd(group, c(s * p_.subgroups));
      const Value from =
          f().iadd(f().iadd(f().imul(sg, c(m.region)), f().imul(inGroup, c(m.stride))), f().imul(col, c(2)));
      const Value by =
          w.published.valid()
              ? f().load(f().accessChain(w.published, {f().iadd(f().imul(sg, c(p_.coopM)), inGroup)}))
              : w.all;
      for (uint32_t h = 0; h < 2; ++h) {
        const Value x = f().bitcast(f().load(f().accessChain(staged_, {f().iadd(from, c(h))})), vec4_);
        sum[h] = s ? f().fadd(sum[h], f().vectorTimesScalar(x, by)) : f().vectorTimesScalar(x, by);
      }
    }
    const Value at8 =
        f().iadd(f().iadd(w.at.base, f().imul(row, w.at.stride)), f().iadd(col, c(chunk * m.units)));
    if (isHalf(p_.out)) {
      f().storeAt(*w.out, at8, packHalf8(f(), sum[0], sum[1], p_.operands));
    } else {
      for (uint32_t h = 0; h < 2; ++h)
        f().storeAt(*w.out, f().iadd(f().imul(at8, c(2)), c(h)), sum[h]);
    }
  });
}

std::vector<std::vector<std::pair<Value, Value>>>
AttentionCoopEmitter::tradeRowPairs(const std::vector<Value>& a, const std::vector<Value>& b) {
  const Value trade = m_.workgroupArray(f32_, p_.allSubgroups() * p_.coopM * 2);
  const auto entry = [&](Value subgroup, uint32_t i) {
    return f().imul(f().iadd(f().imul(subgroup, c(p_.coopM)), rowInSg_[i]), c(2));
  };
  for (uint32_t i = 0; i < rowsPerLane_; ++i) {
    const auto publish = [&, i] {
      const Value at = entry(sgId_, i);
      f().store(f().accessChain(trade, {at}), a[i]);
      f().store(f().accessChain(trade, {f().iadd(at, c(1))}), b[i]);
    };
    if (lanes_ == 1)
      publish();
    else
      f().ifThen(f().eq(part_, c(0)), publish);
  }
  f().workgroupBarrier();
  std::vector<std::vector<std::pair<Value, Value>>> out(p_.keySplits);
  for (uint32_t s = 0; s < p_.keySplits; ++s)
    for (uint32_t i = 0; i < rowsPerLane_; ++i) {
      const Value at = entry(f().iadd(sg_, c(s * p_.subgroups)), i);
      out[s].emplace_back(f().load(f().accessChain(trade, {at})),
                          f().load(f().accessChain(trade, {f().iadd(at, c(1))})));
    }
  return out;
}

} // namespace helios::codegen::detail
