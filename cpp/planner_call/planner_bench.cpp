// planner_bench: time per decision of a planner called from C++ as the original's node calls it
// (planner_node.h: the node's inputs, IQN's taus and SAC's noise drawn per call as the node draws
// them, the node's action rule), on one thread, for benchmarks/planner_formats.py.
//
//   planner_bench AGENT_TYPE BATCH CALLS ROUNDS FORMAT=MODEL...
//
// FORMAT is torchscript (torch::jit::load, as the node loads its file), torchscript-frozen
// (then torch::jit::freeze and optimize_for_inference, as marinenav.planner loads it) or pt2
// (torch::inductor::AOTIModelPackageLoader). Every model is loaded and called once (timed), then
// called 20 times untimed, then CALLS times, timed one by one, in ROUNDS rounds that take turns
// between the models (so that each sees the same load of a shared machine). Every decision is on
// the same BATCH robots (0 to 5 objects present, cycling; random values from a fixed seed).
//
// Output, one line per model and kind:
//   load FORMAT SECONDS            loading the file (and freezing it)
//   first FORMAT SECONDS           the first decision
//   decision FORMAT US US ...      each timed decision, microseconds
// and "error: ..." on stderr with exit code 1.

#include <ATen/Parallel.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "package_call.h"
#include "planner_node.h"
#include "torchscript_call.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

planner_node::Forward load(const std::string& format, const std::string& path) {
  if (format == "pt2") {
    return planner_node::package_forward(
        std::make_shared<torch::inductor::AOTIModelPackageLoader>(path));
  }
  if (format != "torchscript" && format != "torchscript-frozen") {
    throw std::runtime_error("unknown format " + format + " (torchscript, torchscript-frozen, pt2)");
  }
  auto model = std::make_shared<torch::jit::script::Module>(torch::jit::load(path));
  if (format == "torchscript-frozen") {
    model->eval();
    torch::jit::Module frozen = torch::jit::freeze(*model);
    *model = torch::jit::optimize_for_inference(frozen);
  }
  return planner_node::torchscript_forward(model);
}

// BATCH robots of random inputs (fixed seed): i % 6 objects present in row i, the rest zero.
planner_node::Inputs batch_inputs(int64_t batch) {
  at::manual_seed(0);
  planner_node::Inputs in;
  in.self_state = at::randn({batch, planner_node::kSelfDim}, at::kDouble) * 5;
  at::Tensor present = at::arange(batch, at::kLong).remainder(6).unsqueeze(1);
  in.object_masks = at::arange(planner_node::kMaxObjects, at::kLong).unsqueeze(0).lt(present)
                        .to(at::kDouble);
  in.object_states =
      at::randn({batch, planner_node::kMaxObjects, planner_node::kObjectDim}, at::kDouble) * 5 *
      in.object_masks.unsqueeze(2);
  return in;
}

// One decision as the node takes it: IQN's taus drawn, the call, the rule (SAC's noise drawn).
at::Tensor decide(const planner_node::Forward& forward, const std::string& agent_type,
                  planner_node::Inputs in, const at::Tensor& support) {
  if (agent_type == "IQN") in.taus = at::rand({in.self_state.size(0), planner_node::kNodeTaus},
                                              at::kDouble);
  return planner_node::node_action(agent_type, forward(in), support, at::Tensor());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::cerr << "usage: " << argv[0] << " AGENT_TYPE BATCH CALLS ROUNDS FORMAT=MODEL...\n";
    return 2;
  }
  try {
    at::set_num_threads(1);
    const std::string agent_type = argv[1];
    planner_node::check_agent_type(agent_type);
    const int64_t batch = std::stoll(argv[2]);
    const int calls = std::stoi(argv[3]);
    const int rounds = std::stoi(argv[4]);
    const at::Tensor support = at::linspace(-1.0, 1.0, 51, at::TensorOptions(at::kDouble));
    const planner_node::Inputs inputs = batch_inputs(batch);

    std::vector<std::string> formats;
    std::vector<planner_node::Forward> models;
    for (int i = 5; i < argc; ++i) {
      const std::string spec = argv[i];
      const auto equals = spec.find('=');
      if (equals == std::string::npos) throw std::runtime_error("expected FORMAT=MODEL: " + spec);
      formats.push_back(spec.substr(0, equals));
      auto start = Clock::now();
      models.push_back(load(formats.back(), spec.substr(equals + 1)));
      std::cout << "load " << formats.back() << ' ' << seconds_since(start) << '\n';
      start = Clock::now();
      decide(models.back(), agent_type, inputs, support);
      std::cout << "first " << formats.back() << ' ' << seconds_since(start) << '\n';
      for (int k = 0; k < 20; ++k) decide(models.back(), agent_type, inputs, support);
    }
    std::vector<std::vector<double>> micros(models.size());
    for (int round = 0; round < rounds; ++round) {
      for (size_t m = 0; m < models.size(); ++m) {
        for (int k = round * calls / rounds; k < (round + 1) * calls / rounds; ++k) {
          const auto start = Clock::now();
          decide(models[m], agent_type, inputs, support);
          micros[m].push_back(seconds_since(start) * 1e6);
        }
      }
    }
    for (size_t m = 0; m < models.size(); ++m) {
      std::cout << "decision " << formats[m];
      for (double us : micros[m]) std::cout << ' ' << us;
      std::cout << '\n';
    }
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
