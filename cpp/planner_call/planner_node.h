// What the original's ROS 2 planner node (RL_agent::computeAction in the original's
// vrx-2.3.2/action_planner/src/action_planner_node.cpp) does around its model call, shared by the
// programs of this folder: reading robots' inputs, the node's inputs as tensors, its action rule
// per agent type, and printing. Each program supplies the model call itself (TorchScript in
// main.cpp, an AOTInductor package in pt2_main.cpp).
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace planner_node {

constexpr int kMaxObjects = 5;  // the node's max_obj_num
constexpr int kSelfDim = 7;
constexpr int kObjectDim = 5;
constexpr int kNodeTaus = 32;  // the node's torch::rand({1, 32})
// the node's continuous-action scaling and its discrete thrust-change table (N/s)
constexpr float kActionMean = 0.0f;
constexpr float kActionAmplitude = 1000.0f;
const std::vector<float> kThrustChange = {0.0f, -500.0f, -1000.0f, 500.0f, 1000.0f};

struct Robot {
  std::vector<double> self_state, objects, masks, taus, noise;
};

// The node's inputs for a batch of robots, float64 [N, ...]; taus is undefined for agent types
// without quantile fractions.
struct Inputs {
  at::Tensor self_state;     // [N, 7]
  at::Tensor object_states;  // [N, 5, 5], objects nearest first, zero padded
  at::Tensor object_masks;   // [N, 5], 0/1
  at::Tensor taus;           // [N, 32] (IQN) or undefined
};

// A model call: the node's inputs -> the module's outputs, in order.
using Forward = std::function<std::vector<at::Tensor>(const Inputs&)>;

inline void check_agent_type(const std::string& agent_type) {
  for (const char* known : {"AC-IQN", "IQN", "DDPG", "DQN", "SAC", "Rainbow"}) {
    if (agent_type == known) return;
  }
  throw std::runtime_error("agent type " + agent_type +
                           " is not one of the node's: AC-IQN, IQN, DDPG, DQN, SAC, Rainbow");
}

// How many outputs the node's call of each agent type reads: SAC's (mu, log_std), one otherwise.
inline size_t node_outputs(const std::string& agent_type) { return agent_type == "SAC" ? 2 : 1; }

inline std::vector<double> read_values(std::istream& in, int count, const std::string& what,
                                       int robot) {
  std::vector<double> values(count);
  for (int i = 0; i < count; ++i) {
    if (!(in >> values[i])) {
      std::ostringstream message;
      message << "input ends in robot " << robot << "'s " << what;
      throw std::runtime_error(message.str());
    }
  }
  return values;
}

inline std::vector<Robot> read_input(const std::string& path, int& num_taus, int& num_noise) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  int n = 0;
  if (!(in >> n >> num_taus >> num_noise) || n < 0 || num_taus < 0 || num_noise < 0) {
    throw std::runtime_error(path + " does not start with the counts N K M");
  }
  std::vector<Robot> robots(n);
  for (int r = 0; r < n; ++r) {
    robots[r].self_state = read_values(in, kSelfDim, "self_state", r);
    robots[r].objects = read_values(in, kMaxObjects * kObjectDim, "object_states", r);
    robots[r].masks = read_values(in, kMaxObjects, "object_masks", r);
    robots[r].taus = read_values(in, num_taus, "taus", r);
    robots[r].noise = read_values(in, num_noise, "noise", r);
  }
  double extra = 0.0;
  if (in >> extra) throw std::runtime_error(path + " has values after the last robot");
  return robots;
}

// a [1, ...] float64 tensor holding a copy of values
inline at::Tensor batch_of_one(const std::vector<double>& values, std::vector<int64_t> shape) {
  shape.insert(shape.begin(), 1);
  return at::tensor(values, at::kDouble).reshape(shape);
}

// One robot's inputs as the node builds them; IQN's taus given, or drawn as the node draws them.
inline Inputs node_inputs(const Robot& robot, const std::string& agent_type) {
  Inputs inputs;
  inputs.self_state = batch_of_one(robot.self_state, {kSelfDim});
  inputs.object_states = batch_of_one(robot.objects, {kMaxObjects, kObjectDim});
  inputs.object_masks = batch_of_one(robot.masks, {kMaxObjects});
  if (agent_type == "IQN") {
    inputs.taus = robot.taus.empty()
                      ? at::rand({1, kNodeTaus}, at::kDouble)
                      : batch_of_one(robot.taus, {static_cast<int64_t>(robot.taus.size())});
  }
  return inputs;
}

