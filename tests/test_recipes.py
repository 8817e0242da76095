"""Recipes (conf/recipe/): ``recipe=paper`` composes to the original's settings, the default
(fast) recipe composes and trains; the levers it uses (Polyak targets, learning-rate decay,
best and evaluated snapshots) against hand-computed values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import open_dict

from marinenav.agents import agent_class
from marinenav.planner.export import main as export_main
from marinenav.training.checkpoint import load_agent, load_checkpoint
from marinenav.training.config import run_intervals
from marinenav.training.trainer import Trainer
from marinenav.training.updater import Updater
from tests.run_utils import ROOT, WATERS_SETTINGS, compose_config, tiny_config

PAPER_AGENTS = ("ac_iqn", "iqn", "ddpg", "dqn", "sac", "rainbow")
REPLAY_AGENTS = ("ac_iqn", "iqn", "ddpg", "dqn", "sac", "rainbow", "td3")


@pytest.mark.parametrize("agent", PAPER_AGENTS)
def test_paper_recipe_is_the_originals_settings(agent: str) -> None:
    """The original's curriculum, hyperparameters and trainer settings, written out by hand
    (docs/training.md, "Counting, and the defaults"; README.md, "The agents")."""
    cfg = compose_config(f"agent={agent}", "recipe=paper")
    assert cfg.recipe == "paper"
    t = cfg.training
    assert t.total_timesteps == 6_000_000
    assert (t.batch_size, t.updates_per_timestep, t.learning_starts) == (64, 0.25, 2000)
    assert (t.target_update_interval, t.target_tau, t.final_lr_fraction) == (10_000, None, 1.0)
    assert (t.initial_epsilon, t.final_epsilon, t.exploration_fraction) == (0.6, 0.05, 0.25)
    assert t.replay_capacity == 1_000_000
    c = cfg.curriculum
    assert list(c.timesteps) == [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000]
    assert list(c.num_robots) == [3, 4, 5, 5, 5, 5]
    assert list(c.num_obstacles) == [0, 0, 0, 2, 3, 4]
    assert list(c.min_start_goal_dis) == [30, 35, 40, 40, 40, 40]
    assert (cfg.evaluation.interval, cfg.evaluation.first) == (60_000, 2000)
    assert cfg.checkpoint.interval == 60_000
    a = cfg.agent
    assert (a.lr, a.gamma, a.grad_clip_norm, a.normalize_observations) == (1e-4, 0.99, 0.5, False)
    assert a.get("cvar_alpha", 1.0) == 1.0  # AC-IQN's actor, IQN's acting: the mean
    assert a.get("n_step", 1) == 1 or agent == "rainbow"  # Rainbow's n-step is its own (3)
    assert not cfg.checkpoint.keep_evaluated


def test_quick_recipe_is_candidate_i_of_the_results() -> None:
    """recipe=quick for AC-IQN composes to the command line docs/results.md measured as
    candidate I (the default with these overrides), apart from the recipe's name; the paper and
    fast recipes average nothing."""
    quick = compose_config("agent=ac_iqn", "recipe=quick")
    candidate_i = compose_config(
        "agent=ac_iqn", "env.num_envs=64", "training.total_timesteps=400000",
        "curriculum.timesteps=[0,32000,64000,96000,128000,160000]", "agent.num_tau_train=4",
        "agent.num_tau_target=4", "agent.num_tau_actor=4",
        "training.policy_average_start=0.4", "training.policy_average_interval=1000",
    )  # fmt: skip
    assert quick.recipe == "quick" and candidate_i.recipe == "fast"
    with open_dict(candidate_i):
        candidate_i.recipe = "quick"
    assert quick == candidate_i
    # the average starts with the last stage and samples every 1,000 timesteps: 241 samples
    assert quick.training.policy_average_start * 400_000 == quick.curriculum.timesteps[-1]
    assert len(range(160_000, 400_001, quick.training.policy_average_interval)) == 241
    for recipe in ("paper", "fast"):
        other = compose_config("agent=ac_iqn", f"recipe={recipe}")
        assert other.training.policy_average_start is None


@pytest.mark.parametrize("agent", PAPER_AGENTS)
def test_quick_recipe_keeps_the_agents_fast_part(agent: str) -> None:
    """recipe=quick is every agent's part of the fast recipe on the quick schedule: the agent's
    settings are its fast part's (AC-IQN's 4 quantile fractions aside), never the agent's
    plain defaults (which once came silently for every agent but AC-IQN), and the budget,
    environments and stages are the quick recipe's."""
    fast = compose_config(f"agent={agent}", "recipe=fast")
    quick = compose_config(f"agent={agent}", "recipe=quick")
    plain = compose_config(f"agent={agent}", "recipe=fast", "~recipe_agent")
    assert fast.agent != plain.agent  # the agent has a fast part of its own
    expected = dict(fast.agent)
    if agent == "ac_iqn":
        expected.update(num_tau_train=4, num_tau_target=4, num_tau_actor=4)
    assert dict(quick.agent) == expected
    assert (quick.training.total_timesteps, quick.env.num_envs) == (400_000, 64)
    assert list(quick.curriculum.timesteps) == [0, 32_000, 64_000, 96_000, 128_000, 160_000]
    assert quick.training.policy_average_start == 0.4


