#include "engine/train/chat_template.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>
#include <stdexcept>

namespace helios::train {

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A Jinja string constant's text with its escapes (\n, \t, \\, \', \") undone.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

// The first capture of `pattern` in `text`, unescaped; "" when it does not match.
std::string capture(std::string_view text, const char* pattern) {
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, std::regex(pattern))) return {};
  return unescape(m[1].str());
}

// Jinja's trim: Python's str.strip() of ASCII whitespace.
std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

constexpr const char* kDefaultDate = "26 Jul 2024"; // Llama 3.1's template's default date_string

} // namespace

const char* toString(ChatFormat f) {
  return f == ChatFormat::ChatML ? "chatml" : "llama3";
}

std::optional<ChatFormat> parseChatFormat(std::string_view name) {
  if (name == "chatml") return ChatFormat::ChatML;
  if (name == "llama3") return ChatFormat::Llama3;
  return std::nullopt;
}

const char* toString(ChatRole r) {
  switch (r) {
  case ChatRole::System:
    return "system";
  case ChatRole::User:
    return "user";
  case ChatRole::Assistant:
    return "assistant";
  }
  return "?";
}

std::optional<ChatRole> parseChatRole(std::string_view name) {
  for (ChatRole r : {ChatRole::System, ChatRole::User, ChatRole::Assistant})
    if (name == toString(r)) return r;
  return std::nullopt;
}

std::optional<ChatTemplate> recogniseChatTemplate(std::string_view jinja) {
  ChatTemplate t;
  if (contains(jinja, "<|im_start|>") && contains(jinja, "<|im_end|>")) {
    t.format = ChatFormat::ChatML;
    // The system message a string constant inserts whole ('...' + content + '...' is the given one's).
    t.defaultSystem = capture(jinja, R"(<\|im_start\|>system\\n((?:[^'"\\<]|\\.)+)<\|im_end\|>)");
    return t;
  }
  if (contains(jinja, "<|start_header_id|>") && contains(jinja, "<|end_header_id|>") &&
      contains(jinja, "<|eot_id|>")) {
    t.format = ChatFormat::Llama3;
    const std::string cutoff = capture(jinja, R"(Cutting Knowledge Date: ([^"'\\]+))");
    if (!cutoff.empty()) {
      std::string date = capture(jinja, R"(set date_string = ["']([^"']+)["'])");
      t.systemPreamble = fmt::format("Cutting Knowledge Date: {}\nToday Date: {}\n\n", cutoff,
                                     date.empty() ? kDefaultDate : date);
    }
    return t;
  }
  return std::nullopt;
}

ChatTemplate chooseChatTemplate(const std::string& flag, std::string_view tokenizerTemplate) {
  if (!flag.empty()) {
    const auto format = parseChatFormat(flag);
    if (!format)
      throw std::invalid_argument(
          fmt::format("--chat-template {}: unknown chat template (chatml or llama3)", flag));
    ChatTemplate t;
    t.format = *format;
    return t;
  }
  if (tokenizerTemplate.empty())
    throw std::invalid_argument("the tokenizer has no chat template (tokenizer_config.json's chat_template): "
                                "choose one with --chat-template chatml|llama3");
  if (auto t = recogniseChatTemplate(tokenizerTemplate)) return *t;
  throw std::invalid_argument(
      "the tokenizer's chat template is neither ChatML (<|im_start|> ... <|im_end|>) nor Llama 3's header "
      "format (<|start_header_id|> ... <|eot_id|>), the formats Helios renders: choose one with "
      "--chat-template chatml|llama3");
}

