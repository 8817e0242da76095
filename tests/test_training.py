"""End-to-end training: each agent trains, evaluates, checkpoints and resumes; the per-step path
makes no host read-back; bad configs fail before any training; Hydra runs and sweeps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import open_dict
from tensordict import TensorDictBase

import marinenav.training.validation as validation_module
from marinenav.agents import AGENT_NAMES, agent_class
from marinenav.training.config import crossed
from marinenav.training.trainer import Trainer, linear_epsilon
from marinenav.training.validation import ConfigError, gpu_advice, memory_estimate, validate
from tests.agent_utils import agents_in_the_default_set
from tests.compile_utils import needs_cxx
from tests.run_utils import (
    TINY,
    WATERS_SETTINGS,
    compose_config,
    logged_scalars,
    tiny_config,
    train_py,
    train_until_killed,
)
from tests.sync_utils import count_read_backs, take_the_cuda_code_path


def test_schedules_follow_the_original() -> None:
    cfg = tiny_config("agent=dqn", "training.total_timesteps=1000").training
    assert linear_epsilon(0, cfg) == pytest.approx(0.6)
    assert linear_epsilon(125, cfg) == pytest.approx(0.6 + 0.5 * (0.05 - 0.6))
    assert linear_epsilon(250, cfg) == pytest.approx(0.05)
    assert linear_epsilon(900, cfg) == pytest.approx(0.05)
    assert crossed(9_990, 10_006, 10_000) and not crossed(10_006, 10_022, 10_000)
    assert crossed(0, 16, 60_000, first=16) and not crossed(16, 32, 60_000, first=16)


def first_agent(learning: str) -> str:
    """The first registered agent whose class learns by ``learning`` ("replay", "rollout")."""
    return next(name for name in AGENT_NAMES if agent_class(name).learning == learning)


def expected_updates(cfg, timesteps: int) -> int:
    """Gradient updates a run has taken after ``timesteps`` (a multiple of ``env.num_envs``),
    worked out from the learner rules of docs/training.md for the agent's ``learning``:

    * replay: ``updates_per_timestep`` per timestep from the batched step that reaches
      ``learning_starts`` on (its timesteps included), fractions carried over;
    * rollout: ``epochs x minibatches`` per full rollout of ``rollout_steps`` batched steps.
    """
    num_envs = cfg.env.num_envs
    if agent_class(cfg.agent.name).learning == "rollout":
        rollouts = timesteps // num_envs // cfg.agent.rollout_steps
        return rollouts * cfg.agent.epochs * cfg.agent.minibatches
    first = max(math.ceil(cfg.training.learning_starts / num_envs), 1) * num_envs
    if timesteps < first:
        return 0
    return math.floor((timesteps - first + num_envs) * cfg.training.updates_per_timestep)


def assert_same_state(a: Any, b: Any, where: str) -> None:
    """Two learner states (nested dicts of tensors, TensorDicts and numbers) hold equal values."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same_state(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, TensorDictBase):
        assert set(a.keys(True, True)) == set(b.keys(True, True)), where
        for key in a.keys(True, True):
            assert torch.equal(a.get(key), b.get(key)), (where, key)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b, where


def test_expected_update_counts_of_the_tiny_run() -> None:
    """The tiny run's counts, by hand: replay, 0.25 per timestep from the step reaching
    timestep 40 (61 batched steps of 2 environments to 160: 30.5); rollout, one rollout of 64
    batched steps by 160 timesteps (80 steps), 5 epochs x 4 minibatches."""
    replay, rollout = (tiny_config(f"agent={first_agent(kind)}") for kind in ("replay", "rollout"))
    assert [expected_updates(replay, t) for t in (38, 40, 160, 200)] == [0, 0, 30, 40]
    assert [expected_updates(rollout, t) for t in (126, 128, 160, 256)] == [0, 20, 20, 40]