def test_waters_recipe_is_the_measured_mixed_command() -> None:
    """recipe=waters for Rainbow composes to the command line docs/results.md measured as "the
    pass constraint with the check as a fixed term" (the fast recipe with these overrides),
    apart from the recipe's name."""
    waters = compose_config("agent=rainbow", "recipe=waters")
    measured = compose_config(
        "agent=rainbow", "training.total_timesteps=960000", *WATERS_SETTINGS
    )
    assert waters.recipe == "waters" and measured.recipe == "fast"
    with open_dict(measured):
        measured.recipe = "waters"
    assert waters == measured
    assert waters.scenario.name == "mix" and waters.training.constraint.term == "passed_ahead"


@pytest.mark.parametrize("agent", PAPER_AGENTS)
def test_waters_recipe_keeps_the_agents_fast_part(agent: str) -> None:
    """recipe=waters is every agent's fast part in the mixed waters on 960,000 timesteps, never
    the agent's plain defaults (a recipe without an agent file of its own would give those)."""
    fast = compose_config(f"agent={agent}", "recipe=fast")
    waters = compose_config(f"agent={agent}", "recipe=waters")
    assert dict(waters.agent) == dict(fast.agent)
    assert waters.training.total_timesteps == 960_000
    assert list(waters.curriculum.timesteps) == list(fast.curriculum.timesteps)
    assert (waters.scenario.name, fast.scenario.name) == ("mix", "random")


def test_fast_recipe_is_the_default_and_the_command_line_wins() -> None:
    default, fast = compose_config(), compose_config("recipe=fast")
    stage0 = compose_config("curriculum=stage0", "agent.n_step=1")
    td3 = compose_config("agent=td3")  # an agent without a part of its own
    assert default == fast and default.recipe == "fast"
    assert default.training.target_tau is not None and default.training.final_lr_fraction < 1
    assert default.agent.n_step == 3  # conf/recipe_agent/fast_ac_iqn.yaml
    assert (default.agent.lr, td3.agent.lr) == (3e-4, 1e-4)
    assert (default.training.total_timesteps, td3.training.total_timesteps) == (560_000, 800_000)
    assert default.agent.normalize_observations and not td3.agent.normalize_observations
    assert default.agent.cvar_alpha == 0.25  # a risk-averse actor; the paper's is risk neutral
    assert (default.agent.gamma, td3.agent.gamma) == (0.995, 0.99)  # AC-IQN's longer horizon
    iqn = compose_config("agent=iqn").agent  # conf/recipe_agent/fast_iqn.yaml
    assert (iqn.lr, iqn.n_step, iqn.gamma, iqn.cvar_alpha) == (3e-4, 3, 0.995, 0.25)
    assert iqn.collect_cvar_alpha == 1.0  # acts on the tail, collects on the mean (as Rainbow)
    assert iqn.normalize_observations
    dqn = compose_config("agent=dqn").agent  # conf/recipe_agent/fast_dqn.yaml
    assert (dqn.lr, dqn.n_step, dqn.gamma, dqn.double_q) == (3e-4, 3, 0.995, True)
    assert dqn.normalize_observations
    ddpg = compose_config("agent=ddpg")  # conf/recipe_agent/fast_ddpg.yaml
    assert (ddpg.agent.lr, ddpg.agent.n_step, ddpg.agent.gamma) == (3e-4, 3, 0.995)
    assert ddpg.agent.normalize_observations and ddpg.training.total_timesteps == 480_000
    sac = compose_config("agent=sac")  # conf/recipe_agent/fast_sac.yaml
    s = sac.agent
    assert (s.lr, s.n_step, s.gamma, s.alpha, s.learn_alpha) == (3e-4, 3, 0.995, 0.078, False)
    assert s.normalize_observations and sac.training.total_timesteps == 480_000
    rainbow = compose_config("agent=rainbow")  # conf/recipe_agent/fast_rainbow.yaml
    r = rainbow.agent
    assert (r.lr, r.n_step, r.gamma, r.v_min, r.v_max, r.atoms) == (3e-4, 3, 0.995, -100, 60, 51)
    assert r.normalize_observations and rainbow.training.total_timesteps == 480_000
    assert (r.cvar_alpha, r.collect_cvar_alpha) == (0.25, 1.0)  # acts on the tail, collects not
    # the recipe picks its curriculum and the agent's part; the command line overrides both
    assert list(default.curriculum.timesteps) != list(stage0.curriculum.timesteps) == [0]
    assert stage0.agent.n_step == 1
    # an agent without a part of its own gets the recipe's shared settings only
    assert td3.agent.n_step == 1 and td3.training.target_tau == default.training.target_tau


