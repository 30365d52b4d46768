#include "engine/text/hf/decoder.hpp"

#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/hf/normalizer.hpp"
#include "engine/text/unicode.hpp"

#include <fmt/format.h>

namespace helios::text::hf {

namespace {

// A token spelled in ByteLevel's characters -> its bytes; a token with any other character stays as it is.
std::string byteLevelBytes(const std::string& token) {
  return spelledBytes(token).value_or(token);
}

std::optional<char> fallbackByte(const std::string& token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<char>(hi * 16 + lo);
}

std::vector<std::string> byteFallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string bytes;
  for (auto& t : tokens) {
    if (const auto b = fallbackByte(t)) {
      bytes += *b;
      continue;
    }
    if (!bytes.empty()) out.push_back(std::move(bytes)), bytes.clear();
    out.push_back(std::move(t));
  }
  if (!bytes.empty()) out.push_back(std::move(bytes));
  return out;
}

std::string stripped(const std::string& token, const std::string& c, size_t start, size_t stop) {
  size_t begin = 0, end = token.size();
  for (size_t k = 0; k < start && token.compare(begin, c.size(), c) == 0; ++k)
    begin += c.size();
  for (size_t k = 0; k < stop && end >= begin + c.size() && token.compare(end - c.size(), c.size(), c) == 0;
       ++k)
    end -= c.size();
  return token.substr(begin, end - begin);
}

std::string replacedString(const std::string& token, const std::string& from, const std::string& to) {
  std::string out;
  size_t at = 0;
  for (size_t found; !from.empty() && (found = token.find(from, at)) != std::string::npos;
       at = found + from.size())
    out += token.substr(at, found - at) + to;
  return out + token.substr(at);
}

std::string metaspaced(const std::string& token, const std::string& replacement, bool drop) {
  std::string out;
  for (size_t i = 0; i < token.size();) {
    if (token.compare(i, replacement.size(), replacement) == 0) {
      if (!drop) out += ' ';
      i += replacement.size();
    } else {
      out += token[i++];
    }
  }
  return out;
}

} // namespace

Decoder Decoder::fromJson(const nlohmann::json& j, const Field& at) {
  Decoder d;
  if (!j.is_null()) d.add(j, at), d.none_ = false;
  return d;
}

void Decoder::add(const nlohmann::json& j, const Field& at) {
  const std::string type = asString(required(j, "type", at), at["type"]);
  Step s{};
  if (type == "Sequence") {
    forEachIn(j, "decoders", at, [this](const nlohmann::json& e, const Field& f) { add(e, f); });
    return;
  }
  if (type == "ByteLevel") {
    s.kind = Kind::ByteLevel;
  } else if (type == "Metaspace") {
    s.kind = Kind::Metaspace;
    s.text = asString(required(j, "replacement", at), at["replacement"]);
    s.flag = optString(j, "prepend_scheme", at).value_or("always") != "never" &&
             optBool(j, "add_prefix_space", true, at);
  } else if (type == "Replace") {
    s.kind = Kind::Replace;
    s.text = asString(required(j, "content", at), at["content"]);
    s.pattern = patternFromJson(required(j, "pattern", at), at["pattern"]);
  } else if (type == "ByteFallback") {
    s.kind = Kind::ByteFallback;
  } else if (type == "Fuse") {
    s.kind = Kind::Fuse;
  } else if (type == "Strip") {
    s.kind = Kind::Strip;
    s.text = asString(required(j, "content", at), at["content"]);
    s.start = static_cast<size_t>(std::max<int64_t>(0, asInt(required(j, "start", at), at["start"])));
    s.stop = static_cast<size_t>(std::max<int64_t>(0, asInt(required(j, "stop", at), at["stop"])));
  } else if (type == "BPEDecoder") {
    s.kind = Kind::BpeSuffix;
    s.text = optString(j, "suffix", at).value_or("</w>");
  } else {
    at["type"].fail(fmt::format("decoder '{}' is not implemented in Helios (ByteLevel, Metaspace, Replace, "
                                "ByteFallback, Fuse, Strip, BPEDecoder and Sequence are)",
                                type));
  }
  steps_.push_back(std::move(s));
}

std::vector<std::string> Decoder::run(const Step& s, std::vector<std::string> tokens, DecodeMode mode) {
  const bool whole = mode == DecodeMode::Sequence;
  switch (s.kind) {
  case Kind::ByteLevel: {
    std::string bytes;
    for (const auto& t : tokens)
      bytes += byteLevelBytes(t);
    return {bytes};
  }
  case Kind::ByteFallback:
    return byteFallback(std::move(tokens));
  case Kind::Fuse: {
    std::string all;
    for (const auto& t : tokens)
      all += t;
    return {all};
  }
  default:
    break;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    if (s.kind == Kind::Metaspace) t = metaspaced(t, s.text, whole && i == 0 && s.flag);
    if (s.kind == Kind::Replace) t = replaceAll(t, *s.pattern, s.text);
    if (s.kind == Kind::Strip && whole) t = stripped(t, s.text, s.start, s.stop);
    if (s.kind == Kind::BpeSuffix) t = replacedString(t, s.text, whole && i + 1 == tokens.size() ? "" : " ");
  }
  return tokens;
}

std::string Decoder::decode(std::vector<std::string> tokens, DecodeMode mode) const {
  std::string out;
  if (none_) {
    for (size_t i = 0; i < tokens.size(); ++i)
      out += (i > 0 ? " " : "") + tokens[i];
    return out;
  }
  for (const Step& s : steps_)
    tokens = run(s, std::move(tokens), mode);
  for (const auto& t : tokens)
    out += t;
  return out;
}

} // namespace helios::text::hf