// Ids and their trained flags, text encoded by the tokenizer.
class ChatRenderer::Appender {
public:
  Appender(const Tokenizer& tok, RenderedChat& out) : tok_(tok), out_(out) {}
  void id(int32_t v, bool trained) {
    out_.ids.push_back(v);
    out_.trained.push_back(trained ? 1 : 0);
  }
  void text(std::string_view s) {
    for (int32_t v : tok_.encode(s))
      id(v, false);
  }
  // head + body encoded as one text; with trainBody the ids past head's own encoding (where the two agree)
  // are trained.
  void headed(std::string_view head, std::string_view body, bool trainBody) {
    const std::vector<int32_t> all = tok_.encode(std::string(head) + std::string(body));
    size_t untrained = all.size();
    if (trainBody) {
      const std::vector<int32_t> alone = tok_.encode(head);
      untrained = static_cast<size_t>(
          std::mismatch(all.begin(), all.end(), alone.begin(), alone.end()).first - all.begin());
    }
    for (size_t i = 0; i < all.size(); ++i)
      id(all[i], i >= untrained);
  }

private:
  const Tokenizer& tok_;
  RenderedChat& out_;
};

int32_t ChatRenderer::special(const char* piece) const {
  if (const auto v = tok_.tokenId(piece)) return *v;
  throw std::invalid_argument(fmt::format("the {} chat template needs the token {}, which the {} tokenizer "
                                          "(vocab {}) does not have",
                                          toString(tmpl_.format), piece, tok_.kindName(), tok_.vocab()));
}

ChatRenderer::ChatRenderer(ChatTemplate tmpl, const Tokenizer& tokenizer)
    : tmpl_(std::move(tmpl)), tok_(tokenizer) {
  if (tmpl_.format == ChatFormat::ChatML) {
    open_ = special("<|im_start|>");
    close_ = special("<|im_end|>");
    return;
  }
  open_ = special("<|start_header_id|>");
  endHeader_ = special("<|end_header_id|>");
  close_ = special("<|eot_id|>");
  bos_ = tok_.bos() ? *tok_.bos() : special("<|begin_of_text|>");
}

void ChatRenderer::renderChatML(Appender& out, const std::vector<ChatMessage>& messages) const {
  const auto turn = [&](ChatRole role, std::string_view content) {
    const bool assistant = role == ChatRole::Assistant;
    out.id(open_, false);
    out.headed(std::string(toString(role)) + "\n", content, assistant);
    out.id(close_, assistant);
    out.text("\n");
  };
  if (!tmpl_.defaultSystem.empty() && (messages.empty() || messages[0].role != ChatRole::System))
    turn(ChatRole::System, tmpl_.defaultSystem);
  for (const ChatMessage& m : messages)
    turn(m.role, m.content);
}

void ChatRenderer::renderLlama3(Appender& out, const std::vector<ChatMessage>& messages) const {
  const auto turn = [&](ChatRole role, std::string_view content) {
    const bool assistant = role == ChatRole::Assistant;
    out.id(open_, false);
    out.text(toString(role));
    out.id(endHeader_, false);
    out.headed("\n\n", content, assistant);
    out.id(close_, assistant);
  };
  out.id(bos_, false);
  size_t first = 0;
  if (!tmpl_.systemPreamble.empty()) { // the system turn is always there, the given system message after
    const bool given = !messages.empty() && messages[0].role == ChatRole::System;
    turn(ChatRole::System, tmpl_.systemPreamble + std::string(given ? trim(messages[0].content) : ""));
    first = given ? 1 : 0;
  }
  for (size_t i = first; i < messages.size(); ++i)
    turn(messages[i].role, trim(messages[i].content));
}

RenderedChat ChatRenderer::render(const std::vector<ChatMessage>& messages) const {
  RenderedChat r;
  Appender out(tok_, r);
  if (tmpl_.format == ChatFormat::ChatML)
    renderChatML(out, messages);
  else
    renderLlama3(out, messages);
  return r;
}

std::vector<int32_t> ChatRenderer::prompt(const std::vector<ChatMessage>& messages) const {
  RenderedChat r = render(messages);
  Appender out(tok_, r);
  out.id(open_, false);
  if (tmpl_.format == ChatFormat::ChatML) {
    out.text("assistant\n");
  } else {
    out.text("assistant");
    out.id(endHeader_, false);
    out.text("\n\n");
  }
  return r.ids;
}

std::vector<int32_t> ChatRenderer::stopIds() const {
  std::vector<int32_t> ids = tok_.eosIds();
  if (std::find(ids.begin(), ids.end(), close_) == ids.end()) ids.insert(ids.begin(), close_);
  return ids;
}

} // namespace helios::train