# by default one agent of each learner kind: distributional actor-critic, prioritized n-step
# replay, stochastic continuous, on-policy rollouts; every agent in the long set
@pytest.mark.parametrize(
    "agent", agents_in_the_default_set(AGENT_NAMES, ("ac_iqn", "rainbow", "sac", "mappo"))
)
def test_train_evaluate_checkpoint_resume(agent: str, tmp_path: Path) -> None:
    cfg = tiny_config(f"agent={agent}")
    trainer = Trainer(cfg, tmp_path)
    final = trainer.train()
    assert trainer.timesteps == 160
    assert trainer.updates == expected_updates(cfg, 160) > 0
    assert [e["timestep"] for e in trainer.evaluations] == [80, 160]
    assert 0.0 <= final["eval/success_rate"] <= 1.0
    assert len((tmp_path / "evaluations.jsonl").read_text().splitlines()) == 2
    assert len(json.loads((tmp_path / "eval_configs.json").read_text())) == 2
    assert (tmp_path / "logs" / "scalars" / "train" / "success_rate.csv").is_file()

    # resume the finished run with a larger budget: counters, parameters and learner continue
    with open_dict(cfg):
        cfg.resume = True
        cfg.training.total_timesteps = 200
    resumed = Trainer(cfg, tmp_path)
    assert resumed.timesteps == 160 and resumed.updates == trainer.updates
    for (name, a), (_, b) in zip(
        trainer.agent.state_dict().items(), resumed.agent.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    assert_same_state(trainer.learner.state_dict(), resumed.learner.state_dict(), "learner")
    torch.testing.assert_close(resumed.env.sim.state.pos, trainer.env.sim.state.pos)
    resumed.train()
    assert resumed.timesteps == 200 and resumed.updates == expected_updates(cfg, 200)


def test_a_checkpoint_with_packed_metrics_still_resumes(tmp_path: Path) -> None:
    """Checkpoints of earlier versions hold the trainer's accumulators as one packed [5]
    tensor (episodes, successes, return sum, transitions, reward sum) and no reward terms;
    they resume into the named accumulators, the terms starting at zero."""
    cfg = tiny_config("agent=dqn", "training.total_timesteps=120", "logger.interval=1000")
    trainer = Trainer(cfg, tmp_path)
    trainer.train()  # no log after the start: the accumulators hold 120 timesteps
    path = tmp_path / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    named = state["trackers"]["metrics"]
    state["trackers"]["metrics"] = torch.stack([named[k] for k in list(named)[:5]])
    del state["trackers"]["episode_terms"]
    torch.save(state, path)
    with open_dict(cfg):
        cfg.resume = True
    resumed = Trainer(cfg, tmp_path)
    for key in ("episodes", "successes", "return_sum", "transitions", "reward_sum"):
        assert torch.equal(resumed.metrics[key], named[key]), key
    assert resumed.metrics["transitions"] > 0
    assert (resumed.metrics["reward_terms"] == 0).all() and (resumed.episode_terms == 0).all()


def test_a_killed_run_resumes_to_the_same_counters(tmp_path: Path, monkeypatch) -> None:
    straight = Trainer(tiny_config("agent=dqn"), tmp_path / "straight")
    straight.train()

    # killed after the first checkpoint (timestep 80)
    train_until_killed(tiny_config("agent=dqn"), tmp_path / "killed", 100, monkeypatch)
    resumed = Trainer(tiny_config("agent=dqn", "resume=true"), tmp_path / "killed")
    assert resumed.timesteps == 80  # the last checkpoint
    # the run's wall clock continues from the checkpoint's, not from zero
    saved = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=False)["counters"]
    assert resumed.wall_clock == saved["wall_clock_s"] > 0
    assert resumed.cpu_clock == saved["cpu_s"] > 0  # and its CPU seconds too
    resumed.train()
    clocks = [e["wall_clock_s"] for e in resumed.evaluations]
    assert clocks[1] >= round(saved["wall_clock_s"], 1) and clocks[1] >= clocks[0]
    cpu = [e["cpu_s"] for e in resumed.evaluations]
    assert cpu[1] >= round(saved["cpu_s"], 1) and cpu[1] >= cpu[0] > 0
    assert (resumed.timesteps, resumed.updates) == (straight.timesteps, straight.updates)
    assert int(resumed.learner.replay.count) == int(straight.learner.replay.count)
    assert [e["timestep"] for e in resumed.evaluations] == [80, 160]
    # the resumed run continues the same random streams: same data, same parameters
    for (name, a), (_, b) in zip(
        straight.agent.state_dict().items(), resumed.agent.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize("agent", ["dqn", "rainbow"])
def test_checkpoint_holds_only_the_filled_replay(agent: str, tmp_path: Path) -> None:
    # a 1M-slot replay with 160 timesteps in it: the checkpoint grows with the data, not the slots
    trainer = Trainer(tiny_config(f"agent={agent}", "training.replay_capacity=1000000"), tmp_path)
    trainer.train()
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    filled = int(trainer.learner.replay.count)
    assert 0 < filled < 1000
    replay = state["learner"]["replay"]
    assert replay["storage"].shape[0] == filled
    replay_bytes = sum(v.numel() * v.element_size() for v in replay["storage"].values(True, True))
    assert replay_bytes < 1_000_000
    agent_bytes = sum(
        v.numel() * v.element_size() for v in state["agent"]["modules"].values()
    )
    # networks and their Adam moments (3 copies) plus well under 1 MB of everything else
    assert (tmp_path / "checkpoint.pt").stat().st_size < 3 * agent_bytes + 1_000_000


# two parts of the mixture (the tiny curriculum has one stage; the currents part lists six)
TWO_PARTS = ("scenario=mix", "~scenario.parts.open_water", "~scenario.parts.currents")
# and the pass event priced over the Imazu part's episodes: the per-part and priced paths (with
# the head-on clearance term, which the best recipe does not use)
MIXED_AND_PRICED = (*TWO_PARTS, "scenario.passed_ahead_penalty=5",
                    "training.constraint.term=passed_ahead", "training.constraint.part=imazu",
                    "scenario.head_on_clearance_penalty=0.5")
# recipe=waters (the best mixed recipe) on every part: traffic that holds on, the rule terms,
# the rule-15 check as a fixed term and the pass constraint; the tiny curriculum's one stage
BEST_MIXED_RECIPE = (*WATERS_SETTINGS, "scenario.parts.currents.options.num_cores=[4]")


SYNC_FREE_CASES = [
    pytest.param("dqn", (), id="dqn"),
    pytest.param("sac", (), id="sac"),
    pytest.param("rainbow", (), id="rainbow"),
    pytest.param("rainbow", MIXED_AND_PRICED, id="rainbow-mix-priced"),
    pytest.param("rainbow", BEST_MIXED_RECIPE, id="rainbow-best-mixed-recipe"),
    pytest.param("ac_iqn", (), id="ac_iqn"),
    pytest.param("iqn", ("agent.prioritized=true", "agent.noisy=true"), id="iqn-prioritized-noisy"),
]
SYNC_FREE_RUNS = pytest.mark.parametrize(("agent", "extra"), SYNC_FREE_CASES)
# on the CPU (every operator counted through a Python hook) plain Rainbow is in the long set:
# the two mixed Rainbow runs take its path and more
SYNC_FREE_RUNS_CPU = pytest.mark.parametrize(
    ("agent", "extra"),
    [pytest.param(*case.values, marks=pytest.mark.slow, id=case.id) if case.id == "rainbow"
     else case for case in SYNC_FREE_CASES],
)  # fmt: skip


def _trainer_filled(agent: str, extra: tuple, device: str, tmp_path: Path) -> tuple[Trainer, Any]:
    """A tiny run of ``agent`` with its replay filled up to learning_starts (40 timesteps), and
    one batched step of the training loop (collect, count, learn) to call."""
    cfg = tiny_config(f"agent={agent}", "env.num_envs=4", "env.max_episode_steps=10",
                      f"device={device}", *extra)  # fmt: skip
    trainer = Trainer(cfg, tmp_path)
    take_the_cuda_code_path(trainer.env.sim)  # on CUDA it already is

    def batched_step() -> None:  # what the training loop does per batched step
        trainer.step_environments()
        trainer.timesteps += cfg.env.num_envs
        trainer.learn()

    for _ in range(10):
        batched_step()
    return trainer, batched_step


@SYNC_FREE_RUNS_CPU
def test_training_steps_make_no_host_read_back(agent: str, extra: tuple, tmp_path: Path) -> None:
    """Counted under ``count_read_backs`` (each operator through a Python hook, about 50 times
    the step's own time), so the window is as short as still holds what a step can do: five
    episodes at least per environment (10-step limit), so resets, each part of a mixture drawn,
    target copies (every 50 timesteps) and the policy average's start (timestep 80)."""
    trainer, batched_step = _trainer_filled(agent, extra, "cpu", tmp_path)
    sim, updates, steps = trainer.env.sim, trainer.updates, 50
    started = []  # per batched step, [E]: the part of each episode started there, else -1
    with count_read_backs() as counts:
        for _ in range(steps):
            batched_step()
            started.append(torch.where(sim.episode_steps == 0, sim.scenario.layout_part, -1))
    assert sum(counts.values()) == 0, dict(counts)
    assert trainer.updates == updates + steps  # 0.25 per timestep, 4 timesteps per step
    started = torch.stack(started)
    assert ((started >= 0).sum(0) >= 5).all()  # every environment reset five times or more
    parts = max(len(trainer.part_names), 1)
    assert set(started[started >= 0].tolist()) == set(range(parts))  # each part drawn
    with count_read_backs() as counts:
        trainer.log_metrics(1.0, None)
    assert counts["tolist"] == 1 and sum(counts.values()) == 1  # one transfer per interval


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@SYNC_FREE_RUNS
def test_cuda_training_steps_never_synchronise(agent: str, extra: tuple, tmp_path: Path) -> None:
    """The CPU test above on a CUDA device, under ``set_sync_debug_mode("error")``: collecting,
    storing, sampling and updating (and, in the mixed recipe, drawing each episode's part,
    traffic, the rule terms and the priced term) never wait on the device."""
    trainer, batched_step = _trainer_filled(agent, extra, "cuda", tmp_path)
    updates = trainer.updates
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(100):
            batched_step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert trainer.updates == updates + 100


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.num_envs=-1", "env.num_envs must be positive"),
        ("curriculum.num_robots=[6]", "robot"),
        ("training.batch_size=0", "training.batch_size must be positive"),
        ("training.initial_epsilon=1.5", "initial_epsilon"),
        ("env.dtype=float16", "env.dtype"),
        ("resume=/nonexistent/run", "no checkpoint"),
    ],
)
def test_bad_configs_fail_before_training(override: str, message: str, tmp_path: Path) -> None:
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        Trainer(tiny_config("agent=dqn", override), tmp_path)
    assert not (tmp_path / "checkpoint.pt").exists()


