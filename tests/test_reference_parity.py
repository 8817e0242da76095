"""The simulator reproduces trajectories recorded from the original numpy simulator.

Fixtures: ``tests/data/reference`` (or ``$MARINENAV_REFERENCE_DIR``), format described in that
directory's README. Every step, every robot: position, heading, both
velocities, thrusts, self observation, object observations (order included), reward, done, info
state and the collision / goal / deactivated / COLREGs flags, in float64 with
``rtol = atol = 1e-6``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marinenav.sim import InfoState, MarineNavSimulator
from marinenav.sim.constants import INFO_LABELS
from marinenav.sim.scenario_json import load_scenario_file
from tests.compile_utils import needs_cxx
from tests.reference_data import REFERENCE_DIR

FIXTURES = sorted(REFERENCE_DIR.glob("reference_*.json"))
TOL = {"rtol": 1e-6, "atol": 1e-6}

if not FIXTURES:
    pytest.skip(f"no reference fixtures in {REFERENCE_DIR}", allow_module_level=True)


def _load(path: Path) -> dict:
    import json

    return json.loads(path.read_text())


def _close(actual: torch.Tensor, expected, what: str) -> None:
    expected = torch.as_tensor(expected, dtype=torch.float64)
    torch.testing.assert_close(
        actual.to(torch.float64), expected, **TOL, msg=lambda m: f"{what}: {m}"
    )


def _check_robots(sim: MarineNavSimulator, records: list[dict], where: str) -> None:
    st, obs = sim.state, sim.observation
    for i, rec in enumerate(records):
        tag = f"{where} robot {i}"
        _close(st.pos[0, i], [rec["x"], rec["y"]], f"{tag} position")
        _close(st.theta[0, i], rec["theta"], f"{tag} theta")
        _close(st.velocity_r[0, i], rec["velocity_r"], f"{tag} velocity_r")
        _close(st.velocity[0, i], rec["velocity"], f"{tag} velocity")
        _close(st.thrust[0, i], [rec["left_thrust"], rec["right_thrust"]], f"{tag} thrust")
        assert bool(sim.collision[0, i]) == rec["collision"], f"{tag} collision flag"
        assert bool(sim.reach_goal[0, i]) == rec["reach_goal"], f"{tag} goal flag"
        assert bool(sim.deactivated[0, i]) == rec["deactivated"], f"{tag} deactivated flag"
        if rec["self_obs"] is None:
            continue
        assert bool(sim.apply_colregs[0, i]) == rec["apply_colregs"], f"{tag} COLREGs flag"
        _close(obs.self_state[0, i], rec["self_obs"], f"{tag} self observation")
        count = len(rec["objects"])
        assert int(obs.objects_mask[0, i].sum()) == count, f"{tag} number of objects"
        assert bool(obs.objects_mask[0, i, :count].all()), f"{tag} objects come first"
        if count:
            _close(obs.objects[0, i, :count], rec["objects"], f"{tag} objects")


@pytest.mark.parametrize(
    "compile",
    # compiled: one compilation per recording (about 30-50 s each on a 2-core CPU)
    [False, pytest.param(True, marks=[pytest.mark.slow, needs_cxx])],
    ids=["eager", "compiled"],
)
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_replay_matches_original(path: Path, compile: bool) -> None:
    data = _load(path)
    if compile:
        torch._dynamo.reset()  # each simulator compiles its own step; dynamo allows 8 per process
    sim = MarineNavSimulator.from_scenarios(
        load_scenario_file(path),
        action_kind=data["action_kind"],
        dtype=torch.float64,
        compile=compile,
    )
    R = sim.robot_slots
    _check_robots(sim, data["initial"], "initial")
    for t, step in enumerate(data["steps"]):
        if data["action_kind"] == "discrete":
            actions = torch.tensor([[a if a is not None else 0 for a in step["actions"]]])
        else:
            actions = torch.tensor(
                [[a if a is not None else [0.0, 0.0] for a in step["actions"]]], dtype=torch.float64
            )
        inactive = [a is None for a in step["actions"]]
        assert inactive == (~sim.active[0, :R]).tolist(), f"step {t}: inactive robots differ"
        result = sim.step(actions)
        records = step["robots"]
        _check_robots(sim, records, f"step {t}")
        for i, rec in enumerate(records):
            _close(result.reward[0, i], rec["reward"], f"step {t} robot {i} reward")
            assert bool(result.done[0, i]) == rec["done"], f"step {t} robot {i} done"
            assert InfoState(int(result.info[0, i])) == INFO_LABELS[rec["info"]], (
                f"step {t} robot {i} info"
            )
    last = data["steps"][-1]["robots"]
    timed_out = any(r["info"] == "too long episode" for r in last)
    assert bool(result.env_truncated[0]) == timed_out
