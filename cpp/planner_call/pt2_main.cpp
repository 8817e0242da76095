// planner_call_pt2: load an AOTInductor package (a .pt2 file written by
// `python -m marinenav.export RUN_DIR --format pt2`) and call it as the original's ROS 2 planner
// node calls its TorchScript file (planner_call, main.cpp), one robot at a time: the same command
// line, input file, rules and output lines, and first one line with the package's export record:
//   record JSON                                      the package's marinenav_export.json entry
//
//   planner_call_pt2 MODEL.pt2 AGENT_TYPE INPUT [V_MIN V_MAX ATOMS]
//
// The package takes the node's tensors as separate float64 inputs, [N, 7], [N, 5, 5], [N, 5]
// (and IQN's taus [N, 32]), any batch N, and returns its outputs as a vector in order.

#include <iostream>
#include <memory>
#include <string>

#include "package_call.h"
#include "planner_node.h"

int main(int argc, char** argv) {
  return planner_node::run(argc, argv, [](const std::string& path) {
    auto loader = std::make_shared<torch::inductor::AOTIModelPackageLoader>(path);
    const auto metadata = loader->get_metadata();
    const auto record = metadata.find("marinenav_export.json");
    std::cout << "record " << (record == metadata.end() ? "{}" : record->second) << '\n';
    return planner_node::package_forward(loader);
  });
}
