#pragma once
// Reading a Hugging Face JSON file (tokenizer.json, tokenizer_config.json, generation_config.json) with
// errors that name the file and the field: "tokenizer.json: model.merges[12]: not two tokens".
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace helios::text::hf {

// Where a value sits: the file and the path to it.
class Field {
public:
  Field(std::string file, std::string path = {}) : file_(std::move(file)), path_(std::move(path)) {}
  Field operator[](std::string_view key) const;
  Field operator[](size_t index) const;
  const std::string& file() const { return file_; }
  // Throws std::invalid_argument "FILE: PATH: what".
  [[noreturn]] void fail(std::string_view what) const;

private:
  std::string file_, path_;
};

// Parses `bytes` as JSON; throws naming the file, the byte offset and the parser's message.
nlohmann::json parseJson(std::string_view bytes, const std::string& file);

// The member `key` of `object` (which must be an object), or null where it is absent.
const nlohmann::json& member(const nlohmann::json& object, const char* key, const Field& at);
const nlohmann::json& required(const nlohmann::json& object, const char* key, const Field& at);

std::string asString(const nlohmann::json& v, const Field& at);
bool asBool(const nlohmann::json& v, const Field& at);
int64_t asInt(const nlohmann::json& v, const Field& at);
// A token id: an integer in [0, kMaxTokenId) (vocabularies are indexed by id: 2^24 bounds the tables).
inline constexpr int64_t kMaxTokenId = int64_t{1} << 24;
int32_t asId(const nlohmann::json& v, const Field& at);

// Calls `each(element, field)` for every element of the list `object[key]` (required).
void forEachIn(const nlohmann::json& object, const char* key, const Field& at,
               const std::function<void(const nlohmann::json&, const Field&)>& each);

// An optional member: absent or null gives nullopt (or the fallback); another type is an error.
std::optional<std::string> optString(const nlohmann::json& object, const char* key, const Field& at);
bool optBool(const nlohmann::json& object, const char* key, bool fallback, const Field& at);

} // namespace helios::text::hf
