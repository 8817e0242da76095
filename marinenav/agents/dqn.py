"""DQN: vanilla deep Q-learning with a target network.

Network: the shared trunk, two hidden layers of 128, 25 Q-values (53,321 parameters).
Target ``r + gamma (1 - terminated) max_a Q_target(s', a)`` (no double Q), SmoothL1 loss (mean),
gradient norm clipped to 0.5, Adam 1e-4 (one objective, ``"q"``, reported as ``loss_q``); the
target network is a hard copy every 10,000 steps (the trainer's). Acting: epsilon-greedy on
``argmax Q``.

Built on TorchRL's ``DQNLoss`` (``double_dqn=False``, ``loss_function="smooth_l1"``,
``delay_value=True``: the target network).

Options beyond the original (off by default, so the defaults are the original's DQN):

* ``double_q=True``: double DQN, ``r + gamma (1 - terminated) Q_target(s', argmax_a Q(s', a))``
  (van Hasselt et al. 2016; TorchRL's ``double_dqn``).
* ``n_step=n > 1``: the trainer's per-robot n-step replay (as Rainbow's); a transition of
  ``m <= n`` steps carries ``"discount" = gamma ** m``, and the target is
  ``R + discount (1 - terminated) max_a Q_target(s', a)``. The discount reaches TorchRL's TD(0)
  estimator as its ``steps_to_next_obs`` (``m = log(discount) / log(gamma)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torchrl.modules import QValueModule
from torchrl.objectives import DQNLoss, ValueEstimators

from marinenav.agents.base import (
    OBSERVATION_KEYS,
    Agent,
    NStepConfig,
    Objective,
    ParameterGroup,
    PlannerCall,
    with_steps_to_next_obs,
)
from marinenav.policy.networks import QNetwork
from marinenav.policy.selectors import GreedyQSelector
from marinenav.policy.wrapper import PolicyWrapper


@dataclass
class DQNConfig(NStepConfig):
    """DQN's options on top of the shared hyperparameters and ``n_step``; the defaults are
    the original's."""

    double_q: bool = False  # double DQN target (the original: vanilla max over Q_target)


class DQNAgent(Agent):
    """DQN agent (discrete actions): one objective, ``"q"`` (``loss_q``)."""

    name = "dqn"
    action_kind = "discrete"
    config_class = DQNConfig
    model_type = "DQN"
    export_outputs = ("q_values",)

    def __init__(self, config: DQNConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.network = QNetwork(seed=cfg.seed, normalize=cfg.normalize_observations)
        value = TensorDictSequential(
            TensorDictModule(
                self.network, in_keys=list(OBSERVATION_KEYS), out_keys=["action_value"]
            ),  # fmt: skip
            QValueModule(action_space="categorical", action_value_key="action_value"),
        )
        self.loss_module = DQNLoss(
            value, loss_function="smooth_l1", delay_value=True, double_dqn=cfg.double_q,
            action_space="categorical",
        )  # fmt: skip
        self.loss_module.make_value_estimator(ValueEstimators.TD0, gamma=cfg.gamma)
        self.policy = PolicyWrapper(GreedyQSelector(self.network), seed=cfg.seed)

    def objectives(self) -> tuple[Objective, ...]:
        """One step of the network on ``loss_q``."""
        network = ParameterGroup("q", self.network.parameters())
        return (Objective("q", self.q_loss, "loss_q", network),)

    def q_loss(self, batch: TensorDictBase) -> TensorDict:
        """``loss_q``: SmoothL1 TD(0) loss, an n-step transition discounted by its own
        ``gamma ** m``."""
        batch = with_steps_to_next_obs(batch, self.config.gamma)
        return TensorDict({"loss_q": self.loss_module(batch)["loss"]})

    def export_network(self) -> PlannerCall:
        """The Q-network: Q-values ``(N, 25)``; the planner takes their argmax."""
        return PlannerCall(self.network)
