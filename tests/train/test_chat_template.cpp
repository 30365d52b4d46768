// Chat templates (engine/train/chat_template): formats recognised from hand-written templates with the
// published structures, and conversations rendered into the ids those formats give, written out by hand
// (the test tokenizer encodes text byte by byte), with the trained ids marked.
#include "chat_test_tokenizer.hpp"
#include "engine/train/chat_template.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using train::ChatMessage;
using train::ChatRole;

namespace {

// Expected ids built piece by piece: text byte by byte, special tokens by name; each piece trained or not.
struct Expected {
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained;
  Expected& text(std::string_view s, bool train = false) {
    for (char c : s) {
      ids.push_back(static_cast<unsigned char>(c));
      trained.push_back(train);
    }
    return *this;
  }
  Expected& special(std::string_view piece, bool train = false) {
    ids.push_back(test::chatSpecial(piece));
    trained.push_back(train);
    return *this;
  }
};

void checkRendered(const train::RenderedChat& got, const Expected& want) {
  CHECK(got.ids == want.ids);
  CHECK(got.trained == want.trained);
}

// ChatML: <|im_start|>{role}\n{content}<|im_end|>\n per message; the assistant's content and <|im_end|> are
// trained.
Expected chatmlTurn(Expected e, std::string_view role, std::string_view content) {
  const bool assistant = role == "assistant";
  return e.special("<|im_start|>")
      .text(role)
      .text("\n")
      .text(content, assistant)
      .special("<|im_end|>", assistant)
      .text("\n");
}

// Llama 3: <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>.
Expected llamaTurn(Expected e, std::string_view role, std::string_view content) {
  const bool assistant = role == "assistant";
  return e.special("<|start_header_id|>")
      .text(role)
      .special("<|end_header_id|>")
      .text("\n\n")
      .text(content, assistant)
      .special("<|eot_id|>", assistant);
}

const std::vector<ChatMessage> kConversation = {{ChatRole::System, "Be brief."},
                                                {ChatRole::User, "2+2?"},
                                                {ChatRole::Assistant, "4"},
                                                {ChatRole::User, "And 3+3?"},
                                                {ChatRole::Assistant, "6, of course."}};

// Hand-written templates with the structures of the published ones: a ChatML template with a default system
// message inserted as one string constant (as Qwen2's and SmolLM2's are), Llama 3.0's header format, and
// Llama 3.1's system turn with the knowledge cut-off and its default date.
const char* kChatmlDefaultSystem =
    "{%- if messages[0]['role'] != 'system' %}{{- '<|im_start|>system\\nYou are a \\'test\\' "
    "bot.<|im_end|>\\n' "
    "}}{%- endif %}{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}";
const char* kLlama30 =
    "{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 "
    "== 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}";
const char* kLlama31 =
    "{{- bos_token }}{%- if not date_string is defined %}{%- set date_string = \"26 Jul 2024\" "
    "%}{%- endif %}{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}{{- \"Cutting "
    "Knowledge Date: December 2023\\n\" }}{{- \"Today Date: \" + date_string + \"\\n\\n\" "
    "}}{{- system_message }}{{- \"<|eot_id|>\" }}";

} // namespace

TEST_CASE("chat template: ChatML ids and trained tokens, turn by turn", "[train][chat]") {
  const train::Tokenizer tok = test::chatmlTokenizer();
  const train::ChatRenderer r(train::chooseChatTemplate("", tok.chatTemplate()), tok);
  CHECK(r.chatTemplate().format == train::ChatFormat::ChatML);
  CHECK(r.chatTemplate().defaultSystem.empty());
  Expected e;
  for (const ChatMessage& m : kConversation)
    e = chatmlTurn(e, toString(m.role), m.content);
  checkRendered(r.render(kConversation), e);
  // Generation: the conversation, then the assistant's header; it stops at <|im_end|> or EOS.
  std::vector<ChatMessage> ask{{ChatRole::User, "hi"}};
  Expected p = chatmlTurn({}, "user", "hi");
  p.special("<|im_start|>").text("assistant\n");
  CHECK(r.prompt(ask) == p.ids);
  CHECK(r.stopIds() ==
        std::vector<int32_t>{test::chatSpecial("<|im_end|>"), test::chatSpecial("<|endoftext|>")});
}

