"""Per-robot n-step transitions, computed on the device with fixed shapes and no host sync.

Rainbow learns from n-step returns (``n = 3``). The original appended all robots'
steps, interleaved, to one sequential memory, so a "3-step return" mixed the rewards of
different robots (docs/training.md, "Deviations from the original trainer and
agents"). Here every robot slot ``(e, r)`` of a batch of environments
``[E, R]`` keeps its own window of its last ``n`` active steps, and the returns run along that
robot's own trajectory:

``R = sum_{k < m} gamma^k r_{t+k}``, ``next`` = the observation after step ``t + m - 1``,
``discount = gamma^m``, ``terminated`` / ``done`` of step ``t + m - 1``,

with ``m = n``, or ``m < n`` when the robot's episode ends (terminated or truncated) inside the
window. TorchRL's ``MultiStep`` transform works on time-batched trajectories of one agent; it
has no notion of robots that stop acting inside an environment, hence this small class.

How it works. The window holds, newest first, the pre-step observation, action and reward of
the slot's last ``n`` active steps (``[E, R, n, ...]``, made once). :meth:`NStepTransitions.push`
appends the step for slots whose robot acted (``("agents", "active")``) and returns ``n``
candidate transitions per slot, flat ``[E * R * n]`` in ``(env, robot, k)`` order: candidate
``k`` starts ``k`` active steps ago and ends with the step just pushed (``m = k + 1`` steps). A
candidate is ``valid`` when the robot acted in this step, its start step is in the window, and
either it is a full ``n``-step transition (``k = n - 1``) or this step ended the robot's episode
(``done``), in which case every window entry is flushed at once and the window is cleared. So
every active step of a robot starts exactly one valid transition, emitted ``n - 1`` steps later
or at the end of its episode, whichever comes first. Inactive slots (finished robots, padding)
change nothing and emit nothing. Steps of an episode cut without a ``done`` (a reset that the
window did not see) are dropped with :meth:`NStepTransitions.reset_slots`.

Output keys (``N = E * R * n``): ``self_state [N, 7]``, ``objects [N, 5, 5]``,
``objects_mask [N, 5]``, ``action [N]`` (or ``[N, 2]``), ``discount [N, 1]``, ``valid [N]``
(bool), ``("next", "self_state" | "objects" | "objects_mask")``, ``("next", "reward") [N, 1]``
(the n-step return), ``("next", "terminated") [N, 1]``, ``("next", "done") [N, 1]``: the batch
layout of :mod:`marinenav.agents.base`. The trainer stores the ``valid`` entries.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from marinenav.keys import ACTION, ACTIVE, DONE, GROUP, OBSERVATION_KEYS, REWARD, TERMINATED

WINDOW_KEYS = (*OBSERVATION_KEYS, ACTION, REWARD)


class NStepTransitions:
    """Rolling per-robot windows of the last ``n`` active steps (see the module docstring).

    Args:
        n: steps per return (``n >= 1``; ``n = 1`` gives one-step transitions).
        gamma: discount factor.
        group: the key of the robot group in the step TensorDict (``"agents"``).
        extra_returns: keys of further per-step scalars ``("next", group, key)`` ``[E, R, 1]``
            summed and discounted along the window as the reward is, and returned as
            ``("next", key)`` ``[N, 1]`` (a reward term kept apart:
            ``marinenav.training.constraint``).

    The window is allocated at the first :meth:`push`, from that step's shapes, dtypes and
    device, and reused afterwards (the shapes must not change).
    """

    def __init__(
        self, n: int, gamma: float, group: str = GROUP, extra_returns: tuple[str, ...] = ()
    ) -> None:
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        self.n = int(n)
        self.gamma = float(gamma)
        self.group = group
        self.extra_returns = tuple(extra_returns)
        self._summed = (REWARD, *self.extra_returns)  # the window's per-step scalars
        self.window: TensorDict | None = None  # [E, R, n], newest first
        self.count: torch.Tensor | None = None  # [E, R] int64: steps in the window
        self._returns: torch.Tensor | None = None  # [n, n]: R_k = sum_j M[k, j] r_j
        self._discount: torch.Tensor | None = None  # [n]: gamma ** (k + 1)
        self._k: torch.Tensor | None = None  # [n]: 0 .. n - 1

    def _allocate(self, agents: TensorDictBase, reward: torch.Tensor) -> None:
        E, R = agents.batch_size
        n, device = self.n, reward.device
        fields = {
            key: torch.zeros(
                (E, R, n, *agents.get(key).shape[2:]), dtype=agents.get(key).dtype, device=device
            )
            for key in (*OBSERVATION_KEYS, ACTION)
        }
        for key in self._summed:
            fields[key] = torch.zeros((E, R, n), dtype=reward.dtype, device=device)
        self.window = TensorDict(fields, batch_size=(E, R, n), device=device)
        self.count = torch.zeros((E, R), dtype=torch.int64, device=device)
        g = self.gamma
        matrix = [[g ** (k - j) if j <= k else 0.0 for j in range(n)] for k in range(n)]
        self._returns = torch.tensor(matrix, dtype=reward.dtype, device=device)
        powers = [g ** (k + 1) for k in range(n)]
        self._discount = torch.tensor(powers, dtype=reward.dtype, device=device)
        self._k = torch.arange(n, device=device)

    def push(self, step: TensorDictBase) -> TensorDict:
        """Append one environment step and return the candidate transitions.

        Args:
            step: TensorDict ``[E]`` as written by ``MarineNavEnv.step``:
                ``(group, "self_state" | "objects" | "objects_mask" | "action" | "active")``
                of the state the robots acted in (``[E, R, ...]``) and
                ``("next", group, "self_state" | "objects" | "objects_mask" | "reward" |
                "terminated" | "done")`` after the step (flags and reward ``[E, R, 1]``).

        Returns:
            TensorDict ``[E * R * n]`` (see the module docstring), new tensors (not views of the
            window). Entries with ``valid`` false carry meaningless values.
        """
        agents = step.get(self.group)
        nxt = step.get(("next", self.group))
        E, R = agents.batch_size[:2]
        scalars = {key: nxt.get(key).reshape(E, R) for key in self._summed}
        reward = scalars[REWARD]
        if self.window is None:
            self._allocate(agents, reward)
        window, n = self.window, self.n
        active = agents.get(ACTIVE).reshape(E, R)
        done = nxt.get(DONE).reshape(E, R)
        terminated = nxt.get(TERMINATED).reshape(E, R)

        # shift the windows of the slots that acted and put this step in front
        for key in (*WINDOW_KEYS, *self.extra_returns):
            old = window.get(key)
            new = scalars[key] if key in scalars else agents.get(key)
            shifted = torch.cat((new.unsqueeze(2).to(old.dtype), old[:, :, :-1]), dim=2)
            mask = active.view(E, R, *([1] * (old.dim() - 2)))
            old.copy_(torch.where(mask, shifted, old))
        count = torch.where(active, (self.count + 1).clamp(max=n), self.count)

        k = self._k
        valid = (
            active.unsqueeze(-1) & (k < count.unsqueeze(-1)) & ((k == n - 1) | done.unsqueeze(-1))
        )  # [E, R, n]
        returns = {key: window.get(key) @ self._returns.T for key in self._summed}  # R_k [E, R, n]
        self.count.copy_(torch.where(active & done, 0, count))

        N = E * R * n

        def repeat(x: torch.Tensor) -> torch.Tensor:  # [E, R, ...] -> [N, ...], same for all k
            return x.unsqueeze(2).expand(E, R, n, *x.shape[2:]).reshape(N, *x.shape[2:])

        def flat(x: torch.Tensor) -> torch.Tensor:  # [E, R, n, ...] -> [N, ...], a copy
            return x.reshape(N, *x.shape[3:]).clone()

        out_next = {key: repeat(nxt.get(key)) for key in OBSERVATION_KEYS}
        for key, value in returns.items():
            out_next[key] = value.reshape(N, 1)
        out_next[TERMINATED] = repeat(terminated).reshape(N, 1)
        out_next[DONE] = repeat(done).reshape(N, 1)
        out = {key: flat(window.get(key)) for key in (*OBSERVATION_KEYS, ACTION)}
        out["discount"] = self._discount.expand(E, R, n).reshape(N, 1)
        out["valid"] = valid.reshape(N)
        out["next"] = TensorDict(out_next, batch_size=[N])
        return TensorDict(out, batch_size=[N])

    def reset_slots(self, mask: torch.Tensor) -> None:
        """Empty the windows of the environments where ``mask`` ``[E]`` (bool) is true: their
        pending steps are dropped (for episodes cut without a ``done`` flag)."""
        if self.count is not None:
            self.count.copy_(torch.where(mask.reshape(-1, 1), 0, self.count))

    def reset(self) -> None:
        """Empty every window."""
        if self.count is not None:
            self.count.zero_()

    def state_dict(self) -> dict:
        """The windows' contents (for checkpoints); empty before the first push."""
        if self.window is None:
            return {}
        return {"window": self.window.clone(), "count": self.count.clone()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (allocating the windows from the saved shapes)."""
        if not state:
            return
        window = state["window"]
        agents = window.select(*OBSERVATION_KEYS, ACTION)[:, :, 0]
        self._allocate(agents, window.get(REWARD)[:, :, 0])
        self.window.update_(window)
        self.count.copy_(state["count"])
