#include "engine/train/stored_tokenizer.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/text/load.hpp"
#include "engine/text/simple.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

Tokenizer::Tokenizer(std::shared_ptr<const text::Tokenizer> impl) : impl_(std::move(impl)) {
  if (!impl_) throw std::invalid_argument("Tokenizer: no implementation");
}

Tokenizer Tokenizer::byteLevel() {
  return Tokenizer(std::make_shared<text::ByteTokenizer>());
}

Tokenizer Tokenizer::charLevel(std::string_view corpus) {
  return Tokenizer(std::make_shared<text::CharTokenizer>(text::CharTokenizer::fromCorpus(corpus)));
}

Tokenizer Tokenizer::make(std::string_view kind, std::string_view corpus) {
  if (kind == "byte") return byteLevel();
  if (kind == "char") return charLevel(corpus);
  throw std::invalid_argument(fmt::format("unknown tokenizer '{}' (byte or char)", kind));
}

Tokenizer Tokenizer::open(const std::string& spec) {
  return Tokenizer(text::openTokenizer(spec));
}

Tokenizer Tokenizer::fromJson(const nlohmann::json& j, const std::filesystem::path& dir) {
  const std::string kind = j.at("kind").get<std::string>();
  if (dir.empty() && kind != "byte" && kind != "char")
    throw std::invalid_argument(
        fmt::format("a {} tokenizer needs its files (a checkpoint or shard directory)", kind));
  return Tokenizer(text::loadTokenizer(j, dir));
}

void Tokenizer::saveFiles(const std::filesystem::path& dir) const {
  for (const auto& f : files())
    io::writeFileAtomically(dir / f.name, f.bytes);
}

} // namespace helios::train