@pytest.mark.parametrize("agent", REPLAY_AGENTS)
def test_polyak_step_matches_the_hand_computed_average(agent: str) -> None:
    """One ``update_targets()`` of an ``Updater(agent, target_tau=tau)``: every target parameter
    becomes ``(1 - tau) target + tau online``, for each loss module's own target layout."""
    cls = agent_class(agent)
    model = cls(cls.config_class())
    tau = 0.25
    updater = Updater(model, target_tau=tau)
    online, target = {}, {}
    with torch.no_grad():
        for value in model.loss_module.parameters():
            value.add_(0.1)  # online parameters differ from their targets now
        for key, value in model.loss_module.state_dict(keep_vars=True).items():
            head = key.split(".", 1)[0]  # target_<name>_params: TorchRL's target copies
            if head.startswith("target_") and head.endswith("_params"):
                target[key] = value.detach().clone()
        for key in target:
            source = key.replace("target_", "", 1)
            online[key] = model.loss_module.state_dict(keep_vars=True)[source].detach().clone()
    assert target, f"{agent} has no target parameters"
    moved = 0
    updater.update_targets()
    after = model.loss_module.state_dict()
    for key in target:
        expected = (1 - tau) * target[key] + tau * online[key]
        torch.testing.assert_close(after[key], expected, rtol=0, atol=1e-6)
        moved += int(not torch.equal(target[key], online[key]))
    assert moved > 0


def test_a_polyak_rate_outside_0_1_is_refused() -> None:
    cls = agent_class("ac_iqn")
    for tau in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"tau must be in \(0, 1\]"):
            Updater(cls(cls.config_class()), target_tau=tau)


def test_learning_rates_decay_linearly_over_the_budget(tmp_path: Path) -> None:
    cfg = tiny_config("agent=sac", "training.final_lr_fraction=0.1")
    trainer = Trainer(cfg, tmp_path)
    initial = {
        name: [g["lr"] for g in opt.param_groups]
        for name, opt in trainer.updater.optimizers.items()
    }
    for timesteps, fraction in ((0, 1.0), (40, 1 - 0.9 * 0.25), (80, 0.55), (160, 0.1)):
        trainer.timesteps = timesteps
        trainer.decay_learning_rate()
        for name, opt in trainer.updater.optimizers.items():
            for group, lr0 in zip(opt.param_groups, initial[name], strict=True):
                assert group["lr"] == pytest.approx(lr0 * fraction), (name, timesteps)


def test_soft_targets_step_once_per_update_and_hard_copies_stop(tmp_path, monkeypatch) -> None:
    cfg = tiny_config("agent=dqn", "training.target_tau=0.01")
    trainer = Trainer(cfg, tmp_path)
    calls = []
    updater = trainer.updater
    monkeypatch.setattr(updater, "polyak_step", lambda: calls.append(updater.updates))
    trainer.train()
    assert trainer.updates > 0 and calls == list(range(1, trainer.updates + 1))


