#pragma once
// A configuration's plain keys as one table: each row a key's name and the field it is read into and written
// from, a field of one of the classes Cs (GptConfig's "gpt" object and TrainConfig share one table in
// config.cpp). The JSON writer, the reader and the set of known keys of a class all come from its rows, so a
// key is spelled once. Floats are written in their shortest decimal form (0.9, not 0.8999999761581421), which
// reads back to the same bits; the reader is json_keys::readKey (counts checked, errors naming the key).
#include "engine/train/json_keys.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fmt/format.h>
#include <set>
#include <string>
#include <type_traits>
#include <variant>

namespace helios::train::config_fields {

template <class... Cs> struct Field {
  const char* key;
  std::variant<std::string Cs::*..., bool Cs::*..., uint32_t Cs::*..., uint64_t Cs::*..., float Cs::*...>
      member;
};

template <class M> struct MemberOf;
template <class C, class V> struct MemberOf<V C::*> { using Class = C; };
// Whether member pointer M is a field of C.
template <class M, class C> constexpr bool isFieldOf = std::is_same_v<typename MemberOf<M>::Class, C>;

inline double shortest(float v) {
  return std::stod(fmt::format("{}", v));
}

// Every key of C's rows into j.
template <class C, class... Cs, size_t N>
void writeFields(const Field<Cs...> (&table)[N], const C& c, nlohmann::json& j) {
  for (const Field<Cs...>& f : table)
    std::visit(
        [&](auto m) {
          if constexpr (!isFieldOf<decltype(m), C>)
            return;
          else if constexpr (std::is_same_v<std::remove_cvref_t<decltype(c.*m)>, float>)
            j[f.key] = shortest(c.*m);
          else
            j[f.key] = c.*m;
        },
        f.member);
}

// Each key of C's rows that j holds into c (the others unchanged).
template <class C, class... Cs, size_t N>
void readFields(const Field<Cs...> (&table)[N], const nlohmann::json& j, C& c) {
  for (const Field<Cs...>& f : table)
    std::visit(
        [&](auto m) {
          if constexpr (isFieldOf<decltype(m), C>) json_keys::readKey(j, f.key, c.*m);
        },
        f.member);
}

// The keys of C's rows.
template <class C, class... Cs, size_t N> std::set<std::string> fieldKeys(const Field<Cs...> (&table)[N]) {
  std::set<std::string> keys;
  for (const Field<Cs...>& f : table)
    std::visit(
        [&](auto m) {
          if constexpr (isFieldOf<decltype(m), C>) keys.insert(f.key);
        },
        f.member);
  return keys;
}

} // namespace helios::train::config_fields
