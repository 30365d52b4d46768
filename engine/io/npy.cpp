#include "engine/io/npy.hpp"

#include "engine/core/half.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <limits>

namespace helios::io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

size_t elementSize(NpyDType t) {
  return t == NpyDType::F16 ? 2 : 4;
}

const char* descrOf(NpyDType t) {
  switch (t) {
  case NpyDType::F32:
    return "<f4";
  case NpyDType::F16:
    return "<f2";
  case NpyDType::I32:
    return "<i4";
  }
  return "?";
}

// Reads the value of `key` from the header dict: 'key': value
std::string dictValue(const std::string& header, const std::string& key, const std::string& file) {
  auto pos = header.find("'" + key + "'");
  if (pos == std::string::npos) throw NpyError(fmt::format("{}: header has no '{}' entry", file, key));
  pos = header.find(':', pos);
  if (pos == std::string::npos) throw NpyError(fmt::format("{}: malformed header near '{}'", file, key));
  ++pos;
  while (pos < header.size() && header[pos] == ' ')
    ++pos;
  if (pos >= header.size()) throw NpyError(fmt::format("{}: malformed header near '{}'", file, key));
  if (header[pos] == '(') {
    auto end = header.find(')', pos);
    if (end == std::string::npos) throw NpyError(fmt::format("{}: unterminated shape tuple", file));
    return header.substr(pos, end - pos + 1);
  }
  if (header[pos] == '\'' || header[pos] == '"') {
    auto end = header.find(header[pos], pos + 1);
    if (end == std::string::npos) throw NpyError(fmt::format("{}: unterminated string for '{}'", file, key));
    return header.substr(pos + 1, end - pos - 1);
  }
  auto end = header.find_first_of(",}", pos);
  return header.substr(pos, end - pos);
}

// The shape tuple "(3, 4)", "(3,)" or "()": non-negative decimal dimensions (Python 2's "3L" too), nothing
// else. A sign, a letter or an empty entry is refused, so "(-37, 53)" is never read as (37, 53).
std::vector<uint64_t> parseShape(const std::string& tuple, const std::string& file) {
  const auto bad = [&](const std::string& why) {
    return NpyError(fmt::format("{}: shape {}: {}", file, tuple, why));
  };
  std::vector<uint64_t> shape;
  std::string_view rest(tuple);
  if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') throw bad("not a tuple");
  rest = rest.substr(1, rest.size() - 2);
  const auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ')
      v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ')
      v.remove_suffix(1);
    return v;
  };
  while (!trim(rest).empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (!item.empty() && item.back() == 'L') item.remove_suffix(1);
    if (!item.empty() && item.front() == '-') throw bad(fmt::format("negative dimension {}", item));
    uint64_t d = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec == std::errc::invalid_argument || end != item.data() + item.size())
      throw bad(fmt::format("'{}' is not a dimension", item));
    if (ec == std::errc::result_out_of_range) throw bad(fmt::format("dimension {} is too large", item));
    shape.push_back(d);
  }
  return shape;
}

// Bytes of the array the header describes; a product that overflows 64 bits is refused.
uint64_t dataBytes(const NpyArray& a, const std::string& file) {
  uint64_t n = elementSize(a.dtype);
  for (auto d : a.shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d)
      throw NpyError(
          fmt::format("{}: shape {} is too large (its size overflows 64 bits)", file, a.shapeString()));
    n *= d;
  }
  return n;
}

// Bytes between the read position and the end of the file.
uint64_t remainingBytes(std::ifstream& in, const std::filesystem::path& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  const auto pos = in.tellg();
  if (ec || pos < 0) throw NpyError(fmt::format("{}: cannot determine the file size", path.string()));
  return size - std::min<uint64_t>(size, static_cast<uint64_t>(pos));
}

} // namespace

const char* npyDTypeName(NpyDType t) {
  switch (t) {
  case NpyDType::F32:
    return "float32";
  case NpyDType::F16:
    return "float16";
  case NpyDType::I32:
    return "int32";
  }
  return "?";
}

uint64_t NpyArray::elements() const {
  uint64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

std::string NpyArray::shapeString() const {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::vector<float> NpyArray::toFloat() const {
  std::vector<float> out(elements());
  if (dtype == NpyDType::F32) {
    std::memcpy(out.data(), data.data(), out.size() * 4);
  } else if (dtype == NpyDType::F16) {
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, data.data() + 2 * i, 2);
      out[i] = halfToFloat(h);
    }
  } else {
    throw NpyError("expected a float32 or float16 array, got int32");
  }
  return out;
}

