// paraplan/host/plan/activation_offload.h: the copies that offload a layer's activations.
//
// With training.cpu_offloading_num_layers = N (Megatron-LM's --cpu-offloading-num-layers),
// Transformer Engine copies the saved activations of each chunk's first N layers to host memory
// on a stream of its own as the forward pass goes on, and back ahead of their backward pass; its
// schedule frees each copied layer in time for the activations held at the forward's end to be
// the other layers' alone (transformer_engine/pytorch/cpu_offload.py, DefaultOffloadSynchronizer).
// Here: one HOST_TRANSFER op each way per offloaded layer, overlapped with compute, of the bytes
// the layer's activation items hold once every strategy has sharded them, which is why the host
// adds them after the last strategy. PlanView::op_share counts them on the first N layers and
// memory_share the activation items on the others.
#pragma once

#include <string>

#include "host/plan/plan.h"

namespace paraplan::host {

// Adds the offload and reload ops of every kind of layer; PlanError naming `file` and the key
// when the plan pipelines (Megatron-LM offloads without pipeline parallelism only) or a chunk
// would offload every layer it holds. Nothing when the training offloads none.
void add_activation_offload(Plan& plan, const std::string& file);

}  // namespace paraplan::host
