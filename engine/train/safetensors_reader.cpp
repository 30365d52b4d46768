#include "engine/io/mapped_file.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/safetensors.hpp"
#include "engine/train/safetensors_format.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace helios::train {

namespace fs = std::filesystem;
using namespace safetensors_format;

namespace {

struct Entry {
  TensorInfo info;
  uint64_t begin = 0, end = 0; // data offsets
};

StoredType storedTypeOf(const std::string& dtype, const std::string& file, const std::string& name,
                        AcceptTypes accept) {
  if (dtype == "F32") return StoredType::F32;
  if (accept == AcceptTypes::Floats && (dtype == "F16" || dtype == "BF16"))
    return dtype == "F16" ? StoredType::F16 : StoredType::BF16;
  throw CheckpointError(fmt::format("{}: tensor '{}' has dtype {}; {}", file, name, dtype,
                                    accept == AcceptTypes::F32Only ? "Helios checkpoints hold F32 only"
                                                                   : "only F32, F16 and BF16 are read"));
}

uint64_t headerLength(std::span<const std::byte> bytes, const std::string& file) {
  if (bytes.size() < 8)
    throw CheckpointError(
        fmt::format("{}: truncated: {} bytes, not even a header length", file, bytes.size()));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(std::to_integer<uint8_t>(bytes[size_t(i)])) << (8 * i);
  if (n > kMaxHeader)
    throw CheckpointError(fmt::format("{}: bad header: implausible header length {}", file, n));
  if (8 + n > bytes.size())
    throw CheckpointError(
        fmt::format("{}: truncated: the header needs {} bytes, the file has {}", file, 8 + n, bytes.size()));
  return n;
}

Entry entryOf(const std::string& key, const nlohmann::json& value, const std::string& file,
              AcceptTypes accept) {
  try {
    Entry e{{key, value.at("shape").get<std::vector<uint64_t>>(),
             storedTypeOf(value.at("dtype").get<std::string>(), file, key, accept)}};
    const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
    if (offsets.size() != 2 || offsets[0] > offsets[1])
      throw CheckpointError(fmt::format("{}: bad header: tensor '{}' has invalid data_offsets", file, key));
    e.begin = offsets[0];
    e.end = offsets[1];
    if (e.end - e.begin != e.info.bytes())
      throw CheckpointError(fmt::format("{}: bad header: tensor '{}' of shape {} spans {} bytes, not {}",
                                        file, key, shapeString(e.info.shape), e.end - e.begin,
                                        e.info.bytes()));
    return e;
  } catch (const nlohmann::json::exception& ex) {
    throw CheckpointError(fmt::format("{}: bad header: tensor '{}': {}", file, key, ex.what()));
  }
}

} // namespace

struct SafetensorsReader::Impl {
  io::MappedFile file;
  std::string name;
  uint64_t dataStart = 0;
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;
  std::vector<TensorInfo> infos;
  nlohmann::json sums; // helios.crc32c, when present
  bool checksummed = false;

  static io::MappedFile open(const fs::path& path) {
    try {
      return io::MappedFile(path);
    } catch (const std::runtime_error& e) {
      throw CheckpointError(fmt::format("{} (missing checkpoint file?)", e.what()));
    }
  }

