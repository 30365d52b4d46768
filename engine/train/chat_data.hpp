#pragma once
// Chat and instruction data: JSONL files, one example per line, either
//   {"messages": [{"role": "system" | "user" | "assistant", "content": "..."}, ...]}   or
//   {"prompt": "...", "completion": "..."}   (a user turn and the assistant's answer),
// other keys ignored. Each example is rendered with a chat template (chat_template.hpp) into token ids, the
// assistant turns' ids marked as trained. A line that cannot be used stops the read with FILE:LINE and the
// reason, or with skipBadLines is counted by kind and left out; an example longer than seq_len + 1 tokens is
// dropped and counted (truncating would train on answers cut short, without their end-of-turn token).
// Blank lines are no examples.
#include "engine/train/chat_template.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace helios::train {

// Why a line is not an example: `kind` names the problem for counting ("malformed JSON", "unknown role",
// "empty assistant turn", ...), what() says it in full.
class ChatLineError : public std::invalid_argument {
public:
  ChatLineError(std::string kind, const std::string& message)
      : std::invalid_argument(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

private:
  std::string kind_;
};

// The messages of one JSONL line; throws ChatLineError (no file or line in the message).
std::vector<ChatMessage> parseChatLine(std::string_view line);

struct ChatExample {
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained; // per id (RenderedChat::trained)
  uint64_t line = 0;            // 1-based, in its file
};

// What reading a file found, for the log and the run's metrics.
struct ChatFileStats {
  std::string path;
  uint64_t lines = 0;                      // lines holding data (blank ones not counted)
  uint64_t examples = 0;                   // kept
  uint64_t tooLong = 0;                    // rendered to more than seq_len + 1 tokens: dropped
  std::map<std::string, uint64_t> skipped; // bad lines left out (skipBadLines), by kind
  std::vector<std::string> notes;          // the first few dropped or skipped lines, "FILE:LINE: why"
  uint64_t skippedLines() const;
  nlohmann::ordered_json toJson() const;
  std::string describe() const; // one line: "12 examples from 14 lines (1 longer than ..., 1 skipped: ...)"
};

struct ChatReadOptions {
  uint32_t seqLen = 0;       // an example may have seqLen + 1 tokens (its inputs and its last target)
  bool skipBadLines = false; // count and leave out bad lines instead of stopping at the first
};

// Every example of the JSONL text of file `name`, in file order; throws ChatLineError ("FILE:LINE: reason")
// at the first bad line unless skipBadLines, and std::runtime_error when it yields no example.
std::vector<ChatExample> readChatExamples(const std::string& name, std::string_view jsonl,
                                          const ChatRenderer& renderer, const ChatReadOptions& options,
                                          ChatFileStats& stats);

} // namespace helios::train