REPLAY_ONLY = [
    "training.replay_capacity=0",
    "training.batch_size=0",
    "training.learning_starts=-1",
    "training.updates_per_timestep=-1",
    "training.initial_epsilon=2",
]


@pytest.mark.parametrize("override", REPLAY_ONLY)
def test_replay_keys_are_checked_only_for_agents_that_read_them(override: str) -> None:
    """A rollout agent never reads the replay and epsilon keys (docs/training.md), so their
    values do not stop its run; a replay agent's run is refused."""
    with pytest.raises(ConfigError, match=override.split("=")[0]):
        validate(tiny_config(f"agent={first_agent('replay')}", override))
    validate(tiny_config(f"agent={first_agent('rollout')}", override))


def test_memory_estimate_counts_the_learners_data(monkeypatch) -> None:
    """The replay agent's estimate counts its replay, the rollout agent's its rollout (not the
    replay it never builds): 2 training + 2 evaluation environments x 5 robot slots x 9 objects
    of simulator working set, plus 10^6 transitions or 2 x 64 x 5 rollout robot-steps."""
    simulation = 4 * 5 * 9 * validation_module.PAIR_BYTES
    replay = tiny_config(f"agent={first_agent('replay')}", "training.replay_capacity=1000000")
    rollout = tiny_config(f"agent={first_agent('rollout')}", "training.replay_capacity=1000000")
    assert memory_estimate(replay) == simulation + 1_000_000 * 400
    rollout_bytes = 2 * 64 * 5 * validation_module.ROLLOUT_STEP_BYTES
    assert memory_estimate(rollout) == simulation + rollout_bytes
    monkeypatch.setattr(validation_module, "available_memory", lambda device: 2**20)
    with pytest.raises(ConfigError, match="and agent.rollout_steps=64 need about") as error:
        validate(rollout)
    assert "\n" not in str(error.value)


