#pragma once
// The record's first layer: defaults derived from the device's facts. On the H100 they are the choices the
// hand-tuned policy made before the record existed (bench/results/ names the measurements behind each).
#include "engine/tuning/tuning.hpp"

namespace helios::tuning {

// Workgroups of one grid that fill a GPU of `computeUnits` units (one "wave"): 120 for the H100's 132 SMs.
// The policy's thresholds were measured as multiples of that wave, so they scale with the unit count.
uint64_t defaultFillWorkgroups(uint32_t computeUnits);

// Every field at its default (source Default), keyed to `facts`' device.
Tuning defaultTuning(const DeviceFacts& facts);

} // namespace helios::tuning
