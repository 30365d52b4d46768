#pragma once
// NumPy .npy files (format versions 1.0-3.0): little-endian float32, float16 and int32 arrays in C order.
// Anything else -- Fortran order, other dtypes, truncated files -- is refused with a message naming the file.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::io {

enum class NpyDType { F32, F16, I32 };
const char* npyDTypeName(NpyDType t); // "float32", "float16", "int32"

struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  std::vector<uint64_t> shape;
  std::vector<std::byte> data; // raw little-endian elements, C order

  uint64_t elements() const;
  std::vector<float> toFloat() const;   // f32 as is, f16 widened; int32 refused
  std::vector<int32_t> toInt32() const; // int32 only
  static NpyArray fromFloat(const std::vector<float>& values, std::vector<uint64_t> shape,
                            NpyDType dtype = NpyDType::F32);
  std::string shapeString() const; // "(3, 4)"
};

class NpyError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

NpyArray readNpy(const std::filesystem::path& path);
// Writes through writeFileAtomically (atomic_file.hpp): a symlink keeps pointing at the new file, a directory
// or device is refused, and on failure nothing is left behind.
void writeNpy(const std::filesystem::path& path, const NpyArray& array);

} // namespace helios::io
