#pragma once
// tokenizer.json's "post_processor", read only for what it adds around a single sequence's ids
// (TemplateProcessing's special tokens before and after $A, RobertaProcessing's and BertProcessing's cls and
// sep; ByteLevel adds nothing; Sequence of these). Helios' encode() does not apply it. Any other type is
// refused by name.
#include "engine/text/hf/json_field.hpp"
#include "engine/text/tokenizer.hpp"

namespace helios::text::hf {

SequenceSpecials postProcessorSpecials(const nlohmann::json& j, const Field& at);

} // namespace helios::text::hf