def test_default_recipe_trains_a_tiny_budget_and_keeps_best_and_evaluated(tmp_path: Path) -> None:
    cfg = tiny_config("recipe=fast", "checkpoint.keep_evaluated=true")
    assert cfg.recipe == "fast" and cfg.agent.n_step == 3
    run = tmp_path / "run"
    trainer = Trainer(cfg, run)
    trainer.train()
    rates = [e["eval/success_rate"] for e in trainer.evaluations]
    timesteps = [e["timestep"] for e in trainer.evaluations]
    assert timesteps == [80, 160]
    for t in timesteps:
        snapshot = load_checkpoint(run / "evaluated" / str(t))
        assert snapshot["snapshot"] and snapshot["counters"]["timesteps"] == t
    best = load_checkpoint(run / "best")
    chosen = max(range(len(rates)), key=lambda k: (rates[k], k))  # ties: the later
    assert best["counters"]["timesteps"] == timesteps[chosen]
    agent, config = load_agent(run / "best")
    assert config["recipe"] == "fast" and agent.name == "ac_iqn"
    # the learning rates reached the recipe's final fraction at the end of the budget
    for opt in trainer.updater.optimizers.values():
        for group in opt.param_groups:
            assert group["lr"] == pytest.approx(cfg.agent.lr * cfg.training.final_lr_fraction)
    # export writes the last checkpoint's planner and the best one's under best/
    out = tmp_path / "planners"
    assert export_main([str(run), "--out", str(out)]) == 0
    assert (out / "traced_AC_IQN_model.pt").is_file()
    assert (out / "best" / "traced_AC_IQN_model.pt").is_file()
    # a snapshot is not a checkpoint to resume from
    with open_dict(cfg):
        cfg.resume = str(run / "best")
    with pytest.raises(ValueError, match="is a policy snapshot"):
        Trainer(cfg, tmp_path / "resumed")


