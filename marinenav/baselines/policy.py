"""``BaselinePolicy``: a classical planner as a TorchRL policy over ``MarineNavEnv`` observations.

Subclasses implement :meth:`BaselinePolicy.scores` (``B + [C]``, higher is better) from the
observation; the policy writes the best candidate's discrete action index (int64 ``B``), the
same indexing as the discrete agents (``a = 5 i + j``: left change ``i``, right change ``j``),
so a baseline runs wherever a discrete agent's policy does (the evaluator, episode pictures, a
TorchRL collector). Everything is tensor code over any batch shape: no loop over robots,
objects or candidates, no read-back to the host.
"""

from __future__ import annotations

from typing import Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey

from marinenav.baselines.prediction import (
    ACTION_DURATION,
    OWN_RADIUS,
    PLANNING_PERIOD,
    CandidatePrediction,
    RosObservation,
    candidate_changes,
    check_observation,
    default_hydro,
    predict_candidates,
    ros_frame,
)
from marinenav.keys import ACTION_KEY, POLICY_IN_KEYS


class BaselinePolicy(TensorDictModuleBase):
    """A planner choosing among the 25 discrete thrust changes.

    Args:
        own_radius: the own ship's radius (m; the simulator's WAM-V: 2.795).
        planning_period: the one-step prediction's step (s; the node's 0.25, our simulator acts
            every 0.5, the default).
        in_keys: keys of ``(self_state B + [7], objects B + [K, 5], objects_mask B + [K])``.
        out_key: where the int64 action ``B`` is written.

    Attributes:
        clamp_thrust: whether a candidate is scored with its thrusts clamped to the motor
            limits (the textbook variants) or, as the node does, with the unclamped sum of the
            current thrust and the change; a subclass sets it from its variant.
    """

    action_kind: Literal["discrete"] = "discrete"
    name = "baseline"
    clamp_thrust: bool = True

    def __init__(
        self,
        own_radius: float = OWN_RADIUS,
        planning_period: float = PLANNING_PERIOD,
        in_keys: tuple[NestedKey, ...] = POLICY_IN_KEYS,
        out_key: NestedKey = ACTION_KEY,
    ) -> None:
        super().__init__()
        if not own_radius >= 0:
            raise ValueError(f"own_radius must be a non-negative number, got {own_radius}")
        if not planning_period > 0:
            raise ValueError(f"planning_period must be positive, got {planning_period}")
        self.own_radius = float(own_radius)
        self.planning_period = float(planning_period)
        self.in_keys = list(in_keys)
        self.out_keys = [out_key]
        self.register_buffer("changes", candidate_changes(), persistent=False)  # [C, 2] N/s
        self.register_buffer("hydro", default_hydro(), persistent=False)  # [21]

    def scores(self, obs: RosObservation, pred: CandidatePrediction) -> torch.Tensor:
        """``B + [C]`` the candidates' scores, higher is better."""
        raise NotImplementedError

    @torch.no_grad()
    def candidate_scores(
        self, self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
    ) -> torch.Tensor:
        """Scores ``B + [C]`` of the 25 candidates (index = discrete action) for
        ``self_state B + [7]``, ``objects B + [K, 5]``, ``objects_mask B + [K]`` (bool or 0/1;
        RL robot frame, as ``MarineNavEnv`` observes), in the observation's dtype and device.

        Raises:
            ValueError: shapes that do not fit together, or a non-float observation.
        """
        check_observation(self_state, objects, objects_mask)
        dtype, device = self_state.dtype, self_state.device
        changes = self.changes.to(device=device, dtype=dtype)
        hydro = self.hydro.to(device=device, dtype=dtype)
        pred = predict_candidates(
            self_state, changes, hydro, self.planning_period, ACTION_DURATION, self.clamp_thrust
        )
        return self.scores(ros_frame(self_state, objects, objects_mask), pred)

    def act(
        self, self_state: torch.Tensor, objects: torch.Tensor, objects_mask: torch.Tensor
    ) -> torch.Tensor:
        """Actions ``int64 B``: the best candidate of :meth:`candidate_scores` (the first of
        equal bests)."""
        return self.candidate_scores(self_state, objects, objects_mask).argmax(dim=-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self.act(*(tensordict.get(key) for key in self.in_keys))
        tensordict.set(self.out_keys[0], action)
        return tensordict

    def extra_repr(self) -> str:
        return f"own_radius={self.own_radius}, planning_period={self.planning_period}"
