#include "engine/io/atomic_file.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/durable_file.hpp"
#include "engine/train/safetensors.hpp"
#include "engine/train/safetensors_format.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace helios::train {

namespace fs = std::filesystem;
using namespace safetensors_format;

namespace {

// Values are converted and checksummed in pieces of this many, so a tensor's stored bytes never exist whole.
constexpr size_t kChunkValues = 4u << 20;

// The header with the given tensor checksums (8 hex digits each: the same length whatever they are).
std::string headerText(const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorInfo>& tensors, const std::vector<uint32_t>& crcs) {
  nlohmann::ordered_json header;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) meta[k] = v;
  header["__metadata__"] = meta;
  nlohmann::ordered_json sums;
  sums["__metadata__"] = hex32(metadataCrc(metadata));
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    const uint64_t n = t.bytes();
    header[t.name] = {
        {"dtype", toString(t.stored)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    sums[t.name] = hex32(crcs[i]);
    offset += n;
  }
  header["__metadata__"][kChecksumKey] = sums.dump();
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string blob(8, '\0');
  for (int i = 0; i < 8; ++i)
    blob[size_t(i)] = static_cast<char>((uint64_t(json.size()) >> (8 * i)) & 0xff);
  return blob + json;
}

std::span<const std::byte> asBytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

} // namespace

struct SafetensorsWriter::Impl {
  fs::path path;
  std::map<std::string, std::string> metadata;
  std::vector<TensorInfo> tensors;
  std::vector<uint32_t> crcs;
  io::AtomicFileWriter out;
  size_t next = 0;

  Impl(const fs::path& p, std::map<std::string, std::string> meta, std::vector<TensorInfo> ts)
      : path(p), metadata(std::move(meta)), tensors(std::move(ts)), crcs(tensors.size(), 0), out(p) {
    for (const TensorInfo& t : tensors)
      if (t.name == "__metadata__") throw CheckpointError("a tensor may not be called __metadata__");
    out.append(asBytes(headerText(metadata, tensors, crcs)));
  }
};

SafetensorsWriter::SafetensorsWriter(const fs::path& path, std::map<std::string, std::string> metadata,
                                     std::vector<TensorInfo> tensors)
    : impl_(std::make_unique<Impl>(path, std::move(metadata), std::move(tensors))) {}

SafetensorsWriter::~SafetensorsWriter() = default;

void SafetensorsWriter::write(std::span<const float> values) {
  Impl& m = *impl_;
  if (m.next >= m.tensors.size())
    throw CheckpointError(fmt::format("{}: more tensors written than the header names", m.path.string()));
  const TensorInfo& t = m.tensors[m.next];
  if (values.size() != t.elements())
    throw CheckpointError(fmt::format("{}: tensor '{}' has {} values for shape {}", m.path.string(), t.name,
                                      values.size(), shapeString(t.shape)));
  std::string stored;
  uint32_t crc = 0;
  for (size_t at = 0; at < values.size(); at += kChunkValues) {
    stored.clear();
    encode(values.subspan(at, std::min(kChunkValues, values.size() - at)), t.stored, stored);
    crc = crc32c(asBytes(stored), crc);
    m.out.append(asBytes(stored));
  }
  m.crcs[m.next++] = crc;
}

void SafetensorsWriter::commit() {
  Impl& m = *impl_;
  if (m.next != m.tensors.size())
    throw CheckpointError(
        fmt::format("{}: {} of {} tensors written", m.path.string(), m.next, m.tensors.size()));
  const std::string header = headerText(m.metadata, m.tensors, m.crcs);
  m.out.writeAt(0, asBytes(header));
  savePause();
  m.out.commit();
  savePause(); // a crash test's kill may land here: the file is in place, the save not yet complete
}

} // namespace helios::train
