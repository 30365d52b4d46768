#pragma once
// A test-only tokenizer with the chat templates' special tokens: bytes are ids 0-255 (text encodes byte by
// byte, so expected ids can be written by hand), then the special tokens from 256 on. Its chat template,
// BOS and EOS ids are set per test, as a model's tokenizer_config.json would set them.
#include "engine/train/chat_template.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <string>

namespace helios::test {

inline constexpr std::array<const char*, 7> kChatSpecials = {
    "<|im_start|>",        "<|im_end|>",        "<|endoftext|>", "<|begin_of_text|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};

// The id of special token `piece` (256 + its index in kChatSpecials).
inline int32_t chatSpecial(std::string_view piece) {
  const auto it = std::find(kChatSpecials.begin(), kChatSpecials.end(), piece);
  return it == kChatSpecials.end() ? -1 : 256 + int32_t(it - kChatSpecials.begin());
}

class ChatTestTokenizer final : public text::Tokenizer {
public:
  ChatTestTokenizer(std::string chatTemplate, std::optional<int32_t> bos, std::vector<int32_t> eos)
      : template_(std::move(chatTemplate)), bos_(bos), eos_(std::move(eos)) {}
  const char* kind() const override { return "chat-test"; }
  uint32_t vocab() const override { return 256 + uint32_t(kChatSpecials.size()); }
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (char c : text)
      ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  std::string decodeToken(int32_t id) const override {
    if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
    return id >= 256 && id < int32_t(vocab()) ? kChatSpecials[size_t(id - 256)] : "?";
  }
  std::optional<int32_t> endOfText() const override { return chatSpecial("<|endoftext|>"); }
  std::optional<int32_t> tokenId(std::string_view piece) const override {
    const int32_t id = chatSpecial(piece);
    return id < 0 ? std::nullopt : std::optional<int32_t>(id);
  }
  std::optional<int32_t> bos() const override { return bos_; }
  std::vector<int32_t> eosIds() const override { return eos_; }
  std::string chatTemplate() const override { return template_; }
  nlohmann::json describe() const override { return {{"kind", "chat-test"}, {"template", template_}}; }

private:
  std::string template_;
  std::optional<int32_t> bos_;
  std::vector<int32_t> eos_;
};

// A train::Tokenizer over ChatTestTokenizer: a Qwen2-like one (ChatML template `jinja`, EOS <|endoftext|>,
// no BOS) or a Llama-3-like one (BOS <|begin_of_text|>, EOS <|eot_id|> and <|endoftext|>).
inline train::Tokenizer chatmlTokenizer(std::string jinja = "{{'<|im_start|>' + message['role'] + '\\n' + "
                                                            "message['content'] + '<|im_end|>' + '\\n'}}") {
  return train::Tokenizer(
      std::make_shared<ChatTestTokenizer>(std::move(jinja), std::nullopt, std::vector<int32_t>{258}));
}
inline train::Tokenizer llama3Tokenizer(std::string jinja) {
  return train::Tokenizer(
      std::make_shared<ChatTestTokenizer>(std::move(jinja), 259, std::vector<int32_t>{262, 258}));
}

// One ChatML test tokenizer and its renderer for a whole test binary.
inline const train::Tokenizer& chatmlTestTokenizer() {
  static const train::Tokenizer t = chatmlTokenizer();
  return t;
}
inline const train::ChatRenderer& chatmlRenderer() {
  static const train::ChatRenderer r(train::chooseChatTemplate("", chatmlTestTokenizer().chatTemplate()),
                                     chatmlTestTokenizer());
  return r;
}

} // namespace helios::test
