#pragma once
// Helios' public API: devices, tensors, ops (matmul, attention), the graph executor and the trainer.
// Link Helios::helios (find_package(Helios)); the engine behind it stays private to libhelios.so.
#include "helios/device.hpp"
#include "helios/graph.hpp"
#include "helios/ops.hpp"
#include "helios/tensor.hpp"
#include "helios/train.hpp"