std::vector<int32_t> NpyArray::toInt32() const {
  if (dtype != NpyDType::I32)
    throw NpyError(fmt::format("expected an int32 array, got {}", npyDTypeName(dtype)));
  std::vector<int32_t> out(elements());
  std::memcpy(out.data(), data.data(), out.size() * 4);
  return out;
}

NpyArray NpyArray::fromFloat(const std::vector<float>& values, std::vector<uint64_t> shape, NpyDType dtype) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  if (a.elements() != values.size())
    throw NpyError(fmt::format("{} values do not fill shape {}", values.size(), a.shapeString()));
  a.data.resize(values.size() * elementSize(dtype));
  if (dtype == NpyDType::F32) {
    std::memcpy(a.data.data(), values.data(), values.size() * 4);
  } else if (dtype == NpyDType::F16) {
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t h = floatToHalf(values[i]);
      std::memcpy(a.data.data() + 2 * i, &h, 2);
    }
  } else {
    throw NpyError("fromFloat cannot make an int32 array");
  }
  return a;
}

NpyArray readNpy(const std::filesystem::path& path) {
  const std::string file = path.string();
  requireRegularFile(path, ".npy input"); // before open(): a FIFO would block it
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NpyError(fmt::format("{}: cannot open for reading", file));
  char magic[6];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0)
    throw NpyError(fmt::format("{}: not a NumPy .npy file (bad magic)", file));
  unsigned char version[2];
  if (!in.read(reinterpret_cast<char*>(version), 2))
    throw NpyError(fmt::format("{}: truncated header", file));
  uint32_t headerLen = 0;
  if (version[0] == 1) {
    unsigned char len[2];
    if (!in.read(reinterpret_cast<char*>(len), 2)) throw NpyError(fmt::format("{}: truncated header", file));
    headerLen = len[0] | (len[1] << 8);
  } else if (version[0] == 2 || version[0] == 3) {
    unsigned char len[4];
    if (!in.read(reinterpret_cast<char*>(len), 4)) throw NpyError(fmt::format("{}: truncated header", file));
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t(len[3]) << 24);
  } else {
    throw NpyError(fmt::format("{}: unsupported .npy format version {}.{}", file, version[0], version[1]));
  }
  if (headerLen > (1u << 20))
    throw NpyError(fmt::format("{}: implausible header length {}", file, headerLen));
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen)) throw NpyError(fmt::format("{}: truncated header", file));

  NpyArray a;
  std::string descr = dictValue(header, "descr", file);
  if (descr == "<f4")
    a.dtype = NpyDType::F32;
  else if (descr == "<f2")
    a.dtype = NpyDType::F16;
  else if (descr == "<i4")
    a.dtype = NpyDType::I32;
  else
    throw NpyError(fmt::format(
        "{}: dtype '{}' is not supported (use float32 '<f4', float16 '<f2' or int32 '<i4')", file, descr));
  if (dictValue(header, "fortran_order", file) != "False")
    throw NpyError(fmt::format("{}: Fortran-order arrays are not supported; save a C-order copy "
                               "(numpy.ascontiguousarray)",
                               file));
  a.shape = parseShape(dictValue(header, "shape", file), file);

  // The size the header claims is checked against the bytes the file holds before anything is allocated.
  const uint64_t bytes = dataBytes(a, file);
  const uint64_t have = remainingBytes(in, path);
  if (bytes > have)
    throw NpyError(fmt::format("{}: truncated data: shape {} of {} needs {} bytes, the file has {}", file,
                               a.shapeString(), npyDTypeName(a.dtype), bytes, have));
  if (bytes < have)
    throw NpyError(fmt::format("{}: trailing bytes after the {} array of shape {}", file,
                               npyDTypeName(a.dtype), a.shapeString()));
  a.data.resize(bytes);
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(bytes)))
    throw NpyError(fmt::format("{}: truncated data: shape {} of {} needs {} bytes, the file has {}", file,
                               a.shapeString(), npyDTypeName(a.dtype), bytes, in.gcount()));
  if (in.peek() != std::char_traits<char>::eof())
    throw NpyError(fmt::format("{}: trailing bytes after the {} array of shape {}", file,
                               npyDTypeName(a.dtype), a.shapeString()));
  return a;
}

void writeNpy(const std::filesystem::path& path, const NpyArray& a) {
  std::string shape = a.shapeString();
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descrOf(a.dtype), shape);
  // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) throw NpyError("shape too long for a version 1.0 header");

  std::string bytes(kMagic, 6);
  bytes += std::string{'\x01', '\x00'};
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  writeFileAtomically(path, bytes);
}

} // namespace helios::io
