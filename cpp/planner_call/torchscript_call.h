// The original node's model call on a TorchScript module: one tuple argument (self_state,
// object_states, object_masks), then IQN's taus; the outputs in order (a tuple's elements, or the
// one tensor).
#pragma once

#include <torch/script.h>

#include <memory>
#include <tuple>
#include <vector>

#include "planner_node.h"

namespace planner_node {

inline std::vector<at::Tensor> as_tensors(const torch::jit::IValue& value) {
  if (!value.isTuple()) return {value.toTensor()};
  std::vector<at::Tensor> tensors;
  for (const auto& element : value.toTuple()->elements()) tensors.push_back(element.toTensor());
  return tensors;
}

inline Forward torchscript_forward(std::shared_ptr<torch::jit::script::Module> model) {
  return [model](const Inputs& in) {
    // Forward to RL agent, as the node does
    std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> tensorTuple(
        in.self_state, in.object_states, in.object_masks);
    if (in.taus.defined()) return as_tensors(model->forward({tensorTuple, in.taus}));
    return as_tensors(model->forward({tensorTuple}));
  };
}

}  // namespace planner_node
