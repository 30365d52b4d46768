#include "engine/train/chat_data.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace helios::train {

namespace {

using nlohmann::json;

constexpr size_t kNotes = 5; // dropped or skipped lines listed by name

[[noreturn]] void bad(const char* kind, const std::string& message) {
  throw ChatLineError(kind, message);
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

std::string text(const json& j, const std::string& what) {
  if (!j.is_string()) bad("not an example", fmt::format("{} is not a string (got {})", what, j.type_name()));
  return j.get<std::string>();
}

ChatMessage message(const json& m, size_t i) {
  const std::string me = fmt::format("message {}", i + 1);
  if (!m.is_object() || !m.contains("role") || !m.contains("content"))
    bad("not an example", me + " is not an object with \"role\" and \"content\"");
  const std::string role = text(m["role"], me + "'s role");
  const auto r = parseChatRole(role);
  if (!r) bad("unknown role", fmt::format("{} has the role \"{}\" (system, user or assistant)", me, role));
  return {*r, text(m["content"], me + "'s content")};
}

std::vector<ChatMessage> messages(const json& j) {
  const bool chat = j.contains("messages"), instruction = j.contains("prompt") || j.contains("completion");
  if (chat && instruction) bad("not an example", "holds both \"messages\" and \"prompt\"/\"completion\"");
  if (instruction) {
    if (!j.contains("prompt") || !j.contains("completion"))
      bad("not an example", "needs both \"prompt\" and \"completion\"");
    return {{ChatRole::User, text(j["prompt"], "the prompt")},
            {ChatRole::Assistant, text(j["completion"], "the completion")}};
  }
  if (!chat) bad("not an example", "has neither \"messages\" nor \"prompt\" and \"completion\"");
  const json& list = j["messages"];
  if (!list.is_array() || list.empty()) bad("not an example", "\"messages\" is not a non-empty array");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(message(list[i], i));
  return out;
}

// Every assistant turn says something, and there is one: otherwise nothing would be trained.
void checkTurns(const std::vector<ChatMessage>& ms) {
  bool assistant = false;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].role != ChatRole::Assistant) continue;
    assistant = true;
    if (blank(ms[i].content))
      bad("empty assistant turn", fmt::format("message {} (assistant) is empty", i + 1));
  }
  if (!assistant) bad("no assistant turn", "has no assistant turn (nothing to train on)");
}

} // namespace

std::vector<ChatMessage> parseChatLine(std::string_view line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    bad("malformed JSON", fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object())
    bad("not an example", fmt::format("a line holds one JSON object, got {}", j.type_name()));
  std::vector<ChatMessage> ms = messages(j);
  checkTurns(ms);
  return ms;
}

uint64_t ChatFileStats::skippedLines() const {
  uint64_t n = 0;
  for (const auto& [kind, count] : skipped)
    n += count;
  return n;
}

nlohmann::ordered_json ChatFileStats::toJson() const {
  nlohmann::ordered_json j{
      {"path", path}, {"lines", lines}, {"examples", examples}, {"too_long", tooLong}, {"skipped", skipped}};
  return j;
}

std::string ChatFileStats::describe() const {
  std::string s = fmt::format("{}: {} examples from {} lines", path, examples, lines);
  if (tooLong) s += fmt::format(", {} longer than the sequence dropped", tooLong);
  for (const auto& [kind, count] : skipped)
    s += fmt::format(", {} skipped ({})", count, kind);
  return s;
}

std::vector<ChatExample> readChatExamples(const std::string& name, std::string_view jsonl,
                                          const ChatRenderer& renderer, const ChatReadOptions& o,
                                          ChatFileStats& stats) {
  stats = {};
  stats.path = name;
  std::vector<ChatExample> out;
  uint64_t number = 0;
  for (size_t from = 0; from < jsonl.size();) {
    const size_t end = std::min(jsonl.find('\n', from), jsonl.size());
    const std::string_view line = jsonl.substr(from, end - from);
    from = end + 1;
    ++number;
    if (blank(line)) continue;
    ++stats.lines;
    const std::string at = fmt::format("{}:{}", name, number);
    try {
      RenderedChat r = renderer.render(parseChatLine(line));
      if (r.ids.size() > uint64_t(o.seqLen) + 1) {
        ++stats.tooLong;
        if (stats.notes.size() < kNotes)
          stats.notes.push_back(fmt::format("{}: {} tokens, more than seq_len + 1 = {}: dropped", at,
                                            r.ids.size(), uint64_t(o.seqLen) + 1));
        continue;
      }
      out.push_back({std::move(r.ids), std::move(r.trained), number});
    } catch (const ChatLineError& e) {
      if (!o.skipBadLines)
        throw ChatLineError(
            e.kind(), fmt::format("{}: {} (--skip-bad-lines leaves such lines out, counted)", at, e.what()));
      ++stats.skipped[e.kind()];
      if (stats.notes.size() < kNotes) stats.notes.push_back(fmt::format("{}: {}: skipped", at, e.what()));
    }
  }
  stats.examples = out.size();
  if (out.empty())
    throw std::runtime_error(fmt::format("{}: no example to train on ({})", name, stats.describe()));
  return out;
}

} // namespace helios::train
