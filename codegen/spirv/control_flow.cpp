// Structured control flow: every selection gets an OpSelectionMerge, every loop an OpLoopMerge with its own
// continue block; blocks are placed in the order they become current, so dominators precede what they
// dominate.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

void FunctionBuilder::ifThen(Value cond, const std::function<void()>& thenBody) {
  requireBoolCond("ifThen", cond);
  const BlockId thenB = newBlock(), merge = newBlock();
  selectionMerge(merge);
  branchCond(cond, thenB, merge);
  setBlock(thenB);
  thenBody();
  if (!blockTerminated()) branch(merge);
  setBlock(merge);
}

void FunctionBuilder::ifThenElse(Value cond, const std::function<void()>& thenBody,
                                 const std::function<void()>& elseBody) {
  requireBoolCond("ifThenElse", cond);
  const BlockId thenB = newBlock(), elseB = newBlock(), merge = newBlock();
  selectionMerge(merge);
  branchCond(cond, thenB, elseB);
  setBlock(thenB);
  thenBody();
  if (!blockTerminated()) branch(merge);
  setBlock(elseB);
  elseBody();
  if (!blockTerminated()) branch(merge);
  setBlock(merge);
}

void FunctionBuilder::forRange(Value begin, Value end, Value step, const std::function<void(Value)>& body) {
  requireSameType("forRange", begin, end);
  requireSameType("forRange", begin, step);
  if (!m_.isInt(begin.type) || m_.componentCount(begin.type) != 1)
    fail("forRange: bounds must be integer scalars, got " + m_.typeName(begin.type));
  const Value counter = variable(begin.type);
  store(counter, begin);
  const BlockId header = newBlock(), bodyB = newBlock(), cont = newBlock(), merge = newBlock();
  branch(header);

  setBlock(header);
  const Value i = load(counter);
  const Value c = lt(i, end);
  loopMerge(merge, cont);
  branchCond(c, bodyB, merge);

  setBlock(bodyB);
  loops_.push_back({merge, cont});
  body(i);
  loops_.pop_back();
  if (!blockTerminated()) branch(cont);

  setBlock(cont);
  store(counter, add(load(counter), step));
  branch(header);

  setBlock(merge);
}

void FunctionBuilder::forRange(Value begin, Value end, const std::function<void(Value)>& body) {
  forRange(begin, end, m_.constant(begin.type, 1.0), body);
}

void FunctionBuilder::whileLoop(const std::function<Value()>& cond, const std::function<void()>& body) {
  const BlockId header = newBlock(), check = newBlock(), bodyB = newBlock(), cont = newBlock(),
                merge = newBlock();
  branch(header);

  setBlock(header);
  loopMerge(merge, cont);
  branch(check);

  setBlock(check);
  const Value c = cond();
  branchCond(c, bodyB, merge);

  setBlock(bodyB);
  loops_.push_back({merge, cont});
  body();
  loops_.pop_back();
  if (!blockTerminated()) branch(cont);

  setBlock(cont);
  branch(header);

  setBlock(merge);
}

void FunctionBuilder::breakLoop() {
  if (loops_.empty()) fail("breakLoop: not inside a loop");
  branch(loops_.back().merge);
}

void FunctionBuilder::continueLoop() {
  if (loops_.empty()) fail("continueLoop: not inside a loop");
  branch(loops_.back().cont);
}

} // namespace helios::spv
