#include "engine/train/safetensors.hpp"

#include "engine/core/half.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/safetensors_format.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace helios::train {

namespace fs = std::filesystem;

namespace safetensors_format {

uint32_t bytesOf(StoredType t) {
  return t == StoredType::F32 ? 4u : 2u;
}

void encode(std::span<const float> values, StoredType t, std::string& out) {
  const size_t at = out.size();
  out.resize(at + bytesOf(t) * values.size());
  char* dst = out.data() + at;
  if (t == StoredType::F32) {
    std::memcpy(dst, values.data(), values.size() * 4);
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = t == StoredType::F16 ? floatToHalf(values[i]) : floatToBf16(values[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void decode(std::span<const std::byte> bytes, StoredType t, float* out) {
  if (t == StoredType::F32) {
    std::memcpy(out, bytes.data(), bytes.size());
    return;
  }
  for (size_t i = 0; i < bytes.size() / 2; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    out[i] = t == StoredType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
}

std::string hex32(uint32_t v) {
  return fmt::format("{:08x}", v);
}

uint32_t metadataCrc(const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) text += k + '\0' + v + '\0';
  return crc32c(std::as_bytes(std::span<const char>(text)));
}

} // namespace safetensors_format

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

uint64_t TensorInfo::bytes() const {
  return elements() * safetensors_format::bytesOf(stored);
}

const char* toString(StoredType t) {
  return t == StoredType::F32 ? "F32" : t == StoredType::F16 ? "F16" : "BF16";
}

StoredType parseStoredType(const std::string& dtype) {
  std::string d = dtype;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (d == "f32" || d == "float32") return StoredType::F32;
  if (d == "f16" || d == "float16") return StoredType::F16;
  if (d == "bf16" || d == "bfloat16") return StoredType::BF16;
  throw std::invalid_argument(fmt::format("unknown tensor dtype '{}' (f32, f16 or bf16)", dtype));
}

std::string shapeString(const std::vector<uint64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void writeSafetensors(const fs::path& path, const SafeTensorsFile& file) {
  std::vector<TensorInfo> infos;
  for (const auto& t : file.tensors) {
    infos.push_back({t.name, t.shape, t.stored});
    if (infos.back().elements() != t.data.size())
      throw CheckpointError(fmt::format("{}: tensor '{}' has {} values for shape {}", path.string(), t.name,
                                        t.data.size(), shapeString(t.shape)));
  }
  SafetensorsWriter writer(path, file.metadata, std::move(infos));
  for (const auto& t : file.tensors)
    writer.write(t.data);
  writer.commit();
}

SafeTensorsFile readSafetensors(const fs::path& path, bool headerOnly, AcceptTypes accept) {
  const SafetensorsReader reader(path, accept);
  SafeTensorsFile out;
  out.metadata = reader.metadata();
  out.checksummed = reader.checksummed();
  for (const TensorInfo& t : reader.tensors())
    out.tensors.push_back(
        {t.name, t.shape, headerOnly ? std::vector<float>{} : reader.read(t.name), t.stored});
  return out;
}

} // namespace helios::train
