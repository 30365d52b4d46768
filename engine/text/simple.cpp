#include "engine/text/simple.hpp"

#include <array>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::text {

namespace {

std::string describeByte(uint8_t b) {
  if (b >= 0x20 && b < 0x7f) return fmt::format("'{}' (0x{:02x})", static_cast<char>(b), b);
  return fmt::format("byte 0x{:02x}", b);
}

} // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids)
    out += decodeToken(id);
  return out;
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    ids[i] = static_cast<uint8_t>(text[i]);
  return ids;
}

std::string ByteTokenizer::decodeToken(int32_t id) const {
  if (id < 0 || id > 255) return "?";
  return std::string(1, static_cast<char>(id));
}

CharTokenizer::CharTokenizer(std::vector<uint8_t> chars) : chars_(std::move(chars)), lookup_(256, -1) {
  if (chars_.empty()) throw std::invalid_argument("char-level tokenizer: empty vocabulary");
  for (size_t i = 0; i < chars_.size(); ++i) {
    if (lookup_[chars_[i]] >= 0)
      throw std::invalid_argument(fmt::format("char-level tokenizer: {} listed twice", chars_[i]));
    lookup_[chars_[i]] = static_cast<int32_t>(i);
  }
}

CharTokenizer CharTokenizer::fromCorpus(std::string_view corpus) {
  if (corpus.empty()) throw std::invalid_argument("a char-level tokenizer needs a non-empty corpus");
  std::array<bool, 256> seen{};
  for (char c : corpus)
    seen[static_cast<uint8_t>(c)] = true;
  std::vector<uint8_t> chars;
  for (uint32_t b = 0; b < 256; ++b)
    if (seen[b]) chars.push_back(static_cast<uint8_t>(b));
  return CharTokenizer(std::move(chars));
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    ids[i] = lookup_[b];
    if (ids[i] < 0)
      throw std::invalid_argument(fmt::format("character {} at offset {} is not in the char-level vocabulary "
                                              "({} characters)",
                                              describeByte(b), i, chars_.size()));
  }
  return ids;
}

std::string CharTokenizer::decodeToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= chars_.size()) return "?";
  return std::string(1, static_cast<char>(chars_[id]));
}

} // namespace helios::text
