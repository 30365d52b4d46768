#pragma once
// Chat templates as data, not Jinja: the two formats Helios renders, recognised from a model's
// tokenizer_config.json chat_template by their structure, and conversations rendered into token ids with
// the trained ids marked (each assistant turn's content and its end-of-turn token).
//   ChatML (Qwen2, Qwen2.5, SmolLM2):  <|im_start|>{role}\n{content}<|im_end|>\n  per message. A template
//     that inserts a system message when the conversation opens without one holds it in a string constant,
//     '<|im_start|>system\n...<|im_end|>\n'; it is inserted the same way.
//   Llama 3 (header format):  <|begin_of_text|>, then per message
//     <|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|>. Llama 3.1 and later
//     templates always open with a system turn that starts "Cutting Knowledge Date: ...\nToday Date: ...\n\n"
//     (the date is the template's fixed default, not today's, so rendered data does not change by the day).
// The text between two special tokens is encoded on its own, as Hugging Face tokenizers do around added
// tokens; where an assistant header and its content share such a text, the content's ids are those past the
// header's own encoding.
#include "engine/train/stored_tokenizer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace helios::train {

enum class ChatFormat : uint8_t { ChatML, Llama3 };
const char* toString(ChatFormat f); // "chatml", "llama3"
std::optional<ChatFormat> parseChatFormat(std::string_view name);

struct ChatTemplate {
  ChatFormat format = ChatFormat::ChatML;
  std::string defaultSystem;  // ChatML: the system message inserted when the first is not one ("": none)
  std::string systemPreamble; // Llama 3.1+: what the (always present) system turn starts with ("": none)
};

// What `jinja` (a chat_template) is, or nullopt when it has neither format's structure.
std::optional<ChatTemplate> recogniseChatTemplate(std::string_view jinja);

// `flag` (--chat-template: a format name) when not empty, else the tokenizer's template recognised; throws
// std::invalid_argument naming --chat-template chatml|llama3 when neither decides.
ChatTemplate chooseChatTemplate(const std::string& flag, std::string_view tokenizerTemplate);

enum class ChatRole : uint8_t { System, User, Assistant };
const char* toString(ChatRole r); // "system", "user", "assistant"
std::optional<ChatRole> parseChatRole(std::string_view name);

struct ChatMessage {
  ChatRole role = ChatRole::User;
  std::string content;
};

struct RenderedChat {
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained; // per id: 1 where the model learns to produce it
};

class ChatRenderer {
public:
  // Looks the format's special tokens up in `tokenizer` (kept by reference); throws std::invalid_argument
  // naming a missing one.
  ChatRenderer(ChatTemplate tmpl, const Tokenizer& tokenizer);
  RenderedChat render(const std::vector<ChatMessage>& messages) const;
  // The conversation rendered, then the header of the assistant turn to come (what generation continues).
  std::vector<int32_t> prompt(const std::vector<ChatMessage>& messages) const;
  // Ids that end a generated turn: the format's end-of-turn token and the tokenizer's EOS ids.
  std::vector<int32_t> stopIds() const;
  const ChatTemplate& chatTemplate() const { return tmpl_; }

private:
  class Appender;
  void renderChatML(Appender& out, const std::vector<ChatMessage>& messages) const;
  void renderLlama3(Appender& out, const std::vector<ChatMessage>& messages) const;
  int32_t special(const char* piece) const; // the id of a special token the format needs

  ChatTemplate tmpl_;
  const Tokenizer& tok_;
  // ChatML: <|im_start|>, <|im_end|>; Llama 3: <|start_header_id|>, <|end_header_id|>, <|eot_id|> and BOS.
  int32_t open_ = 0, close_ = 0, endHeader_ = 0, bos_ = -1;
};

} // namespace helios::train
