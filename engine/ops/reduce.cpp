#include "engine/ops/reduce.hpp"
#include "engine/ops/device_profile.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace rows_detail {

RowKernelChoice resolve(Executor& exec, RowKernelChoice choice, uint32_t cols) {
  if (choice.localSize == 0) choice.localSize = cols <= 128 ? 64 : cols <= 1024 ? 128 : 256;
  if (choice.strategy == codegen::ReduceStrategy::Subgroup &&
      !storedDeviceProfile(exec.context().device()).subgroupArithmetic)
    choice.strategy = codegen::ReduceStrategy::SharedTree;
  return choice;
}

vk::Groups rowGrid(uint32_t rows) {
  constexpr uint32_t maxX = 65535;
  return {std::min(rows, maxX), (rows + maxX - 1) / maxX, 1};
}

void checkShape(const char* op, uint32_t rows, uint32_t cols) {
  if (cols == 0) throw std::invalid_argument(std::string(op) + ": cols is 0");
  const uint64_t n = uint64_t(rows) * cols;
  if (n > 0xffffffffull)
    throw std::invalid_argument(std::string(op) + ": rows*cols = " + std::to_string(n) +
                                " exceeds 2^32-1 elements");
}

void checkElems(const char* op, const char* name, const vk::BufferRange& range, uint64_t count) {
  if (range.size / 4 < count)
    throw std::invalid_argument(std::string(op) + ": " + name + " holds " + std::to_string(range.size / 4) +
                                " elements (" + std::to_string(range.size) + " bytes) but needs " +
                                std::to_string(count));
}

void checkHalfElems(const char* op, const char* name, const vk::BufferRange& range, uint64_t count,
                    codegen::Elem kind) {
  if (range.size / 2 < count)
    throw std::invalid_argument(std::string(op) + ": " + name + " holds " + std::to_string(range.size / 2) +
                                " " + codegen::elemName(kind) + " elements, needs " + std::to_string(count));
}

void checkElemsOf(const char* op, const char* name, const vk::BufferRange& range, uint64_t count,
                  codegen::Elem e) {
  if (codegen::isHalf(e))
    checkHalfElems(op, name, range, count, e);
  else
    checkElems(op, name, range, count);
}

} // namespace rows_detail

void reduceRows(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t rows, uint32_t cols,
                codegen::RowReduceOp op, RowKernelChoice choice) {
  using namespace rows_detail;
  checkShape("reduceRows", rows, cols);
  checkElems("reduceRows", "x", x, uint64_t(rows) * cols);
  checkElems("reduceRows", "out", out, rows);
  if (rows == 0) return;
  const RowKernelChoice c = resolve(exec, choice, cols);
  const codegen::ReduceRowsParams params{op, c.localSize, c.strategy};
  const auto& pipe = exec.pipeline(params, codegen::generateReduceRows);
  const codegen::ReducePush push{rows, cols};
  exec.dispatch(pipe, {{x, Access::Read}, {out, Access::Write}}, push, rowGrid(rows));
}

} // namespace helios::ops
