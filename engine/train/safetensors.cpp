#include "engine/train/safetensors.hpp"

#include "engine/core/half.hpp"
#include "engine/io/input_file.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;
constexpr const char* kChecksumKey = "helios.crc32c"; // JSON: tensor name -> CRC-32C, "__metadata__" too
constexpr const char* kSealKey = "helios.seal"; // CRC-32C of the checksums, the metadata, the tensor table

uint64_t elementsOf(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

uint32_t bytesOf(StoredType t) {
  return t == StoredType::F32 ? 4u : 2u;
}

// The stored bytes of a tensor (little-endian hosts only).
std::string encode(const SafeTensor& t) {
  std::string out(bytesOf(t.stored) * t.data.size(), '\0');
  if (t.stored == StoredType::F32) {
    std::memcpy(out.data(), t.data.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < t.data.size(); ++i) {
    const uint16_t h = t.stored == StoredType::F16 ? floatToHalf(t.data[i]) : floatToBf16(t.data[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<float> decode(const std::string& bytes, StoredType t) {
  std::vector<float> v(bytes.size() / bytesOf(t));
  if (t == StoredType::F32) {
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    v[i] = t == StoredType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  return v;
}

std::string hex32(uint32_t v) {
  return fmt::format("{:08x}", v);
}

uint32_t bytesCrc(const std::string& bytes) {
  return crc32c(std::as_bytes(std::span<const char>(bytes)));
}

// Every metadata entry but the checksums and the seal, as "key\0value\0" in key order.
uint32_t metadataCrc(const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey && k != kSealKey) text += k + '\0' + v + '\0';
  return bytesCrc(text);
}

// One tensor's entry in the header, as the seal covers it.
struct TableEntry {
  std::string name;
  StoredType stored;
  std::vector<uint64_t> shape;
  uint64_t begin, end;
};

// The seal: the checksum map (so a tensor swapped together with its entry is caught), the other metadata and
// the tensor table (names, types, shapes, offsets in file order), as "key\0value\0" and "name\0type\0dims\0
// begin\0end\0".
uint32_t sealCrc(const std::map<std::string, std::string>& metadata, const std::string& checksums,
                 const std::vector<TableEntry>& table) {
  std::string text = std::string(kChecksumKey) + '\0' + checksums + '\0';
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey && k != kSealKey) text += k + '\0' + v + '\0';
  for (const TableEntry& e : table)
    text += e.name + '\0' + toString(e.stored) + '\0' + fmt::format("{}", fmt::join(e.shape, ",")) + '\0' +
            std::to_string(e.begin) + '\0' + std::to_string(e.end) + '\0';
  return bytesCrc(text);
}

// Checks the metadata's checksum, and the tensors' when their data was read, then the seal over them all;
// removes the checksum and seal entries.
void verifyChecksums(SafeTensorsFile& f, const std::map<std::string, uint32_t>& tensorCrcs,
                     const std::vector<TableEntry>& table, const std::string& file, bool headerOnly) {
  auto it = f.metadata.find(kChecksumKey);
  if (it == f.metadata.end()) return;
  nlohmann::json sums = nlohmann::json::parse(it->second, nullptr, false);
  if (!sums.is_object())
    throw CheckpointError(fmt::format("{}: bad header: {} is not a JSON object", file, kChecksumKey));
  const std::string checksums = it->second;
  f.metadata.erase(it);
  std::optional<std::string> seal;
  if (auto s = f.metadata.find(kSealKey); s != f.metadata.end()) {
    seal = s->second;
    f.metadata.erase(s);
  }
  auto expect = [&](const std::string& name) {
    if (!sums.contains(name) || !sums[name].is_string())
      throw CheckpointError(fmt::format("{}: no checksum for {} in {}", file, name, kChecksumKey));
    return sums[name].get<std::string>();
  };
  if (expect("__metadata__") != hex32(metadataCrc(f.metadata)))
    throw CheckpointError(fmt::format(
        "{}: checksum mismatch in __metadata__ (the step, configuration or trainer state was altered)",
        file));
  if (!headerOnly) {
    for (const auto& t : f.tensors) {
      const std::string want = expect(t.name), got = hex32(tensorCrcs.at(t.name));
      if (want != got)
        throw CheckpointError(
            fmt::format("{}: checksum mismatch in tensor '{}' (CRC-32C {} stored, {} read): "
                        "its bytes were altered or belong to another tensor",
                        file, t.name, want, got));
    }
  }
  f.checksummed = true;
  if (!seal) return;
  if (*seal != hex32(sealCrc(f.metadata, checksums, table)))
    throw CheckpointError(
        fmt::format("{}: checksum mismatch in the header seal ({}): the tensor table, the "
                    "checksums in {} or the metadata were altered (e.g. two tensors swapped "
                    "together with their checksum entries)",
                    file, kSealKey, kChecksumKey));
  f.sealed = true;
}

StoredType storedTypeOf(const std::string& dtype, const std::string& file, const std::string& name,
                        AcceptTypes accept) {
  if (dtype == "F32") return StoredType::F32;
  if (accept == AcceptTypes::Floats && (dtype == "F16" || dtype == "BF16"))
    return dtype == "F16" ? StoredType::F16 : StoredType::BF16;
  throw CheckpointError(fmt::format("{}: tensor '{}' has dtype {}; {}", file, name, dtype,
                                    accept == AcceptTypes::F32Only ? "Helios checkpoints hold F32 only"
                                                                   : "only F32, F16 and BF16 are read"));
}

} // namespace

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
  nlohmann::ordered_json header;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : file.metadata)
    if (k != kChecksumKey && k != kSealKey) meta[k] = v;
  header["__metadata__"] = meta;
  nlohmann::ordered_json sums;
  sums["__metadata__"] = hex32(metadataCrc(file.metadata));
  std::vector<std::string> bytes;
  std::vector<TableEntry> table;
  uint64_t offset = 0;
  for (const auto& t : file.tensors) {
    if (t.name == "__metadata__") throw CheckpointError("a tensor may not be called __metadata__");
    if (elementsOf(t.shape) != t.data.size())
      throw CheckpointError(fmt::format("{}: tensor '{}' has {} values for shape {}", path.string(), t.name,
                                        t.data.size(), shapeString(t.shape)));
    bytes.push_back(encode(t));
    const uint64_t n = bytes.back().size();
    header[t.name] = {
        {"dtype", toString(t.stored)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    sums[t.name] = hex32(bytesCrc(bytes.back()));
    table.push_back({t.name, t.stored, t.shape, offset, offset + n});
    offset += n;
  }
  const std::string checksums = sums.dump();
  header["__metadata__"][kChecksumKey] = checksums;
  header["__metadata__"][kSealKey] = hex32(sealCrc(file.metadata, checksums, table));
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string blob(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    blob[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  blob += json;
  blob.reserve(blob.size() + offset);
  for (const auto& b : bytes)
    blob += b;
  writeFileDurably(path, blob);
}

SafeTensorsFile readSafetensors(const fs::path& path, bool headerOnly, AcceptTypes accept) {
  const std::string file = path.string();
  io::requireRegularFile(path, "safetensors file"); // before open(): a FIFO would block it
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw CheckpointError(fmt::format("{}: cannot open (missing checkpoint file?)", file));
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    throw CheckpointError(fmt::format("{}: truncated: {} bytes, not even a header length", file, size));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(len[i]) << (8 * i);
  if (n > kMaxHeader)
    throw CheckpointError(fmt::format("{}: bad header: implausible header length {}", file, n));
  if (8 + n > size)
    throw CheckpointError(
        fmt::format("{}: truncated: the header needs {} bytes, the file has {}", file, 8 + n, size));
  std::string json(n, '\0');
  in.read(json.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("{}: bad header: not valid JSON ({})", file, e.what()));
  }
  if (!header.is_object()) throw CheckpointError(fmt::format("{}: bad header: not a JSON object", file));

  SafeTensorsFile out;
  struct Entry {
    std::string name;
    std::vector<uint64_t> shape;
    StoredType stored;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  uint64_t dataBytes = 0;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        throw CheckpointError(fmt::format("{}: bad header: __metadata__ is not an object", file));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          throw CheckpointError(
              fmt::format("{}: bad header: __metadata__ value '{}' is not a string", file, mk));
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    try {
      Entry e{key, value.at("shape").get<std::vector<uint64_t>>(),
              storedTypeOf(value.at("dtype").get<std::string>(), file, key, accept), 0, 0};
      const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw CheckpointError(fmt::format("{}: bad header: tensor '{}' has invalid data_offsets", file, key));
      e.begin = offsets[0];
      e.end = offsets[1];
      const uint64_t want = bytesOf(e.stored) * elementsOf(e.shape);
      if (e.end - e.begin != want)
        throw CheckpointError(fmt::format("{}: bad header: tensor '{}' of shape {} spans {} bytes, not {}",
                                          file, key, shapeString(e.shape), e.end - e.begin, want));
      dataBytes = std::max(dataBytes, e.end);
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      throw CheckpointError(fmt::format("{}: bad header: tensor '{}': {}", file, key, ex.what()));
    }
  }
  if (8 + n + dataBytes != size)
    throw CheckpointError(
        fmt::format("{}: {}: the header describes {} bytes of tensor data, the file holds {}", file,
                    8 + n + dataBytes > size ? "truncated" : "trailing bytes", dataBytes, size - 8 - n));
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  std::vector<TableEntry> table;
  for (const auto& e : entries)
    table.push_back({e.name, e.stored, e.shape, e.begin, e.end});
  std::map<std::string, uint32_t> crcs;
  for (const auto& e : entries) {
    if (headerOnly) {
      out.tensors.push_back({e.name, e.shape, {}, e.stored});
      continue;
    }
    std::string bytes(e.end - e.begin, '\0');
    in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!in) throw CheckpointError(fmt::format("{}: read failed in tensor '{}'", file, e.name));
    crcs[e.name] = bytesCrc(bytes);
    out.tensors.push_back({e.name, e.shape, decode(bytes, e.stored), e.stored});
  }
  verifyChecksums(out, crcs, table, file, headerOnly);
  return out;
}

} // namespace helios::train