def test_optuna_proxy_sweep_runs_its_trials_and_reports_the_best(tmp_path: Path) -> None:
    """``python train.py -m +tune=proxy`` (Hydra's Optuna sweeper) with two tiny trials: each
    trial is a run of its own, and the study's best parameters lie in the search space."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    import yaml

    from tests.run_utils import TINY, train_py

    sweep = tmp_path / "sweep"
    result = train_py(
        "-m", "+tune=proxy", "hydra.sweeper.n_trials=2", *TINY, f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(list(sweep.glob("*/evaluations.jsonl"))) == 2
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    params = best["best_params"]
    assert 0.001 <= params["training.target_tau"] <= 0.1
    assert 0.05 <= params["training.final_lr_fraction"] <= 1.0
    assert 3e-5 <= params["agent.lr"] <= 1e-3
    assert params["agent.normalize_observations"] in (True, False)
    assert 0.0 <= best["best_value"] <= 1.0


@pytest.mark.slow  # the long set: a drill of two Optuna workers, one killed
def test_workers_share_one_study_and_a_killed_worker_loses_only_its_trial(tmp_path: Path) -> None:
    """Several ``python train.py -m +tune=proxy`` processes with one ``hydra.sweeper.storage``
    (an SQLite file here) add their trials to one Optuna study; a worker killed in the middle
    of a trial leaves the finished trials as they were, its running one unfinished, and the next
    worker goes on adding to the same study."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    import optuna

    from tests.run_utils import LONG, TINY, train_py, wait_for

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    common = ["-m", "+tune=proxy", f"hydra.sweeper.storage={storage}", "hydra.sweeper.n_trials=1"]
    result = train_py(*common, *TINY, "hydra.sweeper.sampler.seed=0",
                      f"hydra.sweep.dir={tmp_path / 'w0'}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="fast_recipe_proxy", storage=storage)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE]

    # a worker whose trial would run for an hour, killed once the trial has started training
    killed_dir = tmp_path / "w2"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *common, *LONG, "hydra.sweeper.sampler.seed=2",
         f"hydra.sweep.dir={killed_dir}"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: any(killed_dir.glob("*/logs/scalars/train/updates.csv")), process,
                 "the killed worker's first logged step")  # fmt: skip
    finally:
        process.kill()
        process.wait()
    states = [t.state for t in optuna.load_study(study_name="fast_recipe_proxy",
                                                 storage=storage).trials]  # fmt: skip
    assert states[:1] == [optuna.trial.TrialState.COMPLETE]
    assert states[1:] == [optuna.trial.TrialState.RUNNING]  # lost: the trial it was running
    result = train_py(*common, *TINY, "hydra.sweeper.sampler.seed=3",
                      f"hydra.sweep.dir={tmp_path / 'w3'}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="fast_recipe_proxy", storage=storage)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(study.trials) == 3 and len(complete) == 2 and 0.0 <= study.best_value <= 1.0


def test_a_tensor_learning_rate_is_decayed_in_place() -> None:
    """Under CUDA graphs (``Updater.compile(cudagraphs=True)``) the rates are device tensors
    that a captured step reads: the decay must fill them in place, and fused Adam must step with
    them. Here on the CPU, with the rates made tensors as ``Updater.compile`` makes them."""
    cls = agent_class("ac_iqn")
    agent = cls(cls.config_class())
    updater = Updater(agent)
    tensors = []
    for optimizer in updater.optimizers.values():
        for group in optimizer.param_groups:
            group["initial_lr"] = group["lr"]
            group["lr"] = torch.as_tensor(group["lr"], dtype=torch.float32)
            tensors.append(group["lr"])
    updater.set_lr_fraction(0.25)
    for optimizer in updater.optimizers.values():
        for group in optimizer.param_groups:
            assert any(group["lr"] is t for t in tensors)  # the same tensor, filled
            assert group["lr"].item() == pytest.approx(0.25e-4)
    from tests.agent_utils import training_batch

    before = [p.detach().clone() for p in agent.actor.parameters()]
    updater.update(training_batch(8, "continuous"))
    assert any(not torch.equal(a, p) for a, p in zip(before, agent.actor.parameters(), strict=True))


PAPER_INTERVALS = {"evaluation.interval": 60_000, "evaluation.first": 2000,
                   "checkpoint.interval": 60_000}  # fmt: skip


def intervals(value: int, first: int | None = None) -> dict[str, int]:
    return {"evaluation.interval": value, "evaluation.first": value if first is None else first,
            "checkpoint.interval": value}  # fmt: skip


def test_unset_intervals_are_a_tenth_of_the_budget_and_a_set_one_wins() -> None:
    """The fast recipe leaves the evaluation and checkpoint intervals null, so they
    are a tenth of the budget rounded up to whole batched steps (56,000 for AC-IQN's 560k,
    80,000 for the shared 800k of an agent without a part, 5,008 for the README's five-minute
    50,000 of 16 environments); a value on the command line wins; recipe=paper keeps the
    original's 60,000 / 2,000 / 60,000 whatever the budget."""
    assert run_intervals(compose_config()) == intervals(56_000)
    assert run_intervals(compose_config("agent=td3")) == intervals(80_000)
    short = ("curriculum=stage0", "training.total_timesteps=50000")
    assert run_intervals(compose_config(*short)) == intervals(5008)
    assert run_intervals(compose_config(*short, "env.num_envs=1")) == intervals(5000)
    set_one = compose_config(*short, "evaluation.interval=20000", "checkpoint.interval=1600")
    assert run_intervals(set_one) == {"evaluation.interval": 20_000,
                                      "evaluation.first": 20_000,  # follows the interval
                                      "checkpoint.interval": 1600}  # fmt: skip
    assert run_intervals(compose_config(*short, "evaluation.first=16"))["evaluation.first"] == 16
    for budget in ("6000000", "50000"):
        paper = compose_config("recipe=paper", f"training.total_timesteps={budget}")
        assert run_intervals(paper) == PAPER_INTERVALS


def test_a_run_with_unset_intervals_evaluates_and_checkpoints_ten_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """160 timesteps of 2 environments with null intervals: evaluations and checkpoints every 16
    timesteps (10 of each), and the checkpoint records the intervals the run used."""
    cfg = tiny_config("agent=dqn", "evaluation.interval=null", "evaluation.first=null",
                      "checkpoint.interval=null")  # fmt: skip
    saved = []
    original = Trainer.save_checkpoint

    def counting(self):
        saved.append(self.timesteps)
        return original(self)

    monkeypatch.setattr(Trainer, "save_checkpoint", counting)
    trainer = Trainer(cfg, tmp_path / "run")
    trainer.train()
    assert [e["timestep"] for e in trainer.evaluations] == list(range(16, 161, 16))
    assert sorted(set(saved)) == list(range(16, 161, 16))  # the end's may be written twice
    recorded = load_checkpoint(tmp_path / "run")["config"]
    assert (recorded["evaluation"]["interval"], recorded["evaluation"]["first"],
            recorded["checkpoint"]["interval"]) == (16, 16, 16)  # fmt: skip
    assert cfg.evaluation.interval is None  # the caller's config is left as it was
