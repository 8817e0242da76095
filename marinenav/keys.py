"""The tensordict vocabulary every layer shares: the robot group and the names of its fields,
the policy's input and output keys, the config's dtype and device names, and the range of seeds.

A MarineNavEnv step's tensordict holds the per-robot entries under one group,
``td[GROUP]`` with batch shape ``[E, R]`` (environments, robot slots), as TorchRL's
multi-agent environments do (docs/environment.md has the table of every entry). A field is named
once here and reached two ways:

* by its bare name inside the group or in a flat batch of robot transitions (the replay's
  ``[B]`` rows, whose step result is under ``"next"``): ``td[GROUP][ACTION]``,
  ``batch["next", REWARD]``;
* by its nested key in an environment step: ``td[ACTION_KEY]``, ``ACTION_KEY == (GROUP,
  ACTION)``. Every ``*_KEY`` below is a field of the group as a nested key.

The network inputs are the three fields of :data:`OBSERVATION_KEYS` (``self_state`` ``[E, R,
7]`` in the robot frame, ``objects`` ``[E, R, K, 5]``, ``objects_mask`` ``[E, R, K]``), which a
policy reads at :data:`POLICY_IN_KEYS` and answers at :data:`ACTION_KEY`. This module imports
nothing of marinenav, so the simulator, environments, policies, agents and the trainer can all
read their names from here.
"""

from __future__ import annotations

import torch

GROUP = "agents"
"""The tensordict group holding the per-robot entries (batch ``[E, R]``)."""

# --- the fields of a robot (inside GROUP, or the top level of a flat transition batch) ---------
SELF_STATE = "self_state"  # [..., 7] goal, velocity, yaw rate, thrusts; robot frame
OBJECTS = "objects"  # [..., K, 5] the K nearest objects, robot frame, zero padded
OBJECTS_MASK = "objects_mask"  # [..., K] bool, real objects
ACTIVE = "active"  # [...] bool, the robot acts in this state: its step is learning data
ACTION = "action"  # [...] int64 index 0..24, or [..., 2] values in [-1, 1]
REWARD = "reward"  # [..., 1] the step's reward (0 for robots inactive before it)
DONE = "done"  # [..., 1] bool, terminated or truncated (also the root's: the environment's)
TERMINATED = "terminated"  # [..., 1] bool, ended by a collision, the goal or deactivation
TRUNCATED = "truncated"  # [..., 1] bool, cut by the step limit while active
INFO = "info"  # [...] int64 InfoState of the last step
ENERGY = "energy"  # [..., 1] thrust energy of the last step
REWARD_TERMS = "reward_terms"  # [..., T] the last step's reward by term
FAILURES = "failures"  # [..., K] bool, the layout's end conditions met on the last step
PRICED_TERM = "priced_term"  # [..., 1] a transition's priced reward term (training.constraint)

OBSERVATION_KEYS = (SELF_STATE, OBJECTS, OBJECTS_MASK)
"""The observation fields inside :data:`GROUP`, in the networks' argument order."""

# --- the same fields as nested keys of an environment step ([E] batch, group [E, R]) ----------
POLICY_IN_KEYS = tuple((GROUP, field) for field in OBSERVATION_KEYS)
"""What a policy reads: the observation fields as nested keys, in the networks' order."""
ACTION_KEY = (GROUP, ACTION)
"""Where a policy writes its action."""
ACTIVE_KEY = (GROUP, ACTIVE)
REWARD_KEY = (GROUP, REWARD)
DONE_KEY = (GROUP, DONE)
TERMINATED_KEY = (GROUP, TERMINATED)
TRUNCATED_KEY = (GROUP, TRUNCATED)
INFO_KEY = (GROUP, INFO)
ENERGY_KEY = (GROUP, ENERGY)
REWARD_TERMS_KEY = (GROUP, REWARD_TERMS)
FAILURES_KEY = (GROUP, FAILURES)

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float64": torch.float64}
"""The config's ``env.dtype`` names and the floating-point types they stand for."""


def dtype_named(name: str) -> torch.dtype:
    """The torch dtype of a config dtype name (``"float32"`` or ``"float64"``); a clear error
    for any other name."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {name!r}") from None


def device_named(name: str | torch.device, label: str | None = None) -> torch.device:
    """The torch device ``name`` names (``"cpu"``, ``"cuda"``, ``"cuda:1"``), checked before
    anything is built or loaded on it: ``ValueError`` in one line starting with ``label``
    (default ``device NAME``; the trainer says ``device=NAME``, a command ``--device NAME``) for
    a name torch does not know or a CUDA device this machine does not have, instead of an error
    from deep inside torch or a healthy checkpoint reported unreadable. A CUDA device without
    an index comes back with the current one's (``cuda`` -> ``cuda:0``), as a tensor's
    ``.device`` reads."""
    label = label or f"device {name}"
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ValueError(f"{label}: not a device name (cpu, cuda, cuda:N)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{label}: CUDA is not available on this machine (use cpu)")
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise ValueError(f"{label}: this machine has {count} CUDA device(s), cuda:0 to "
                             f"cuda:{count - 1}")  # fmt: skip
        if device.index is None:  # as tensors report it ("cuda:0"), so devices compare equal
            device = torch.device("cuda", torch.cuda.current_device())
    return device


MAX_SEED = 2**62
"""Seeds are integers in ``[0, MAX_SEED]``: torch keeps seeds in 64-bit integers, and the
agent's seed is the run's plus an offset."""


def check_seed(seed: int, name: str = "seed") -> int:
    """``seed`` if it is an integer in ``[0, MAX_SEED]``; else ``ValueError`` naming ``name``
    (torch's own message for a huge seed, "Overflow when unpacking long long", names nothing)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{name} must be an integer in [0, 2**62], got {seed!r}")
    return seed
