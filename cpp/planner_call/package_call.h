// The node's model call on an AOTInductor package (.pt2): the tuple's three tensors, then IQN's
// taus, as separate float64 inputs; the outputs as a vector in the package's order.
#pragma once

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <memory>
#include <vector>

#include "planner_node.h"

namespace planner_node {

inline Forward package_forward(std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader) {
  return [loader](const Inputs& in) {
    std::vector<at::Tensor> inputs = {in.self_state, in.object_states, in.object_masks};
    if (in.taus.defined()) inputs.push_back(in.taus);
    return loader->run(inputs);
  };
}

}  // namespace planner_node
