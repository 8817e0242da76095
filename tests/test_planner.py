"""Planner files (the original's trained TorchScript planners and our exports, in every format)
through the one loader, evaluated by the batched evaluator, checked against values recorded once
by the one-episode, one-robot-at-a-time loop of ``benchmarks/sequential_evaluation.py``.

The recording switched the perception noise off, used SAC's mean action and IQN's midpoint
taus, so both loops are deterministic and must agree exactly (up to float64 round-off in the
returns)."""

from __future__ import annotations

import copy
import json
import math
import sys
import warnings
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marinenav.agents import AGENT_NAMES, agent_class, make_agent
from marinenav.evaluate import evaluate_planner, main
from marinenav.planner import PlannerLoadError, PlannerPolicy, load_planner, planner_policy
from marinenav.planner.convention import example_inputs, input_names, planner_file_name
from marinenav.planner.export import export_torchscript
from marinenav.training.evaluation import EvaluationSet, named_scenarios
from tests.agent_utils import planner_observation
from tests.export_utils import pt2_agents

DATA = Path(__file__).parent / "data"
PRETRAINED = DATA / "pretrained"
RECORDED = json.loads((DATA / "planner_metrics.json").read_text())


def recorded_scenarios() -> list[dict]:
    """The recording's scenarios: the paper set's first episodes of every stage, noise off."""
    k = RECORDED["episodes_per_stage"]
    full = named_scenarios("paper")
    chosen = [copy.deepcopy(full[s * 10 + i]) for s in range(6) for i in range(k)]
    for scenario in chosen:
        perception = scenario["robots"]["perception"]
        n = len(perception["pos_std"])
        perception.update(pos_std=[0.0] * n, vel_std=[0.0] * n, r_mean_ratio=[1.0] * n)
    return chosen


@pytest.fixture(scope="module")
def scenarios() -> list[dict]:
    return recorded_scenarios()


@pytest.mark.parametrize("model_type", ["AC_IQN", "DDPG", "DQN", "IQN", "SAC"])
def test_original_planners_match_the_sequential_loop(model_type: str, scenarios) -> None:
    policy = planner_policy(
        PRETRAINED / f"traced_{model_type}_model.pt", sac_action="mean", taus="midpoints"
    )
    assert policy.agent_type == model_type.lower()  # told by the original's file name
    recorded = EvaluationSet(scenarios, episodes_per_stage=RECORDED["episodes_per_stage"])
    metrics = evaluate_planner(policy, recorded)
    expected = RECORDED["planners"][model_type]
    got = metrics["episodes"]
    assert got["success"] == [e["success"] for e in expected]
    # Arrivals agree to round-off. A failed episode can run 1000 steps (SAC's mean action
    # circles), where batch-1 vs batched float64 matmul round-off grows until a collision comes
    # a few steps earlier or later: for those only the outcome is compared.
    arrived = [i for i, e in enumerate(expected) if e["success"]]
    for key in ("return", "time", "energy"):
        torch.testing.assert_close(
            torch.tensor([got[key][i] for i in arrived], dtype=torch.float64),
            torch.tensor([expected[i][key] for i in arrived], dtype=torch.float64),
            rtol=1e-6, atol=1e-6,
        )  # fmt: skip
    k = RECORDED["episodes_per_stage"]
    for stage in range(6):
        block = [e["success"] for e in expected[stage * k : (stage + 1) * k]]
        assert metrics[f"eval/success_rate_stage{stage}"] == sum(block) / k
    low, high = metrics["ci95"]["success_rate"]
    assert low <= metrics["eval/success_rate"] <= high


@pytest.mark.parametrize("model_type", ["AC_IQN", "DQN"])
def test_compaction_leaves_results_unchanged(model_type: str) -> None:
    """With noise on: running the policy only on the rows still acting gives the same episodes
    as running it on every slot until the slowest episode ends."""
    one_per_stage = EvaluationSet(named_scenarios("paper")[::10], episodes_per_stage=1)
    path = PRETRAINED / f"traced_{model_type}_model.pt"
    compact = evaluate_planner(planner_policy(path), one_per_stage, compact=True)
    full = evaluate_planner(planner_policy(path), one_per_stage, compact=False)
    assert compact["episodes"]["success"] == full["episodes"]["success"]
    torch.testing.assert_close(
        torch.tensor(compact["episodes"]["return"]), torch.tensor(full["episodes"]["return"]),
        rtol=1e-9, atol=1e-9,
    )  # fmt: skip


