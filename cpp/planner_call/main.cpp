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

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

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

std::vector<double> read_values(std::istream& in, int count, const std::string& what, int robot) {
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

std::vector<Robot> read_input(const std::string& path, int& num_taus, int& num_noise) {
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
torch::Tensor batch_of_one(const std::vector<double>& values, std::vector<int64_t> shape) {
  shape.insert(shape.begin(), 1);
  return torch::tensor(values, torch::kFloat64).reshape(shape);
}

void print_values(std::ostream& out, const torch::Tensor& tensor) {
  torch::Tensor flat = tensor.detach().to(torch::kCPU, torch::kFloat64).contiguous().reshape({-1});
  const double* data = flat.data_ptr<double>();
  for (int64_t i = 0; i < flat.numel(); ++i) out << ' ' << data[i];
}

void print_output(std::ostream& out, int robot, int index, const torch::Tensor& tensor) {
  out << "output " << robot << ' ' << index << ' ' << c10::toString(tensor.scalar_type()) << ' '
      << tensor.dim();
  for (int64_t size : tensor.sizes()) out << ' ' << size;
  print_values(out, tensor);
  out << '\n';
}

// The node's continuous action: item<float>() * action_amplitude + action_mean (float).
void print_continuous(std::ostream& out, int robot, const torch::Tensor& action) {
  out << "action " << robot;
  print_values(out, action[0]);
  out << "\nrate " << robot << ' ' << action[0][0].cpu().item<float>() * kActionAmplitude + kActionMean
      << ' ' << action[0][1].cpu().item<float>() * kActionAmplitude + kActionMean << '\n';
}

// The node's discrete action: actions[index] = {left_thrust_change[index / 5],
// right_thrust_change[index % 5]} (its table built left-major).
void print_discrete(std::ostream& out, int robot, int index) {
  const int n = static_cast<int>(kThrustChange.size());
  if (index < 0 || index >= n * n) {
    std::ostringstream message;
    message << "action index " << index << " of robot " << robot << " is outside the table";
    throw std::runtime_error(message.str());
  }
  out << "action " << robot << ' ' << index << "\nrate " << robot << ' ' << kThrustChange[index / n]
      << ' ' << kThrustChange[index % n] << '\n';
}

void call_planner(torch::jit::script::Module& model, const std::string& agent_type,
                  const torch::Tensor& support, const Robot& robot, int r, std::ostream& out) {
  torch::Tensor self_state = batch_of_one(robot.self_state, {kSelfDim});
  torch::Tensor object_states = batch_of_one(robot.objects, {kMaxObjects, kObjectDim});
  torch::Tensor object_state_masks = batch_of_one(robot.masks, {kMaxObjects});

  // Forward to RL agent, as the node does
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> tensorTuple(self_state, object_states,
                                                                      object_state_masks);
  if (agent_type == "AC-IQN" || agent_type == "DDPG") {
    torch::Tensor action_tensor = model.forward({tensorTuple}).toTensor();
    print_output(out, r, 0, action_tensor);
    print_continuous(out, r, action_tensor);
  } else if (agent_type == "IQN") {
    torch::Tensor taus = robot.taus.empty()
                             ? torch::rand({1, kNodeTaus}, torch::kFloat64)
                             : batch_of_one(robot.taus, {static_cast<int64_t>(robot.taus.size())});
    torch::Tensor quantiles = model.forward({tensorTuple, taus}).toTensor();
    print_output(out, r, 0, quantiles);
    print_discrete(out, r, torch::argmax(quantiles.mean(1), 1).item<int>());
  } else if (agent_type == "DQN") {
    torch::Tensor action_values_tensor = model.forward({tensorTuple}).toTensor();
    print_output(out, r, 0, action_values_tensor);
    print_discrete(out, r, torch::argmax(action_values_tensor[0]).item<int>());
  } else if (agent_type == "SAC") {
    auto action_tensors = model.forward({tensorTuple}).toTuple();
    torch::Tensor mu = action_tensors->elements()[0].toTensor();
    torch::Tensor log_std = action_tensors->elements()[1].toTensor();
    print_output(out, r, 0, mu);
    print_output(out, r, 1, log_std);
    torch::Tensor sigma = torch::exp(log_std);
    torch::Tensor noise = robot.noise.empty()
                              ? torch::randn_like(mu)
                              : batch_of_one(robot.noise, {static_cast<int64_t>(robot.noise.size())});
    torch::Tensor z = mu + sigma * noise;
    torch::Tensor actions = (2.0 / M_PI) * torch::atan(z);
    print_continuous(out, r, actions);
  } else if (agent_type == "Rainbow") {
    torch::Tensor action_value_probs_tensor = model.forward({tensorTuple}).toTensor();
    print_output(out, r, 0, action_value_probs_tensor);
    print_discrete(out, r, (action_value_probs_tensor * support).sum(2).argmax(1).item<int>());
  } else {
    throw std::runtime_error("agent type " + agent_type +
                             " is not one of the node's: AC-IQN, IQN, DDPG, DQN, SAC, Rainbow");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 7) {
    std::cerr << "usage: " << argv[0] << " MODEL AGENT_TYPE INPUT [V_MIN V_MAX ATOMS]\n";
    return 2;
  }
  try {
    const std::string model_path = argv[1];
    const std::string agent_type = argv[2];
    // the node's Rainbow support
    double v_min = -1.0, v_max = 1.0;
    int64_t atoms = 51;
    if (argc == 7) {
      v_min = std::stod(argv[4]);
      v_max = std::stod(argv[5]);
      atoms = std::stoll(argv[6]);
    }
    torch::Tensor support = torch::linspace(v_min, v_max, atoms, torch::dtype(torch::kFloat64));
    int num_taus = 0, num_noise = 0;
    std::vector<Robot> robots = read_input(argv[3], num_taus, num_noise);

    torch::jit::script::Module model = torch::jit::load(model_path);
    std::cout << std::setprecision(std::numeric_limits<double>::max_digits10);
    for (int r = 0; r < static_cast<int>(robots.size()); ++r) {
      call_planner(model, agent_type, support, robots[r], r, std::cout);
    }
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