TEST_CASE("chat template: a ChatML template's default system message opens conversations without one",
          "[train][chat]") {
  const auto t = train::recogniseChatTemplate(kChatmlDefaultSystem);
  REQUIRE(t);
  CHECK(t->format == train::ChatFormat::ChatML);
  CHECK(t->defaultSystem == "You are a 'test' bot.");
  const train::Tokenizer tok = test::chatmlTokenizer(kChatmlDefaultSystem);
  const train::ChatRenderer r(*t, tok);
  const std::vector<ChatMessage> noSystem{{ChatRole::User, "Q"}, {ChatRole::Assistant, "A"}};
  checkRendered(r.render(noSystem),
                chatmlTurn(chatmlTurn(chatmlTurn({}, "system", "You are a 'test' bot."), "user", "Q"),
                           "assistant", "A"));
  // A conversation with its own system message keeps it alone.
  Expected e;
  for (const ChatMessage& m : kConversation)
    e = chatmlTurn(e, toString(m.role), m.content);
  checkRendered(r.render(kConversation), e);
}

TEST_CASE("chat template: Llama 3 headers, BOS, trimmed content", "[train][chat]") {
  const train::Tokenizer tok = test::llama3Tokenizer(kLlama30);
  const auto t = train::recogniseChatTemplate(kLlama30);
  REQUIRE(t);
  CHECK(t->format == train::ChatFormat::Llama3);
  CHECK(t->systemPreamble.empty());
  const train::ChatRenderer r(*t, tok);
  std::vector<ChatMessage> spaced = kConversation;
  spaced[2].content = "  4\n"; // the template trims content
  Expected e;
  e.special("<|begin_of_text|>");
  for (const ChatMessage& m : kConversation)
    e = llamaTurn(e, toString(m.role), m.content);
  checkRendered(r.render(spaced), e);
  Expected p = llamaTurn(Expected{}.special("<|begin_of_text|>"), "user", "hi");
  p.special("<|start_header_id|>").text("assistant").special("<|end_header_id|>").text("\n\n");
  CHECK(r.prompt({{ChatRole::User, "hi"}}) == p.ids);
  CHECK(r.stopIds() ==
        std::vector<int32_t>{test::chatSpecial("<|eot_id|>"), test::chatSpecial("<|endoftext|>")});
}

TEST_CASE("chat template: Llama 3.1's system turn with the knowledge cut-off and the template's date",
          "[train][chat]") {
  const auto t = train::recogniseChatTemplate(kLlama31);
  REQUIRE(t);
  const std::string preamble = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  CHECK(t->systemPreamble == preamble);
  const train::Tokenizer tok = test::llama3Tokenizer(kLlama31);
  const train::ChatRenderer r(*t, tok);
  // Given a system message, it follows the preamble; without one the system turn holds the preamble alone.
  Expected e = llamaTurn(Expected{}.special("<|begin_of_text|>"), "system", preamble + "Be brief.");
  for (size_t i = 1; i < kConversation.size(); ++i)
    e = llamaTurn(e, toString(kConversation[i].role), kConversation[i].content);
  checkRendered(r.render(kConversation), e);
  const std::vector<ChatMessage> noSystem{{ChatRole::User, "Q"}, {ChatRole::Assistant, "A"}};
  checkRendered(r.render(noSystem),
                llamaTurn(llamaTurn(llamaTurn(Expected{}.special("<|begin_of_text|>"), "system", preamble),
                                    "user", "Q"),
                          "assistant", "A"));
}

TEST_CASE("chat template: the flag decides, else the tokenizer's template; otherwise a clear error",
          "[train][chat]") {
  CHECK(train::chooseChatTemplate("llama3", kChatmlDefaultSystem).format == train::ChatFormat::Llama3);
  CHECK(train::chooseChatTemplate("chatml", "").format == train::ChatFormat::ChatML);
  CHECK_THROWS_WITH(train::chooseChatTemplate("", ""),
                    ContainsSubstring("has no chat template") &&
                        ContainsSubstring("--chat-template chatml|llama3"));
  CHECK_THROWS_WITH(train::chooseChatTemplate("", "{% for m in messages %}[INST] {{ m['content'] }} [/INST]"),
                    ContainsSubstring("neither ChatML") &&
                        ContainsSubstring("--chat-template chatml|llama3"));
  CHECK_THROWS_WITH(train::chooseChatTemplate("alpaca", ""), ContainsSubstring("--chat-template alpaca"));
  // A tokenizer without the format's tokens is named with the token it lacks.
  const train::Tokenizer bytes = train::Tokenizer::byteLevel();
  CHECK_THROWS_WITH(train::ChatRenderer(train::chooseChatTemplate("chatml", ""), bytes),
                    ContainsSubstring("needs the token <|im_start|>") && ContainsSubstring("byte tokenizer"));
  CHECK(train::parseChatRole("assistant") == ChatRole::Assistant);
  CHECK_FALSE(train::parseChatRole("tool"));
}