@pytest.mark.parametrize("model_type", ["IQN", "SAC", "DQN"])
def test_blocked_planner_calls_equal_one_call(model_type: str) -> None:
    """A batch run in blocks of robots (so the activations stay in cache) gives the actions of
    one call on the whole batch, random taus and SAC's sampling noise included: the stream is
    drawn for the whole batch before the blocks."""
    gen = torch.Generator().manual_seed(3)
    n = 100
    td = TensorDict({
        ("agents", "self_state"): torch.randn(n, 7, generator=gen, dtype=torch.float64) * 10,
        ("agents", "objects"): torch.randn(n, 5, 5, generator=gen, dtype=torch.float64) * 5,
        ("agents", "objects_mask"): torch.rand(n, 5, generator=gen) < 0.6,
    }, batch_size=[n])  # fmt: skip
    path = PRETRAINED / f"traced_{model_type}_model.pt"
    whole = planner_policy(path, seed=5, block_rows=10**9)
    blocked = planner_policy(path, seed=5, block_rows=7 * 32 if model_type == "IQN" else 7)
    assert whole.block_robots >= n and blocked.block_robots == 7  # 15 blocks, the last short
    a = whole(td.clone())["agents", "action"]
    b = blocked(td.clone())["agents", "action"]
    assert a.shape == b.shape == ((n, 2) if model_type == "SAC" else (n,))
    torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="block_rows"):
        planner_policy(path, block_rows=0)


def test_sampling_planners_draw_from_their_stream() -> None:
    """SAC samples and IQN draws taus by default, from a seeded stream: same seed, same
    actions; another seed, other actions; the mean action is the noise-free squash."""
    gen = torch.Generator().manual_seed(0)
    td = TensorDict({
        ("agents", "self_state"): torch.randn(4, 3, 7, generator=gen, dtype=torch.float64) * 10,
        ("agents", "objects"): torch.zeros(4, 3, 5, 5, dtype=torch.float64),
        ("agents", "objects_mask"): torch.zeros(4, 3, 5, dtype=torch.bool),
    }, batch_size=[4, 3])  # fmt: skip
    for model_type in ("SAC", "IQN"):
        path = PRETRAINED / f"traced_{model_type}_model.pt"
        a = planner_policy(path, seed=1)(td.clone())["agents", "action"]
        b = planner_policy(path, seed=1)(td.clone())["agents", "action"]
        c = planner_policy(path, seed=2)(td.clone())["agents", "action"]
        assert torch.equal(a, b) and not torch.equal(a, c)
        assert a.shape == ((4, 3, 2) if model_type == "SAC" else (4, 3))
    module, name, _ = load_planner(PRETRAINED / "traced_SAC_model.pt")
    mean = planner_policy(PRETRAINED / "traced_SAC_model.pt", sac_action="mean")(td.clone())
    mu, _ = module((td["agents", "self_state"].flatten(0, 1), td["agents", "objects"].flatten(0, 1),
                    td["agents", "objects_mask"].flatten(0, 1).double()))  # fmt: skip
    torch.testing.assert_close(
        mean["agents", "action"], ((2 / math.pi) * torch.atan(mu)).view(4, 3, 2)
    )


def test_a_cvar_level_scales_the_taus_the_caller_feeds() -> None:
    """``cvar=0.25``: the original IQN planner is called at ``0.25 *`` the midpoint fractions,
    and its action is the argmax of the mean of those quantiles (written out); the level changes
    some choices; levels outside (0, 1] and a level for a planner without taus are refused."""
    gen = torch.Generator().manual_seed(4)
    n = 64
    state = (torch.randn(n, 7, generator=gen, dtype=torch.float64) * 10,
             torch.randn(n, 5, 5, generator=gen, dtype=torch.float64) * 5,
             torch.rand(n, 5, generator=gen) < 0.6)  # fmt: skip
    td = TensorDict({("agents", key): x for key, x in
                     zip(("self_state", "objects", "objects_mask"), state, strict=True)}, [n])
    path = PRETRAINED / "traced_IQN_model.pt"
    module, _, _ = load_planner(path)
    midpoints = ((torch.arange(32, dtype=torch.float64) + 0.5) / 32).expand(n, 32)
    with torch.no_grad():
        quantiles = module((state[0], state[1], state[2].double()), 0.25 * midpoints)
    averse = planner_policy(path, taus="midpoints", cvar=0.25)(td.clone())["agents", "action"]
    neutral = planner_policy(path, taus="midpoints")(td.clone())["agents", "action"]
    assert torch.equal(averse, quantiles.mean(dim=-2).argmax(dim=-1))
    assert not torch.equal(averse, neutral)
    for level in (0.0, 1.5):
        with pytest.raises(ValueError, match="cvar must be in"):
            planner_policy(path, cvar=level)
    with pytest.raises(ValueError, match="cvar is for planners of a return distribution"):
        planner_policy(PRETRAINED / "traced_DQN_model.pt", cvar=0.5)


