#include "engine/train/tokenizer.hpp"

#include <array>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

namespace {

std::string describeByte(uint8_t b) {
  if (b >= 0x20 && b < 0x7f) return fmt::format("'{}' (0x{:02x})", static_cast<char>(b), b);
  return fmt::format("byte 0x{:02x}", b);
}

Tokenizer fromChars(std::vector<uint8_t> chars) {
  nlohmann::json j{{"kind", "char"}, {"chars", chars}};
  return Tokenizer::fromJson(j);
}

} // namespace

Tokenizer Tokenizer::byteLevel() {
  return Tokenizer();
}

Tokenizer Tokenizer::charLevel(std::string_view corpus) {
  if (corpus.empty()) throw std::invalid_argument("a char-level tokenizer needs a non-empty corpus");
  std::array<bool, 256> seen{};
  for (char c : corpus)
    seen[static_cast<uint8_t>(c)] = true;
  std::vector<uint8_t> chars;
  for (uint32_t b = 0; b < 256; ++b)
    if (seen[b]) chars.push_back(static_cast<uint8_t>(b));
  return fromChars(std::move(chars));
}

Tokenizer Tokenizer::make(std::string_view kind, std::string_view corpus) {
  if (kind == "byte") return byteLevel();
  if (kind == "char") return charLevel(corpus);
  throw std::invalid_argument(fmt::format("unknown tokenizer '{}' (byte or char)", kind));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (kind_ == Kind::Byte) {
      ids[i] = b;
    } else {
      ids[i] = lookup_[b];
      if (ids[i] < 0)
        throw std::invalid_argument(
            fmt::format("character {} at offset {} is not in the char-level vocabulary "
                        "({} characters)",
                        describeByte(b), i, chars_.size()));
    }
  }
  return ids;
}

std::string Tokenizer::decode(int32_t id) const {
  if (id < 0 || static_cast<uint32_t>(id) >= vocab()) return "?";
  return std::string(1, static_cast<char>(kind_ == Kind::Byte ? static_cast<uint8_t>(id) : chars_[id]));
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids)
    out += decode(id);
  return out;
}

nlohmann::json Tokenizer::toJson() const {
  nlohmann::json j{{"kind", kindName()}};
  if (kind_ == Kind::Char) j["chars"] = chars_;
  return j;
}

Tokenizer Tokenizer::fromJson(const nlohmann::json& j) {
  Tokenizer t;
  const std::string kind = j.at("kind").get<std::string>();
  if (kind == "byte") return t;
  if (kind != "char") throw std::invalid_argument(fmt::format("unknown tokenizer kind '{}'", kind));
  t.kind_ = Kind::Char;
  t.lookup_.assign(256, -1);
  for (const auto& c : j.at("chars")) {
    const int v = c.get<int>();
    if (v < 0 || v > 255)
      throw std::invalid_argument(fmt::format("char-level tokenizer: {} is not a byte", v));
    if (t.lookup_[v] >= 0)
      throw std::invalid_argument(fmt::format("char-level tokenizer: {} listed twice", v));
    t.lookup_[v] = static_cast<int32_t>(t.chars_.size());
    t.chars_.push_back(static_cast<uint8_t>(v));
  }
  if (t.chars_.empty()) throw std::invalid_argument("char-level tokenizer: empty vocabulary");
  return t;
}

} // namespace helios::train
