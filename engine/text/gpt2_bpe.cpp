#include "engine/text/gpt2_bpe.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/text/gpt2_pretokenize.hpp"
#include "engine/text/unicode.hpp"

#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace helios::text {

namespace {

constexpr size_t kCacheLimit = 1u << 18; // pieces cached before the cache starts over

std::string mergeKey(const std::string& a, const std::string& b) {
  std::string key;
  key.reserve(a.size() + b.size() + 2);
  key += static_cast<char>(a.size() & 0xFF);
  key += static_cast<char>(a.size() >> 8);
  return key + a + b;
}

// A token as the files spell it -> its bytes.
std::string unmap(std::string_view spelled, const char* file) {
  uint32_t stray = 0;
  if (auto bytes = spelledBytes(spelled, &stray)) return *std::move(bytes);
  throw std::invalid_argument(
      fmt::format("{}: token '{}' has a character that stands for no byte (U+{:04X})", file, spelled, stray));
}

} // namespace

const std::array<uint32_t, 256>& byteToUnicode() {
  static const std::array<uint32_t, 256> map = [] {
    std::array<uint32_t, 256> m{};
    auto printable = [](uint32_t b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b)
      m[b] = printable(b) ? b : next++;
    return m;
  }();
  return map;
}

std::optional<std::string> spelledBytes(std::string_view spelled, uint32_t* stray) {
  static const std::unordered_map<uint32_t, char> back = [] {
    std::unordered_map<uint32_t, char> m;
    for (uint32_t b = 0; b < 256; ++b)
      m[byteToUnicode()[b]] = static_cast<char>(b);
    return m;
  }();
  std::string bytes;
  for (size_t i = 0; i < spelled.size();) {
    const CodePoint cp = decodeUtf8(spelled, i);
    const auto it = back.find(cp.value);
    if (it == back.end()) {
      if (stray) *stray = cp.value;
      return std::nullopt;
    }
    bytes += it->second;
    i += cp.length;
  }
  return bytes;
}

Gpt2Tokenizer::Gpt2Tokenizer(std::string encoderJson, std::string vocabBpe)
    : encoderJson_(std::move(encoderJson)), vocabBpe_(std::move(vocabBpe)) {
  const nlohmann::json enc = nlohmann::json::parse(encoderJson_, nullptr, false);
  if (enc.is_discarded() || !enc.is_object() || enc.empty())
    throw std::invalid_argument("encoder.json: not a JSON object of token -> id");
  decoder_.resize(enc.size());
  std::vector<bool> seen(enc.size(), false);
  for (const auto& [spelled, idJson] : enc.items()) {
    if (!idJson.is_number_integer() || idJson.get<int64_t>() < 0 ||
        idJson.get<int64_t>() >= static_cast<int64_t>(enc.size()))
      throw std::invalid_argument(fmt::format("encoder.json: token '{}' has id {}, not in [0, {})", spelled,
                                              idJson.dump(), enc.size()));
    const auto id = idJson.get<int32_t>();
    if (seen[id]) throw std::invalid_argument(fmt::format("encoder.json: id {} is used twice", id));
    seen[id] = true;
    if (spelled == "<|endoftext|>") {
      endOfText_ = id;
      decoder_[id] = spelled;
      continue;
    }
    decoder_[id] = unmap(spelled, "encoder.json");
    encoder_[decoder_[id]] = id;
  }
  for (uint32_t b = 0; b < 256; ++b)
    if (!encoder_.count(std::string(1, static_cast<char>(b))))
      throw std::invalid_argument(fmt::format("encoder.json: no token for byte 0x{:02x}", b));
  size_t line = 0;
  for (size_t pos = 0; pos < vocabBpe_.size();) {
    size_t end = vocabBpe_.find('\n', pos);
    if (end == std::string::npos) end = vocabBpe_.size();
    std::string_view l(vocabBpe_.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty() || (line == 1 && l.starts_with("#version"))) continue;
    const size_t space = l.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == l.size() ||
        l.find(' ', space + 1) != std::string_view::npos)
      throw std::invalid_argument(fmt::format("vocab.bpe line {}: '{}' is not two tokens", line, l));
    const std::string a = unmap(l.substr(0, space), "vocab.bpe"), b = unmap(l.substr(space + 1), "vocab.bpe");
    ranks_.emplace(mergeKey(a, b), static_cast<int>(ranks_.size()));
  }
}

int Gpt2Tokenizer::rank(const std::string& a, const std::string& b) const {
  const auto it = ranks_.find(mergeKey(a, b));
  return it == ranks_.end() ? std::numeric_limits<int>::max() : it->second;
}

void Gpt2Tokenizer::encodePiece(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<std::string> word;
  for (char c : piece)
    word.emplace_back(1, c);
  while (word.size() > 1) {
    int best = std::numeric_limits<int>::max();
    size_t at = 0;
    for (size_t k = 0; k + 1 < word.size(); ++k)
      if (const int r = rank(word[k], word[k + 1]); r < best) best = r, at = k;
    if (best == std::numeric_limits<int>::max()) break;
    const std::string first = word[at], second = word[at + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(std::move(word[i++]));
      }
    }
    word = std::move(merged);
  }
  for (const auto& symbol : word) {
    const auto it = encoder_.find(symbol);
    if (it == encoder_.end())
      throw std::invalid_argument(
          fmt::format("GPT-2 BPE: a merge made a symbol that encoder.json lacks ({} bytes)", symbol.size()));
    out.push_back(it->second);
  }
}

std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (std::string_view piece : gpt2Pretokenize(text)) {
    std::string key(piece);
    {
      std::lock_guard lock(cacheMutex_);
      if (const auto it = cache_.find(key); it != cache_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    std::vector<int32_t> pieceIds;
    encodePiece(piece, pieceIds);
    ids.insert(ids.end(), pieceIds.begin(), pieceIds.end());
    std::lock_guard lock(cacheMutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::move(key), std::move(pieceIds));
  }
  return ids;
}

std::string Gpt2Tokenizer::decodeToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= decoder_.size()) return "?";
  return decoder_[id];
}

nlohmann::json Gpt2Tokenizer::describe() const {
  return {{"kind", "gpt2"},
          {"vocab", vocab()},
          {"files", {"encoder.json", "vocab.bpe"}},
          {"fnv1a64", fmt::format("{:016x}", fnv1a64(vocabBpe_, fnv1a64(encoderJson_)))}};
}

std::vector<TokenizerFile> Gpt2Tokenizer::files() const {
  return {{"encoder.json", encoderJson_}, {"vocab.bpe", vocabBpe_}};
}

} // namespace helios::text
