"""A reward term priced by a Lagrange multiplier (``marinenav.training.constraint``,
``training.constraint``): the multiplier's steps by hand, the re-pricing of a sampled batch,
and the trainer end to end (the multiplier against
the run's own logged costs, every update's batch re-priced, the multiplier resumed, refusals)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from marinenav.training.constraint import PRICED, PricedTerm
from marinenav.training.rundir import RunDirectoryError
from marinenav.training.trainer import Trainer
from marinenav.training.validation import ConfigError
from tests.run_utils import logged_scalars, tiny_config
from tests.sync_utils import count_read_backs

TERMS = ("progress", "colregs", "terminal")


def priced(target: float = 0.5, lr: float = 0.1, initial: float = 1.0, ceiling: float = 3.0,
           term: str = "colregs") -> PricedTerm:  # fmt: skip
    return PricedTerm(term, TERMS, target, lr, initial, ceiling, torch.device("cpu"))


def test_the_multiplier_steps_once_per_finished_episode_by_its_cost_over_the_target() -> None:
    p = priced(target=0.5, lr=0.1)
    # two episodes end, costing 2 and 0 (the term is a penalty: -2 and 0); the third goes on
    p.observe_episodes(torch.tensor([-2.0, 0.0, -5.0]), torch.tensor([True, True, False]))
    assert p.multiplier.item() == pytest.approx(1.0 + 0.1 * ((2.0 - 0.5) + (0.0 - 0.5)))
    p.observe_episodes(torch.tensor([-9.0, -9.0]), torch.tensor([False, False]))  # none ends
    assert p.multiplier.item() == pytest.approx(1.1)
    for _ in range(30):  # clean episodes lower it, down to 0 and no further
        p.observe_episodes(torch.tensor([0.0]), torch.tensor([True]))
    assert p.multiplier.item() == 0.0
    for _ in range(30):  # costly ones raise it, up to the ceiling
        p.observe_episodes(torch.tensor([-10.0]), torch.tensor([True]))
    assert p.multiplier.item() == 3.0


def test_a_sampled_batch_is_priced_at_the_multiplier_of_the_moment() -> None:
    p = priced(initial=3.0)
    rows = {"reward": torch.tensor([[-1.5], [0.5]]), PRICED: torch.tensor([[-1.0], [0.0]])}
    batch = TensorDict({"next": rows}, batch_size=[2])
    stored = batch["next", "reward"]
    p.reprice(batch)  # the term at 3 times its weight: 2 more of it
    assert batch["next", "reward"].flatten().tolist() == [-3.5, 0.5]
    assert stored.flatten().tolist() == [-1.5, 0.5]  # what the batch was given is untouched
    p.multiplier.fill_(0.0)
    batch.set(("next", "reward"), stored)
    p.reprice(batch)  # the term left out
    assert batch["next", "reward"].flatten().tolist() == [-0.5, 0.5]


def test_the_multiplier_makes_no_read_back() -> None:
    p = priced()
    batch = TensorDict({"next": {"reward": torch.ones(4, 1), PRICED: -torch.ones(4, 1)}}, [4])
    with count_read_backs() as counts:
        for _ in range(3):
            p.observe_episodes(-torch.rand(8), torch.rand(8) < 0.5)
            p.reprice(batch)
    assert sum(counts.values()) == 0, dict(counts)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"term": "lane"}, "'lane' is not a reward term of this run; its terms are progress, "
                        "colregs, terminal"),
     ({"target": -0.1}, "training.constraint.target must be finite and >= 0, got -0.1"),
     ({"lr": 0.0}, "training.constraint.lr must be finite and > 0, got 0.0"),
     ({"lr": math.nan}, "training.constraint.lr must be finite and > 0, got nan"),
     ({"initial": -1.0}, "training.constraint.initial must be finite and >= 0, got -1.0"),
     ({"ceiling": 0.5}, "training.constraint.max must be finite and >= "
                        "training.constraint.initial (1.0), got 0.5")],
)  # fmt: skip
def test_bad_constraint_values_are_refused_in_one_line(changes: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        priced(**changes)
    assert message in str(caught.value)


def logged(run_dir: Path, name: str) -> list[float]:
    """A scalar's values in the run's CSV logs, in step order."""
    return list(logged_scalars(run_dir, name).values())


CONSTRAINED = ("training.constraint.term=progress", "training.constraint.target=0.2",
               "training.constraint.lr=0.05", "training.constraint.initial=5.0",
               "training.constraint.max=100.0")  # fmt: skip


@pytest.mark.parametrize("agent", ["rainbow", "dqn"])  # n-step and one-step replays
def test_a_constrained_run_prices_every_batch_and_steps_by_its_logged_costs(
    agent: str, tmp_path: Path
) -> None:
    trainer = Trainer(tiny_config(f"agent={agent}", *CONSTRAINED), tmp_path)
    p = trainer.priced
    sampled: list[tuple] = []
    sample, update = trainer.learner.replay.sample, trainer.updater.update

    def sample_and_note():
        batch = sample()
        sampled.append((batch.clone(), p.multiplier.clone()))
        return batch

    def update_and_check(batch):
        before, multiplier = sampled[-1]
        stored, term = before["next", "reward"], before["next", PRICED]
        assert torch.allclose(batch["next", "reward"], stored + (multiplier.float() - 1) * term)
        return update(batch)

    trainer.learner.replay.sample = sample_and_note
    trainer.updater.update = update_and_check
    trainer.train()
    assert len(sampled) > 10
    terms = torch.cat([batch["next", PRICED] for batch, _ in sampled])
    assert (terms != 0).float().mean() > 0.5  # the progress term is paid on most steps
    # the multiplier's path, from the run's own logs: one step per finished episode
    episodes = logged(tmp_path, "train/episodes")
    term_mean = logged(tmp_path, "train/reward_progress")
    cost = sum(-m * k for m, k in zip(term_mean, episodes, strict=True) if k)
    expected = 5.0 + 0.05 * (cost - 0.2 * sum(episodes))
    assert 0.0 < expected < 100.0  # the clip never acted: the sum is the path
    assert p.multiplier.item() == pytest.approx(expected, rel=1e-9)
    assert logged(tmp_path, "train/multiplier_progress")[-1] == pytest.approx(expected)


def test_a_resumed_run_keeps_its_multiplier(tmp_path: Path) -> None:
    first = Trainer(tiny_config("agent=dqn", *CONSTRAINED), tmp_path)
    first.train()
    reached = first.priced.multiplier.item()
    assert reached != 5.0
    resumed = Trainer(tiny_config("agent=dqn", *CONSTRAINED, "resume=true",
                                  "training.total_timesteps=240"), tmp_path)  # fmt: skip
    assert resumed.priced.multiplier.item() == reached
    del resumed
    changed = [*CONSTRAINED, "training.constraint.target=1.0", "resume=true"]
    with pytest.raises(RunDirectoryError, match=r"training.constraint.target=0.2"):
        Trainer(tiny_config("agent=dqn", *changed), tmp_path)


def test_a_term_the_run_lacks_and_an_on_policy_agent_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'lane' is not a reward term of this run"):
        Trainer(tiny_config("agent=dqn", "training.constraint.term=lane"), tmp_path / "a")
    with pytest.raises(ConfigError, match="agent mappo learns on-policy"):
        Trainer(tiny_config("agent=mappo", "training.constraint.term=progress"), tmp_path / "b")


def test_without_a_constraint_nothing_is_priced(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config("agent=dqn"), tmp_path)
    trainer.train()
    assert trainer.priced is None
    assert PRICED not in trainer.learner.replay.sample()["next"].keys()
    assert not (tmp_path / "logs" / "scalars" / "train" / "multiplier_progress.csv").exists()


def test_a_constraint_over_one_part_counts_that_parts_episodes_only() -> None:
    p = PricedTerm("colregs", TERMS, 0.5, 0.1, 1.0, 3.0, torch.device("cpu"), part="imazu",
                   part_names=("open_water", "imazu"))  # fmt: skip
    term = torch.tensor([-4.0, -2.0, -1.0, -8.0])
    done = torch.tensor([True, True, False, True])
    part = torch.tensor([1, 0, 1, 1])  # env 1 is open water, env 2 has not finished
    p.observe_episodes(term, done, part)
    assert p.multiplier.item() == pytest.approx(1.0 + 0.1 * ((4.0 - 0.5) + (8.0 - 0.5)))
    multiplier, cost, counted = (value.item() for value in p.log_values())
    assert (cost, counted) == (12.0, 2.0)
    p.observe_episodes(term, done, torch.zeros(4, dtype=torch.int64))  # open water only
    assert p.multiplier.item() == multiplier
    p.reset_log()
    assert [value.item() for value in p.log_values()[1:]] == [0.0, 0.0]
    with pytest.raises(ValueError, match="pass each episode's part"):
        p.observe_episodes(term, done)


@pytest.mark.parametrize(
    ("part", "names", "message"),
    [("harbour", ("open_water", "imazu"), "training.constraint.part='harbour' is not a part of "
                                          "this run's mixture; its parts are open_water, imazu"),
     ("imazu", (), "training.constraint.part='imazu' needs a mixed layout (scenario=mix)")],
)  # fmt: skip
def test_a_part_the_run_lacks_is_refused(part: str, names: tuple, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        PricedTerm("colregs", TERMS, 0.5, 0.1, 1.0, 3.0, torch.device("cpu"), part=part,
                   part_names=names)  # fmt: skip
    assert message in str(caught.value)


# two of the mixture's parts (the tiny curriculum has one stage; the currents part lists six)
MIXED = ("scenario=mix", "~scenario.parts.open_water", "~scenario.parts.currents")


def test_a_constrained_run_over_one_part_hands_each_finished_episode_its_own_part(
    tmp_path: Path,
) -> None:
    trainer = Trainer(tiny_config("agent=dqn", *MIXED, *CONSTRAINED,
                                  "training.constraint.part=imazu"), tmp_path)  # fmt: skip
    p, sim = trainer.priced, trainer.env.sim
    assert p.part_index == 1  # the parts left: harbour, imazu
    before: list[torch.Tensor] = []
    seen: list[tuple] = []
    step, observe = trainer.env.step_and_reset, p.observe_episodes

    def step_noting_the_part(step_input):
        before.append(sim.scenario.layout_part.clone())  # the running episodes' parts
        return step(step_input)

    def observe_and_note(term, done, episode_part):
        seen.append((term.clone(), done.clone(), episode_part.clone()))
        observe(term, done, episode_part)

    trainer.env.step_and_reset = step_noting_the_part
    p.observe_episodes = observe_and_note
    trainer.train()
    assert len(seen) == len(before) > 0
    for (_, _, part), running in zip(seen, before, strict=True):
        assert torch.equal(part, running)
    finished = torch.stack([done for _, done, _ in seen])
    parts = torch.stack([part for _, _, part in seen])
    assert (finished & (parts == 1)).any() and (finished & (parts != 1)).any()
    costs = torch.stack([-term for term, _, _ in seen]).double()
    counted = finished & (parts == 1)
    expected = 5.0 + 0.05 * (costs[counted].sum().item() - 0.2 * counted.sum().item())
    assert p.multiplier.item() == pytest.approx(expected, rel=1e-9)
    # each log's cost: the mean over the episodes of the part that ended in its interval
    E, start = trainer.cfg.env.num_envs, 0
    rows = logged_scalars(tmp_path, "train/cost_progress").items()
    for timestep, mean in rows:
        end = timestep // E  # the steps up to this log
        interval = counted[start:end]
        if interval.any():
            assert mean == pytest.approx(costs[start:end][interval].mean().item(), rel=1e-9)
        else:
            assert math.isnan(mean)
        start = end
    assert start == len(seen) and any(math.isfinite(mean) for _, mean in rows)


def test_a_multiplier_at_its_ceiling_is_said_once(tmp_path: Path, caplog) -> None:
    """A target the run cannot meet at its highest price (the tiny run's episodes end in
    collisions, -5 each in the terminal term, against a target of 0: the ceiling is reached by
    the first log) gets one warning naming the term, the ceiling and the target; a run whose
    multiplier stays below it gets none."""
    import logging

    capped = ("training.constraint.term=terminal", "training.constraint.target=0.0",
              "training.constraint.lr=1.0", "training.constraint.initial=1.0",
              "training.constraint.max=1.5")  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="marinenav.training.trainer"):
        Trainer(tiny_config("agent=dqn", *capped), tmp_path / "capped").train()
    said = [r.getMessage() for r in caplog.records if "reached its ceiling" in r.getMessage()]
    assert len(said) == 1, said
    assert "multiplier of terminal" in said[0] and "training.constraint.max=1.5" in said[0]
    assert "against the target 0" in said[0]
    assert logged(tmp_path / "capped", "train/multiplier_terminal")[-1] == pytest.approx(1.5)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="marinenav.training.trainer"):
        Trainer(tiny_config("agent=dqn", *CONSTRAINED), tmp_path / "free").train()
    assert not [r for r in caplog.records if "reached its ceiling" in r.getMessage()]
