#pragma once
// Enums spelled as text (configuration keys, flags, files): one table of (value, name) per enum, looked up
// both ways. A name the table does not hold is refused with what was being read and every accepted spelling.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace helios {

template <class E> struct EnumName {
  E value;
  const char* name;
};

// The name of `value` in `table` ("?" for a value the table does not hold).
template <class E, size_t N> constexpr const char* enumName(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table)
    if (e.value == value) return e.name;
  return "?";
}

// The table's names as a sentence: "a", "a or b", "a, b or c".
template <class E, size_t N> std::string enumSpellings(const EnumName<E> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  return out;
}

// The value named `text`; otherwise throws std::invalid_argument "<what> '<text>' (<spellings>)".
template <class E, size_t N>
E parseEnum(const EnumName<E> (&table)[N], std::string_view text, std::string_view what) {
  for (const EnumName<E>& e : table)
    if (text == e.name) return e.value;
  throw std::invalid_argument(std::string(what) + " '" + std::string(text) + "' (" + enumSpellings(table) +
                              ")");
}

} // namespace helios
