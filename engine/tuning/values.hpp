#pragma once
// Text forms of the Tuning record's values, shared by the tuning file, the environment overrides and the
// printed record. Every parse function throws std::invalid_argument naming `what` (the variable or file
// field) and the bad value.
#include <string>

#include "engine/tuning/tuning.hpp"

namespace helios::tuning {

std::string text(const MatShape& s);  // "16x16x16"
std::string text(const CoopTile& t);  // "64x64x32_sg2x2_s2"
std::string text(const SharedPad& p); // "8x8"
std::string text(const GemmShape& s); // "nt:1024x768x3072" (+ "_b4", "_f16")
const char* name(CoopMode m);
const char* name(BoundedMode m);
const char* name(DeltaMode m);
const char* name(GemmKernel k);
const char* name(AttentionPassId p);

// Sides multiples of 8 from 8 to 64.
MatShape parseMatShape(const std::string& what, const std::string& value);
// Every part positive; BM, BN multiples of 8.
CoopTile parseCoopTile(const std::string& what, const std::string& value);
SharedPad parseSharedPad(const std::string& what, const std::string& value);
GemmShape parseGemmShape(const std::string& what, const std::string& value);
CoopMode parseCoopMode(const std::string& what, const std::string& value);
BoundedMode parseBoundedMode(const std::string& what, const std::string& value);
DeltaMode parseDeltaMode(const std::string& what, const std::string& value);
GemmKernel parseGemmKernel(const std::string& what, const std::string& value);
AttentionPassId parseAttentionPass(const std::string& what, const std::string& value);
// A whole decimal number of at most 9 digits.
uint32_t parseWhole(const std::string& what, const std::string& value);
// "0" or "1".
bool parseBit(const std::string& what, const std::string& value);

} // namespace helios::tuning