// The node's action rule on a batch's outputs: int64 indices [N] for the discrete agents (IQN:
// argmax of the mean quantile, DQN: argmax of the action values, Rainbow: argmax of sum_z z p on
// support), or float64 actions [N, 2] for the continuous ones (AC-IQN, DDPG: the output; SAC:
// (2/pi) atan(mu + exp(log_std) noise), noise given [N, 2] or drawn as the node draws it).
inline at::Tensor node_action(const std::string& agent_type,
                              const std::vector<at::Tensor>& outputs, const at::Tensor& support,
                              const at::Tensor& given_noise) {
  if (outputs.size() != node_outputs(agent_type)) {
    std::ostringstream message;
    message << "the node's " << agent_type << " call reads " << node_outputs(agent_type)
            << " output(s), the model returned " << outputs.size();
    throw std::runtime_error(message.str());
  }
  if (agent_type == "AC-IQN" || agent_type == "DDPG") return outputs[0];
  if (agent_type == "IQN") return at::argmax(outputs[0].mean(1), 1);
  if (agent_type == "DQN") return at::argmax(outputs[0], 1);
  if (agent_type == "Rainbow") return (outputs[0] * support).sum(2).argmax(1);
  // SAC
  const at::Tensor& mu = outputs[0];
  at::Tensor sigma = at::exp(outputs[1]);
  at::Tensor noise = given_noise.defined() ? given_noise : at::randn_like(mu);
  at::Tensor z = mu + sigma * noise;
  return (2.0 / M_PI) * at::atan(z);
}

inline void print_values(std::ostream& out, const at::Tensor& tensor) {
  at::Tensor flat = tensor.detach().to(at::kCPU, at::kDouble).contiguous().reshape({-1});
  const double* data = flat.data_ptr<double>();
  for (int64_t i = 0; i < flat.numel(); ++i) out << ' ' << data[i];
}

inline void print_output(std::ostream& out, int robot, int index, const at::Tensor& tensor) {
  out << "output " << robot << ' ' << index << ' ' << c10::toString(tensor.scalar_type()) << ' '
      << tensor.dim();
  for (int64_t size : tensor.sizes()) out << ' ' << size;
  print_values(out, tensor);
  out << '\n';
}

// The node's continuous action: item<float>() * action_amplitude + action_mean (float).
inline void print_continuous(std::ostream& out, int robot, const at::Tensor& action) {
  out << "action " << robot;
  print_values(out, action[0]);
  out << "\nrate " << robot << ' '
      << action[0][0].item<float>() * kActionAmplitude + kActionMean << ' '
      << action[0][1].item<float>() * kActionAmplitude + kActionMean << '\n';
}

// The node's discrete action: actions[index] = {left_thrust_change[index / 5],
// right_thrust_change[index % 5]} (its table built left-major).
inline void print_discrete(std::ostream& out, int robot, int index) {
  const int n = static_cast<int>(kThrustChange.size());
  if (index < 0 || index >= n * n) {
    std::ostringstream message;
    message << "action index " << index << " of robot " << robot << " is outside the table";
    throw std::runtime_error(message.str());
  }
  out << "action " << robot << ' ' << index << "\nrate " << robot << ' '
      << kThrustChange[index / n] << ' ' << kThrustChange[index % n] << '\n';
}

// One robot through the model and the node's rule, printed.
inline void call_planner(const Forward& forward, const std::string& agent_type,
                         const at::Tensor& support, const Robot& robot, int r, std::ostream& out) {
  std::vector<at::Tensor> outputs = forward(node_inputs(robot, agent_type));
  for (size_t k = 0; k < outputs.size(); ++k) print_output(out, r, static_cast<int>(k), outputs[k]);
  at::Tensor noise;
  if (!robot.noise.empty()) {
    noise = batch_of_one(robot.noise, {static_cast<int64_t>(robot.noise.size())});
  }
  at::Tensor action = node_action(agent_type, outputs, support, noise);
  if (action.scalar_type() == at::kLong) {
    print_discrete(out, r, action[0].item<int>());
  } else {
    print_continuous(out, r, action);
  }
}

// The command line shared by the callers: MODEL AGENT_TYPE INPUT [V_MIN V_MAX ATOMS]. load(MODEL)
// returns the model's call (and may print lines about the model, before any robot's).
inline int run(int argc, char** argv, const std::function<Forward(const std::string&)>& load) {
  if (argc != 4 && argc != 7) {
    std::cerr << "usage: " << argv[0] << " MODEL AGENT_TYPE INPUT [V_MIN V_MAX ATOMS]\n";
    return 2;
  }
  try {
    const std::string model_path = argv[1];
    const std::string agent_type = argv[2];
    check_agent_type(agent_type);
    // the node's Rainbow support
    double v_min = -1.0, v_max = 1.0;
    int64_t atoms = 51;
    if (argc == 7) {
      v_min = std::stod(argv[4]);
      v_max = std::stod(argv[5]);
      atoms = std::stoll(argv[6]);
    }
    at::Tensor support = at::linspace(v_min, v_max, atoms, at::TensorOptions(at::kDouble));
    int num_taus = 0, num_noise = 0;
    std::vector<Robot> robots = read_input(argv[3], num_taus, num_noise);

    std::cout << std::setprecision(std::numeric_limits<double>::max_digits10);
    Forward forward = load(model_path);
    for (int r = 0; r < static_cast<int>(robots.size()); ++r) {
      call_planner(forward, agent_type, support, robots[r], r, std::cout);
    }
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace planner_node
