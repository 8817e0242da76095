// planner_call: load a TorchScript planner file and call it as the original's ROS 2 planner node
// does (RL_agent::computeAction in the original's vrx-2.3.2/action_planner/src/
// action_planner_node.cpp), one robot at a time, printing the raw outputs and the action.
//
//   planner_call MODEL AGENT_TYPE INPUT [V_MIN V_MAX ATOMS]
//
// AGENT_TYPE is one of the node's six: AC-IQN, IQN, DDPG, DQN, SAC, Rainbow. V_MIN V_MAX ATOMS
// are Rainbow's support, linspace(V_MIN, V_MAX, ATOMS) (the node hard-wires -1 1 51, the default).
//
// INPUT is a text file of whitespace-separated numbers: three counts N K M, then for each of the
// N robots 7 + 25 + 5 + K + M float64 values: self_state [7], object_states [5, 5] (row-major),
// object_masks [5] (0/1), K quantile fractions (IQN's taus; with K = 0 they are drawn as the node
// draws them, torch::rand({1, 32})) and M standard-normal draws (SAC's noise; with M = 0 they are
// drawn as the node draws them, torch::randn_like(mu)).
//
// Output, one line each, values with 17 significant digits (float64 round trip):
//   output ROBOT INDEX DTYPE NDIM DIMS... VALUES...   every output of the module's call
//   action ROBOT VALUES...                           the action: an index, or two values in (-1, 1)
//   rate ROBOT LEFT RIGHT                            the thrust change rates (N/s) the node applies
// and "error: ..." on stderr with exit code 1 for bad arguments, input or module calls.
// planner_node.h holds what the node does around the call, torchscript_call.h the call;
// pt2_main.cpp is the same program for an AOTInductor package.

#include <memory>
#include <string>

#include "planner_node.h"
#include "torchscript_call.h"

int main(int argc, char** argv) {
  return planner_node::run(argc, argv, [](const std::string& path) {
    return planner_node::torchscript_forward(
        std::make_shared<torch::jit::script::Module>(torch::jit::load(path)));
  });
}