  Impl(const fs::path& path, AcceptTypes accept) : file(open(path)), name(path.string()) {
    const uint64_t n = headerLength(file.bytes(), name);
    dataStart = 8 + n;
    const auto* text = reinterpret_cast<const char*>(file.bytes().data()) + 8;
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(text, text + n);
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(fmt::format("{}: bad header: not valid JSON ({})", name, e.what()));
    }
    if (!header.is_object()) throw CheckpointError(fmt::format("{}: bad header: not a JSON object", name));
    uint64_t dataBytes = 0;
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") {
        readMetadata(value);
        continue;
      }
      entries.push_back(entryOf(key, value, name, accept));
      dataBytes = std::max(dataBytes, entries.back().end);
    }
    if (dataStart + dataBytes != file.size())
      throw CheckpointError(
          fmt::format("{}: {}: the header describes {} bytes of tensor data, the file holds {}", name,
                      dataStart + dataBytes > file.size() ? "truncated" : "trailing bytes", dataBytes,
                      file.size() - dataStart));
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
    for (const Entry& e : entries)
      infos.push_back(e.info);
    verifyMetadata();
  }

  void readMetadata(const nlohmann::json& value) {
    if (!value.is_object())
      throw CheckpointError(fmt::format("{}: bad header: __metadata__ is not an object", name));
    for (const auto& [mk, mv] : value.items()) {
      if (!mv.is_string())
        throw CheckpointError(
            fmt::format("{}: bad header: __metadata__ value '{}' is not a string", name, mk));
      metadata[mk] = mv.get<std::string>();
    }
  }

  std::string expectedCrc(const std::string& key) const {
    if (!sums.contains(key) || !sums[key].is_string())
      throw CheckpointError(fmt::format("{}: no checksum for {} in {}", name, key, kChecksumKey));
    return sums[key].get<std::string>();
  }

  // The metadata's checksum (the tensors' are checked as they are read); removes the checksum entry.
  void verifyMetadata() {
    auto it = metadata.find(kChecksumKey);
    if (it == metadata.end()) return;
    sums = nlohmann::json::parse(it->second, nullptr, false);
    if (!sums.is_object())
      throw CheckpointError(fmt::format("{}: bad header: {} is not a JSON object", name, kChecksumKey));
    metadata.erase(it);
    if (expectedCrc("__metadata__") != hex32(metadataCrc(metadata)))
      throw CheckpointError(fmt::format(
          "{}: checksum mismatch in __metadata__ (the step, configuration or trainer state was altered)",
          name));
    checksummed = true;
  }

  const Entry& entry(const std::string& tensor) const {
    for (const Entry& e : entries)
      if (e.info.name == tensor) return e;
    throw CheckpointError(fmt::format("{}: no tensor '{}'", name, tensor));
  }

  std::span<const std::byte> bytes(const Entry& e) const {
    return file.bytes().subspan(dataStart + e.begin, e.end - e.begin);
  }
};

SafetensorsReader::SafetensorsReader(const fs::path& path, AcceptTypes accept)
    : impl_(std::make_unique<Impl>(path, accept)) {}
SafetensorsReader::~SafetensorsReader() = default;
SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;

const fs::path& SafetensorsReader::path() const {
  return impl_->file.path();
}

const std::map<std::string, std::string>& SafetensorsReader::metadata() const {
  return impl_->metadata;
}

bool SafetensorsReader::checksummed() const {
  return impl_->checksummed;
}

const std::vector<TensorInfo>& SafetensorsReader::tensors() const {
  return impl_->infos;
}

const TensorInfo* SafetensorsReader::find(const std::string& name) const {
  for (const TensorInfo& t : impl_->infos)
    if (t.name == name) return &t;
  return nullptr;
}

std::span<const std::byte> SafetensorsReader::storedBytes(const std::string& name) const {
  return impl_->bytes(impl_->entry(name));
}

std::vector<float> SafetensorsReader::read(const std::string& name) const {
  const Entry& e = impl_->entry(name);
  const std::span<const std::byte> stored = impl_->bytes(e);
  if (impl_->checksummed) {
    const std::string want = impl_->expectedCrc(name), got = hex32(crc32c(stored));
    if (want != got)
      throw CheckpointError(fmt::format("{}: checksum mismatch in tensor '{}' (CRC-32C {} stored, {} read): "
                                        "its bytes were altered or belong to another tensor",
                                        impl_->name, name, want, got));
  }
  std::vector<float> values(e.info.elements());
  decode(stored, e.info.stored, values.data());
  return values;
}

} // namespace helios::train