@pytest.mark.parametrize("name", ["ac_iqn", "dqn", "rainbow"])
def test_our_exports_load_through_the_same_loader(name: str, tmp_path: Path) -> None:
    """Our exported file acts as the live agent's deterministic policy does."""
    agent = make_agent(name, seed=3)
    path = export_torchscript(agent, tmp_path / "anything.pt")  # type from the metadata
    policy = planner_policy(path)
    assert policy.agent_type == name
    gen = torch.Generator().manual_seed(1)
    mask = torch.rand(8, 5, generator=gen) < 0.5
    obs = {
        ("agents", "self_state"): torch.randn(8, 7, generator=gen) * 5,
        ("agents", "objects"): torch.randn(8, 5, 5, generator=gen) * mask.unsqueeze(-1),
        ("agents", "objects_mask"): mask,
    }
    ours = policy(TensorDict(obs, batch_size=[8]))["agents", "action"]
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        live = agent.policy(TensorDict(obs, batch_size=[8]))["agents", "action"]
    if name == "ac_iqn":
        torch.testing.assert_close(ours, live, rtol=0, atol=1e-5)
    else:
        assert (ours == live).float().mean() >= 0.875  # float32 vs float64 near-ties aside


def test_loader_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no planner file"):
        load_planner(tmp_path / "missing.pt")
    bad = tmp_path / "traced_DQN_model.pt"
    bad.write_bytes(b"not a model")
    with pytest.raises(PlannerLoadError, match=str(bad)):
        load_planner(bad)
    unnamed = tmp_path / "model.pt"
    unnamed.write_bytes((PRETRAINED / "traced_DQN_model.pt").read_bytes())
    with pytest.raises(PlannerLoadError, match="--agent-type"):
        load_planner(unnamed)
    assert load_planner(unnamed, "DQN")[1] == "dqn"
    with pytest.raises(PlannerLoadError, match="unknown agent type"):
        load_planner(unnamed, "ppo")
    assert planner_file_name("AC-IQN") == "traced_AC_IQN_model.pt"


@pytest.mark.parametrize(
    ("file", "agent_type", "reason"),
    [
        ("traced_AC_IQN_model.pt", "dqn", "its file name says ac_iqn"),
        ("traced_IQN_model.pt", "DQN", "its file name says iqn"),
        ("traced_SAC_model.pt", "mappo", "its file name says sac"),
        ("model.pt:AC_IQN", "dqn", "its outputs for one robot are (1, 2), dqn's are (1, 25)"),
        ("model.pt:DQN", "rainbow",
         "its outputs for one robot are (1, 25), rainbow's are (1, 25, *)"),
        ("model.pt:SAC", "ddpg",
         "its outputs for one robot are (1, 2) and (1, 2), ddpg's are (1, 2)"),
        ("model.pt:DQN", "iqn",
         "it does not take iqn's inputs (self_state, object_states, object_masks, taus)"),
        ("model.pt:IQN", "ac_iqn",
         "it does not take ac_iqn's inputs (self_state, object_states, object_masks)"),
    ],
)  # fmt: skip
def test_an_agent_type_that_does_not_fit_the_file_is_refused(
    file: str, agent_type: str, reason: str, tmp_path: Path, capsys
) -> None:
    """The original's planners, by their names or (renamed) by what they compute."""
    if ":" in file:  # the original's file under a name that tells nothing
        file, model_type = file.split(":")
        path = tmp_path / file
        path.write_bytes((PRETRAINED / f"traced_{model_type}_model.pt").read_bytes())
    else:
        path = PRETRAINED / file
    name = agent_type.lower()
    message = f"{path} does not fit agent type {name} (agent_type / --agent-type): {reason}"
    with pytest.raises(PlannerLoadError) as error:
        load_planner(path, agent_type)
    assert str(error.value) == message
    out = tmp_path / "metrics.json"
    args = ["--planner", str(path), "--agent-type", agent_type, "--set", "paper", "--out", str(out)]
    assert main(args) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not out.exists()