def test_train_log_holds_the_trainers_messages_and_torchrl_stays_quiet(tmp_path: Path) -> None:
    """The run's train.log (Hydra's job logging) records the start line, every
    evaluation and the summary; the terminal shows each message once, and no torchrl INFO line
    ("Initialized LazyTensorStorage ...") on either stream."""
    run = tmp_path / "run"
    result = train_py("agent=dqn", *TINY, f"hydra.run.dir={run}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    start = f"marinenav: training dqn in {run} from timestep 0 to 160; evaluation every 80 from 80"
    assert result.stdout.count(start) == 1
    assert "torchrl" not in result.stdout + result.stderr
    assert "LazyTensorStorage" not in result.stdout + result.stderr
    messages = [line.split("][INFO] - ", 1)[1] for line in
                (run / "train.log").read_text().splitlines() if "][INFO] - " in line]  # fmt: skip
    assert messages[0].startswith(start)
    assert [m.split(" (")[0] for m in messages[1:3]] == [
        "evaluation at timestep 80", "evaluation at timestep 160"]  # fmt: skip
    assert messages[3].startswith("marinenav: finished dqn at timestep 160")
    assert len(messages) == 4


def test_multirun_sweep_gives_each_run_its_own_directory(tmp_path: Path) -> None:
    result = train_py(
        "-m", "agent=dqn,iqn", "seed=0,1", *TINY, f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    runs = sorted(p.parent for p in (tmp_path / "sweep").glob("*/evaluations.jsonl"))
    assert len(runs) == 4
    assert all((run / "checkpoint.pt").is_file() for run in runs)
    # the sweep's table, one row per job in job order, from Hydra's own records
    from marinenav.viz.runs import expand_run_dirs, run_row

    rows = [run_row(run) for run in expand_run_dirs([tmp_path / "sweep"])]
    assert [(row["agent"], row["seed"]) for row in rows] == [
        ("dqn", "0"), ("dqn", "1"), ("iqn", "0"), ("iqn", "1")]  # fmt: skip
    assert all(row["overrides"].startswith(f"agent={row['agent']} seed={row['seed']} ")
               for row in rows)  # fmt: skip
    assert all(row["timesteps"] == "160" and row["last"].endswith("(n=2)") for row in rows)


@pytest.mark.slow  # the long set: sweeps of train.py processes through the optional plugins
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_optional_launchers(launcher: str, tmp_path: Path) -> None:
    module = (
        "hydra_plugins.hydra_joblib_launcher"
        if launcher == "joblib"
        else ("hydra_plugins.hydra_submitit_launcher")
    )
    pytest.importorskip(module)
    extra = ["hydra.launcher.n_jobs=2"] if launcher == "joblib" else [
        "hydra.launcher.timeout_min=10", "hydra.launcher.tasks_per_node=1",
    ]  # fmt: skip
    result = train_py(
        "-m", f"hydra/launcher={launcher}", *extra, "agent=dqn", "seed=0,1", *TINY,
        "training.total_timesteps=80", f"hydra.sweep.dir={tmp_path}/sweep", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(list((tmp_path / "sweep").glob("*/evaluations.jsonl"))) == 2


def test_named_evaluation_set(tmp_path: Path) -> None:
    """evaluation.set=paper evaluates on the original's 60 episodes (10 per stage of the
    paper's curriculum, seed 253) whatever the run's own curriculum (here one stage) and
    curriculum.eval_episodes_per_stage say, with the set's seed as its noise seed whatever
    evaluation.seed says, in the run's precision and step cap; an unknown name is refused at
    start-up."""
    from marinenav.training.evaluation import named_scenarios

    cfg = tiny_config("agent=dqn", "evaluation.set=paper", "evaluation.seed=7")
    trainer = Trainer(cfg, tmp_path)
    written = json.loads((tmp_path / "eval_configs.json").read_text())
    assert written == named_scenarios("paper")
    evaluation_set = trainer.evaluator.evaluation_set
    assert evaluation_set.episodes_per_stage == 10 and evaluation_set.noise_seed == 253
    assert evaluation_set.dtype == torch.float32 and evaluation_set.max_steps == 12
    with pytest.raises(ValueError, match="evaluation.set='huge'"):
        Trainer(tiny_config("agent=dqn", "evaluation.set=huge"), tmp_path / "bad")
    assert not (tmp_path / "bad" / "checkpoint.pt").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_cudagraphs_fail_at_start_up_without_cuda(tmp_path: Path) -> None:
    """``cudagraphs=true`` on a machine without CUDA: one line at start-up, nothing trained."""
    with pytest.raises(ValueError, match="cudagraphs=true needs a CUDA device") as error:
        Trainer(tiny_config("agent=dqn", "cudagraphs=true", "device=auto"), tmp_path)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "checkpoint.pt").exists()
    result = train_py("agent=dqn", "cudagraphs=true", *TINY, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {error.value}"]


def test_gpu_advice_names_the_slow_path_on_cuda_only() -> None:
    """The start-up hint (the trainer prints it on a CUDA device): eager updates where a graph
    could capture them, and few environments; nothing on a CPU, nothing once both are set, no
    ``cudagraphs=true`` for an agent that CUDA graphs refuse. A pure function of the config and
    the device, so it is checked here without a GPU."""
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    default = compose_config("agent=ac_iqn")
    assert gpu_advice(default, cpu) is None
    advice = gpu_advice(default, cuda)
    assert advice.startswith("hint: this GPU run takes the slow path; add cudagraphs=true")
    assert "instead of 16" in advice and "training.total_timesteps=560000" in advice
    assert "e.g. 280)" in advice  # the first number of environments from 256 dividing 560000
    # a budget under 256 timesteps has no room for more environments: no such tip
    small = gpu_advice(compose_config("agent=ac_iqn", "training.total_timesteps=160"), cuda)
    assert "cudagraphs=true" in small and "env.num_envs" not in small
    assert "\n" not in advice
    assert gpu_advice(compose_config("agent=ac_iqn", "cudagraphs=true", "env.num_envs=320"),
                      cuda) is None  # fmt: skip
    only_envs = gpu_advice(compose_config("agent=ac_iqn", "cudagraphs=true"), cuda)
    assert "cudagraphs" not in only_envs and "instead of 16" in only_envs
    only_graphs = gpu_advice(compose_config("agent=ac_iqn", "env.num_envs=320"), cuda)
    assert "cudagraphs=true" in only_graphs and "env.num_envs" not in only_graphs
    # Rainbow's update cannot be one graph (its noise generator): not advised
    assert gpu_advice(compose_config("agent=rainbow", "env.num_envs=320"), cuda) is None


def test_compile_wires_the_env_step_the_acting_network_and_the_update(tmp_path: Path) -> None:
    """``compile=true`` reaches all three parts (nothing is compiled before they first run);
    the default leaves them eager."""
    eager = Trainer(tiny_config("agent=dqn"), tmp_path / "eager")
    assert not eager.env.sim.compiled
    assert eager.agent.policy.selector._compiled_call_impl is None
    assert eager.updater._step_all == eager.updater._step_objectives
    compiled = Trainer(tiny_config("agent=dqn", "compile=true"), tmp_path / "compiled")
    assert compiled.env.sim.compiled
    assert compiled.agent.policy.selector._compiled_call_impl is not None
    assert compiled.updater._step_all != compiled.updater._step_objectives  # the compiled one


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("agent", ["dqn", "sac"])
def test_compiled_training_steps_do_not_recompile(agent: str, tmp_path: Path) -> None:
    """With ``compile=true`` the steady-state loop (act, step and reset, store, update) makes
    no new graph and no host read after the first compiled update."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    cfg = tiny_config(f"agent={agent}", "compile=true", "env.num_envs=4",
                      "env.max_episode_steps=20")  # fmt: skip
    trainer = Trainer(cfg, tmp_path)

    def batched_step() -> None:
        trainer.step_environments()
        trainer.timesteps += cfg.env.num_envs
        trainer.learn()

    for _ in range(12):  # learning starts at 40 timesteps (step 10), then one update per step
        batched_step()
    graphs = counters["stats"]["unique_graphs"]
    updates = trainer.updates
    with (torch._dynamo.config.patch(error_on_recompile=True),
          count_read_backs(operators=False) as reads):  # fmt: skip
        for _ in range(40):  # episodes end (20 steps) and restart on the way
            batched_step()
    assert counters["stats"]["unique_graphs"] == graphs
    assert trainer.updates == updates + 40
    assert sum(reads.values()) == 0, dict(reads)


def test_a_mixture_logs_each_part_by_the_part_its_episodes_ran_in(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config("agent=dqn", *TWO_PARTS, "env.max_episode_steps=30"), tmp_path)
    assert trainer.part_names == ["harbour", "imazu"]
    sim, step = trainer.env.sim, trainer.env.step_and_reset
    ran: list[tuple[torch.Tensor, torch.Tensor]] = []  # (the running episodes' parts, done)

    def step_noting_the_part(step_input):
        part = sim.scenario.layout_part.clone()
        out, following = step(step_input)
        ran.append((part, out.get("done").reshape(-1)))  # the environment's own [E, 1]
        return out, following

    trainer.env.step_and_reset = step_noting_the_part
    trainer.train()

    E, start = trainer.cfg.env.num_envs, 0
    totals = logged_scalars(tmp_path, "train/episodes")
    success = logged_scalars(tmp_path, "train/success_rate")
    progress = logged_scalars(tmp_path, "train/reward_progress")
    parts = {name: {key: logged_scalars(tmp_path, f"train/{name}/{key}")
                    for key in ("episodes", "success_rate", "reward_progress")}
             for name in trainer.part_names}  # fmt: skip
    for timestep, episodes in totals.items():
        end = timestep // E
        for k, name in enumerate(trainer.part_names):  # counted by the part they ran in
            ended = sum(int((done & (part == k)).sum()) for part, done in ran[start:end])
            assert parts[name]["episodes"][timestep] == ended
        assert sum(parts[name]["episodes"][timestep] for name in parts) == episodes
        if episodes:  # the parts add up to the whole
            for key, whole in (("success_rate", success), ("reward_progress", progress)):
                total = sum(parts[name][key][timestep] * parts[name]["episodes"][timestep]
                            for name in parts if parts[name]["episodes"][timestep])  # fmt: skip
                assert total == pytest.approx(whole[timestep] * episodes, rel=1e-9, abs=1e-12)
        start = end
    assert all(sum(parts[name]["episodes"].values()) > 0 for name in parts)