def test_an_export_is_told_by_its_record_not_its_name(tmp_path: Path) -> None:
    """An export keeps its recorded type under another agent's file name (TD3 saved as the
    C++ planner's DDPG file); a type the record contradicts is refused, as is a file whose name
    and outputs both say another agent when nothing else is given."""
    td3 = export_torchscript(make_agent("td3", seed=3), tmp_path / "traced_DDPG_model.pt")
    assert load_planner(td3)[1] == "td3"
    assert load_planner(td3, "td3")[1] == "td3"
    with pytest.raises(PlannerLoadError) as error:
        load_planner(td3, "ddpg")
    assert str(error.value) == (
        f"{td3} does not fit agent type ddpg (agent_type / --agent-type): its "
        "marinenav_export.json record says td3"
    )
    disguised = tmp_path / "traced_DQN_model.pt"  # no record: the name is all it says
    disguised.write_bytes((PRETRAINED / "traced_AC_IQN_model.pt").read_bytes())
    with pytest.raises(PlannerLoadError) as error:
        load_planner(disguised)
    assert str(error.value) == (
        f"{disguised} does not fit agent type dqn (its file name): its outputs for one robot "
        "are (1, 2), dqn's are (1, 25)"
    )


def test_command_line_evaluates_a_planner(tmp_path: Path, capsys) -> None:
    scenario_file = tmp_path / "one.json"
    scenario_file.write_text(json.dumps(named_scenarios("paper")[:2]))
    out = tmp_path / "metrics.json"
    code = main(["--planner", str(PRETRAINED / "traced_DDPG_model.pt"), "--scenarios",
                 str(scenario_file), "--out", str(out)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "success_rate" in printed and "(n=2)" in printed
    metrics = json.loads(out.read_text())
    assert metrics["planner"]["agent"] == "ddpg" and len(metrics["episodes"]["success"]) == 2
    assert main(["--planner", str(tmp_path / "none.pt")]) == 2
    assert "no planner file" in capsys.readouterr().err


# --- the other formats: AOTInductor packages (.pt2) and ONNX models -----------------------------

FORMAT_CASES = [pytest.param(name, "onnx", id=f"{name}-onnx") for name in AGENT_NAMES] + [
    pytest.param(*param.values, "pt2", marks=param.marks, id=f"{param.values[0]}-pt2")
    for param in pt2_agents()
]


def observations(shape: tuple[int, ...], seed: int) -> TensorDict:
    """Float64 observations of batch ``shape`` in realistic ranges, bool masks."""
    gen = torch.Generator().manual_seed(seed)
    state = planner_observation(math.prod(shape), gen)
    return TensorDict({
        ("agents", "self_state"): state[0].reshape(*shape, 7),
        ("agents", "objects"): state[1].reshape(*shape, 5, 5),
        ("agents", "objects_mask"): state[2].reshape(*shape, 5) > 0.5,
    }, batch_size=shape)  # fmt: skip


@pytest.mark.parametrize(("name", "fmt"), FORMAT_CASES)
def test_every_format_acts_as_the_torchscript_file(name: str, fmt: str, exports) -> None:
    """Through the one loader, the same agent's ONNX model or .pt2 package is the same
    ``PlannerPolicy``: the same agent type and record, outputs to 1e-9 (float64) at any batch,
    and the same actions under the planner's own rules (random taus, sampled noise: the same
    seed gives the same draws) and the deterministic ones, on a ``[4, 5]`` batch run in
    blocks."""
    cls = agent_class(name)
    traced, traced_name, traced_record = load_planner(exports(name, "torchscript"))
    module, loaded_name, record = load_planner(exports(name, fmt))
    assert loaded_name == traced_name == name and record == traced_record
    gen = torch.Generator().manual_seed(9)
    for rows in (1, 13):
        state = planner_observation(rows, gen)
        extra = tuple(torch.rand(rows, 32, generator=gen, dtype=torch.float64)
                      for _ in cls.export_extra_inputs)  # fmt: skip
        with torch.no_grad():
            got, want = module(state, *extra), traced(state, *extra)
        assert isinstance(got, tuple) == isinstance(want, tuple)
        for g, w in zip(*(o if isinstance(o, tuple) else (o,) for o in (got, want)), strict=True):
            assert g.dtype == torch.float64 and g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9)
    obs = observations((4, 5), seed=10)
    for rules in ({}, {"taus": "midpoints", "sac_action": "mean"}):
        actions = [
            PlannerPolicy(m, name, record, seed=4, block_rows=7, **rules)(obs.clone())[
                "agents", "action"
            ]
            for m in (traced, module)
        ]  # fmt: skip
        if cls.action_kind == "discrete":
            assert actions[0].dtype == actions[1].dtype == torch.int64
            assert torch.equal(*actions), rules
        else:
            assert actions[1].shape == (4, 5, 2)
            torch.testing.assert_close(actions[1], actions[0], rtol=0, atol=1e-9)
    empty = observations((0,), seed=11)
    policy = PlannerPolicy(module, name, record)
    assert policy(empty)["agents", "action"].shape[0] == 0


def test_a_package_refuses_inputs_of_other_shapes(exports) -> None:
    """The compiled code would read inputs of another shape out of bounds: the loaded package
    checks them first (and the package itself refuses another number of inputs)."""
    module, _, _ = load_planner(exports("sac", "pt2"))
    state = planner_observation(3, torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert module(state)[0].shape == (3, 2)
        with pytest.raises(RuntimeError, match=r"sizes \(\(7,\), \(5, 5\), \(5,\)\)"):
            module((state[0][:, :6], state[1], state[2]))
        with pytest.raises(RuntimeError, match="after one batch"):
            module((state[0], state[1][:2], state[2]))
        with pytest.raises(RuntimeError):
            module.package.loader.run([*state, state[2]])  # four inputs to a three-input program


def test_broken_files_of_each_format_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    for suffix, what in ((".pt2", "is not an AOTInductor package"),
                         (".onnx", "is not an ONNX planner")):  # fmt: skip
        bad = tmp_path / f"DQN_model{suffix}"
        bad.write_bytes(b"not a model")
        with pytest.raises(PlannerLoadError, match=f"{bad} {what}"):
            load_planner(bad)


def test_onnx_files_without_a_record_or_a_dynamic_batch(tmp_path: Path, exports) -> None:
    """An ONNX model without our record is told by ``agent_type`` and checked like a
    TorchScript file (its inputs, its outputs' shapes); one with a fixed batch (an export of
    before) is refused with the reason."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    model = onnx.load(str(exports("dqn", "onnx")))
    del model.metadata_props[:]
    bare = tmp_path / "planner.onnx"
    onnx.save(model, str(bare))
    with pytest.raises(PlannerLoadError, match="cannot tell the agent type"):
        load_planner(bare)
    assert load_planner(bare, "DQN")[1:] == ("dqn", {})
    with pytest.raises(PlannerLoadError, match=r"it does not take iqn's inputs \(self_state, "
                       r"object_states, object_masks, taus\)"):  # fmt: skip
        load_planner(bare, "iqn")
    with pytest.raises(PlannerLoadError, match=r"outputs for one robot are \(1, 25\), rainbow's"):
        load_planner(bare, "rainbow")
    with pytest.raises(PlannerLoadError, match="record says sac"):
        load_planner(exports("sac", "onnx"), "mappo")

    from marinenav.planner.export import FlatInputs, export_module

    fixed = tmp_path / "fixed.onnx"
    agent = make_agent("dqn", seed=0)
    with warnings.catch_warnings():  # the TorchScript-based exporter announces its deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(FlatInputs(export_module(agent)), example_inputs("dqn"), str(fixed),
                          input_names=list(input_names("dqn")), dynamo=False)  # fmt: skip
    with pytest.raises(PlannerLoadError, match="fixed batch size in self_state, object_states, "
                       "object_masks .* export it again"):  # fmt: skip
        load_planner(fixed, "dqn")


def test_onnx_planners_need_onnx_runtime(monkeypatch: pytest.MonkeyPatch, exports) -> None:
    path = exports("dqn", "onnx")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises
    with pytest.raises(PlannerLoadError, match="pip install onnxruntime"):
        load_planner(path)
