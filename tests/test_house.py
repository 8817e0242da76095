"""One source of each fact: the shared vocabulary (marinenav/keys.py), which the environment
speaks and no module copies; and tests that share helpers through helper modules
(tests/*_utils.py), never by importing another test module."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from marinenav.envs import MarineNavEnv
from marinenav.keys import DTYPES, GROUP, OBSERVATION_KEYS, dtype_named
from tests import docs_utils
from tests.run_utils import compose_config

ROOT = Path(__file__).resolve().parents[1]

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "marinenav"


def test_the_environment_observes_the_shared_fields_in_the_shared_group() -> None:
    env = MarineNavEnv(num_envs=2, num_robots=2, num_obstacles=1, num_cores=1, seed=0)
    observation = env.observation_spec[GROUP]
    assert set(OBSERVATION_KEYS) <= set(observation.keys())
    td = env.reset()
    assert td[GROUP].batch_size == torch.Size([2, 2])  # E environments, R robot slots
    assert td[GROUP, OBSERVATION_KEYS[0]].shape[-1] == 7  # self state: goal, velocity, thrusts


def test_no_module_redefines_the_vocabulary() -> None:
    """``GROUP``, ``OBSERVATION_KEYS`` and the dtype-name conversion live in keys.py only."""
    copies = []
    pattern = re.compile(r'^\s*(_?GROUP\s*=\s*"agents"|_?OBSERVATION_KEYS\s*=\s*\(\s*"self_state"'
                         r'|.*torch\.float64 if .*== "float64")', re.M)  # fmt: skip
    for path in PACKAGE.rglob("*.py"):
        if path.name != "keys.py" and pattern.search(path.read_text()):
            copies.append(str(path.relative_to(PACKAGE)))
    assert copies == []


# string literals equal to a field name of keys.py that name something else (module ->
# literals): the planner file's input and output names (the C++ node's), TorchRL's default
# action key of a foreign environment, Gymnasium's info dict, metric names of a report
OTHER_MEANINGS = {
    "planner/convention.py": {"self_state"},  # the exported file's first input
    "agents/ac_iqn.py": {"action"},  # export_outputs: the exported file's output
    "agents/ddpg.py": {"action"},
    "agents/td3.py": {"action"},
    "policy/action_space.py": {"action"},  # TorchRL's key of an unnamed leaf spec
    "envs/gym_adapter.py": {"active", "reward_terms"},  # Gymnasium's info dict
    "training/trainer.py": {"reward_terms", "failures"},  # the logged sums of a run
    "training/evaluation.py": {"energy"},  # a per-episode metric
    "viz/curves.py": {"energy"},  # the eval/ metric
}


def _string_literals(path: Path) -> set[str]:
    """The one-line string literals of a module's code (not its docstrings or comments)."""
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return {t.string[1:-1] for t in tokens
            if t.type == tokenize.STRING and t.string[:1] in "'\"" and t.start[0] == t.end[0]}


def test_the_tensordict_fields_are_named_in_keys_py_only() -> None:
    """The group, the robot's fields and their nested keys are spelt once, in keys.py: no other
    module writes ``"agents"`` or a field name as a string (the simulator's dicts, keyed by its
    dataclasses' field names, aside), so a policy, the evaluator, the learners and the
    environment cannot drift apart, and no name has a second meaning (``OTHER_MEANINGS``)."""
    import marinenav.keys as keys

    fields = {value for name, value in vars(keys).items() if name.isupper() and
              isinstance(value, str) and name not in ("DTYPES",)}  # fmt: skip
    assert {"agents", "self_state", "action", "reward", "done", "active"} <= fields
    assert keys.POLICY_IN_KEYS == tuple((keys.GROUP, f) for f in keys.OBSERVATION_KEYS)
    assert keys.ACTION_KEY == (keys.GROUP, keys.ACTION)
    spelt = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "keys.py" or module.startswith("sim/"):
            continue
        found = (_string_literals(path) & fields) - OTHER_MEANINGS.get(module, set())
        if found:
            spelt[module] = sorted(found)
    assert spelt == {}


def test_dtype_names() -> None:
    assert dtype_named("float64") is torch.float64 and set(DTYPES) == {"float32", "float64"}
    expected = r"dtype must be one of \['float32', 'float64'\], got 'half'"
    with pytest.raises(ValueError, match=expected):
        dtype_named("half")


def test_no_test_module_imports_another() -> None:
    pattern = re.compile(r"^\s*(from|import) tests\.test_", re.M)
    importing = [path.name for path in TESTS.glob("*.py") if pattern.search(path.read_text())]
    assert importing == []


def _yaml_values(path: Path) -> dict:
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    values.pop("defaults", None)
    return values


def _defaults(config_class: type) -> dict:
    import dataclasses

    return {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING
                     else f.default) for f in dataclasses.fields(config_class)}  # fmt: skip


def test_run_values_live_only_in_the_yaml_files() -> None:
    """The run schemas carry types, not values (every field MISSING), so a value is
    written once, in conf/; the composed default config has no MISSING key."""
    import dataclasses

    from omegaconf import MISSING, OmegaConf

    from marinenav.training import config

    for schema in (config.EnvConf, config.CurriculumConf, config.TrainingConf,
                   config.ConstraintConf, config.EvaluationConf, config.LoggerConf,
                   config.CheckpointConf):  # fmt: skip
        assert all(f.default is MISSING for f in dataclasses.fields(schema)), schema
    for overrides in ([], ["recipe=paper"], ["scenario=harbour", "agent=sac"]):
        assert not OmegaConf.missing_keys(compose_config(*overrides))


@pytest.mark.parametrize("kind", ["agent", "scenario"])
def test_agent_and_layout_options_are_stated_once(kind: str) -> None:
    """An agent's or a layout's options have their defaults in its dataclass (used from Python
    too); its YAML file selects that schema and repeats none of them. What a file may state: a
    value the dataclass requires (``???`` there: the mix's parts), a value interpolated from
    another group (the random layout follows the curriculum), and a ``_global_`` file's other
    groups (a layout's slot needs)."""
    from marinenav.agents import agent_class
    from marinenav.scenarios import layout_class

    for path in sorted((ROOT / "conf" / kind).glob("*.yaml")):
        values = _yaml_values(path)
        if kind == "scenario" and "scenario" in values or "env" in values:  # a _global_ file
            values = values.get("scenario", {})
        assert f"/schema/{kind}/{path.stem}@" in path.read_text(), path.name
        cls = agent_class(path.stem).config_class if kind == "agent" else layout_class(
            path.stem
        ).Config
        defaults = _defaults(cls)
        for key, value in values.items():
            if key == "name" and value == path.stem:
                continue
            if isinstance(value, str) and value.startswith("${"):
                continue
            assert defaults[key] == "???", (
                f"{path.name} repeats {key}={value!r}: its default lives in {cls.__name__}"
            )


def test_the_paper_curriculum_is_one_schedule() -> None:
    from marinenav.scenarios import RandomLayout
    from marinenav.sim.curriculum import DEFAULT_TRAINING_SCHEDULE, CurriculumSchedule

    values = _yaml_values(ROOT / "conf" / "curriculum" / "paper.yaml")
    values.pop("eval_episodes_per_stage")
    assert CurriculumSchedule(**values) == DEFAULT_TRAINING_SCHEDULE
    assert RandomLayout().schedule == DEFAULT_TRAINING_SCHEDULE


# A section label of the specification the code was first written from (not in the repository):
# "spec A7", "quirk A12.8", "Spec C4", "spec Part A", "quirks of B6", or a bare label in
# parentheses, "(A7)", "(B2, B9)", "(the trainer's rule, A8)", and "the C7 convention", "A5.3's".
# Labels are A0-A13, B0-B13, C0-C13 with optional sub-sections; "C51" and "B023" are not labels.
_LABEL = r"[A-C](?:1[0-3]|\d)(?:\.\d+)*(?!\w)"
_EXTERNAL_CITATION = re.compile(
    rf"\b(?:[Ss]pec|SPEC|[Qq]uirks?|QUIRKS?)\s+(?:of\s+)?(?:Part\s+[A-C]\b|{_LABEL})"
    rf"|\(\s*{_LABEL}|[,;/]\s*{_LABEL}\s*\)|\bthe\s+{_LABEL}\s|\b{_LABEL}'s\b|\[QUIRKS?\]"
)
# a citation of the repository's own documentation: a page and a section title in quotes
_DOC_CITATION = re.compile(r'\b(docs/[\w/.-]+\.md|README\.md),\s*(?:#\s*)?"([^"]*)"')
_CODE_ROOTS = ("marinenav", "conf", "benchmarks", "train.py")
_TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".toml", ".cfg", ".sh", ".cpp", ".h"}


def _code_files(*roots: str) -> list[Path]:
    files = []
    for root in roots:
        path = ROOT / root
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [f for f in found if f.is_file() and f.suffix in _TEXT_SUFFIXES]
    return files


def _external_citations(text: str) -> list[tuple[int, str]]:
    """``(line, match)`` of every citation of the external specification in ``text``; a docs
    citation's quoted section title is skipped, so ``docs/simulator.md, "Reward (A7)"`` passes."""
    text = _DOC_CITATION.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(0))
            for m in _EXTERNAL_CITATION.finditer(text)]  # fmt: skip


def test_the_citation_pattern_catches_labels_and_nothing_else() -> None:
    cited = [
        "spec A7",
        "(spec B1.4)",
        "quirk A12.8",
        "Spec C4",
        "spec Part A",
        "(A7.3)",
        "(C2)",
        "(B2, B9)",
        "(B7 / B9)",
        "(the trainer's rule, A8)",
        "quirks of B6",
        "in the C7 calling convention",
        "A5.3's test",
        "[QUIRK]",
        "(A5 steps 1-5)",
    ]
    clean = [
        "[E, R]",
        "x[:, 0xA1]",
        "(B, A)",
        "torch.zeros(B, 2)",
        "the C51 projection (C51)",
        "# noqa: B023",
        'docs/simulator.md, "Reward (A7)"',
        '"spec": "C7",',
        "env.action_spec",
        "inside the spec",
        "(A, B, C)",
        "C7_OUTPUT_SHAPES",
    ]
    assert [c for c in cited if not _external_citations(c)] == []
    assert [c for c in clean if _external_citations(c)] == []


def test_no_citation_of_an_external_specification() -> None:
    """Code, config, benchmarks, the docs and the README cite no section of a specification
    that is not in the repository: a fact is said in place or cited from the docs
    (``docs/<page>.md, "Section"``, or a link to a section)."""
    found = [f"{path.relative_to(ROOT)}:{line}: {match}"
             for path in _code_files(*_CODE_ROOTS, "docs", "README.md")
             for line, match in _external_citations(path.read_text())]  # fmt: skip
    assert found == []


def test_exported_files_name_their_calling_convention_by_a_doc_section() -> None:
    """The ``spec`` record of an exported planner file is ``docs/<page>.md#<anchor>``, a
    section of the docs that describes the C++ node's call."""
    from marinenav.planner.export import metadata
    from marinenav.training.factory import build_agent
    from tests.run_utils import tiny_config

    spec = metadata(build_agent(tiny_config("agent=dqn").agent, "cpu", run_seed=0))["spec"]
    page, _, anchor = spec.partition("#")
    assert page.startswith("docs/") and (ROOT / page).is_file(), spec
    assert anchor in [docs_utils.anchor(h) for h in docs_utils.headings(ROOT / page)], spec


def test_tests_cite_behaviour_not_issue_numbers() -> None:
    """A test says what it checks; an issue number points at a tracker the reader may not
    have."""
    pattern = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
    found = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for path in sorted((ROOT / "tests").glob("*.py"))
             for text in [path.read_text()] for m in pattern.finditer(text)]  # fmt: skip
    assert found == []


def test_docs_citations_name_existing_sections() -> None:
    """Every ``docs/<page>.md, "Section"`` (or ``README.md, "Section"``) in the code, config,
    benchmarks and tests names a page that exists and one of its headings (the heading itself,
    or the part before its parenthesis or colon: ``"Faithful quirks"``, ``"Recipes"``)."""
    wrong = []
    for path in _code_files(*_CODE_ROOTS, "tests"):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        for m in _DOC_CITATION.finditer(text):
            page, title = ROOT / m.group(1), " ".join(re.sub(r"\n\s*#", " ", m.group(2)).split())
            headings = docs_utils.headings(page) if page.is_file() else []
            if not any(h == title or h.startswith((title + " (", title + ":")) for h in headings):
                line = text.count("\n", 0, m.start()) + 1
                wrong.append(f'{path.relative_to(ROOT)}:{line}: {m.group(1)}, "{title}"')
    assert wrong == []


def test_a_run_builds_its_agent_in_the_factory_and_reads_it_back_the_same(tmp_path) -> None:
    """The trainer's agent is ``build_agent(cfg.agent, run_seed=cfg.seed)``: networks seeded
    with the run seed + 100 (two seeds give different networks); ``load_agent`` of its
    checkpoint builds the same agent with the same parameters."""
    from marinenav.training.checkpoint import load_agent
    from marinenav.training.factory import AGENT_SEED_OFFSET, build_agent
    from marinenav.training.trainer import Trainer
    from tests.run_utils import tiny_config

    cfg = tiny_config("agent=dqn", "seed=3")
    trainer = Trainer(cfg, tmp_path / "run")
    try:
        built = build_agent(cfg.agent, "cpu", run_seed=3)
        assert trainer.agent.config.seed == built.config.seed == 3 + AGENT_SEED_OFFSET
        for mine, theirs in zip(trainer.agent.parameters(), built.parameters(), strict=True):
            assert torch.equal(mine, theirs)
        other = build_agent(cfg.agent, "cpu", run_seed=4)
        assert not torch.equal(next(other.parameters()), next(built.parameters()))
        trainer.save_checkpoint()
    finally:
        trainer.lock.release()
    loaded, config = load_agent(tmp_path / "run")
    assert config["seed"] == 3 and loaded.config.seed == 3 + AGENT_SEED_OFFSET
    for mine, theirs in zip(trainer.agent.parameters(), loaded.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def test_the_old_planner_paths_are_the_planner_packages_own_modules() -> None:
    """The planner files' modules live in ``marinenav/planner/``; their old top-level paths
    (docs/migrating.md, "Old module paths") import as those very modules, so an old import, a
    patch of an attribute and ``python -m marinenav.export`` reach the same code."""
    import importlib

    import marinenav.planner as package
    from marinenav.planner import load

    moved = {"marinenav.export": "marinenav.planner.export",
             "marinenav.planner_convention": "marinenav.planner.convention",
             "marinenav.elementary_atan": "marinenav.planner.elementary_atan"}  # fmt: skip
    for old, new in moved.items():
        assert importlib.import_module(old) is importlib.import_module(new)
    assert {"planner_policy", "PlannerPolicy", "PlannerLoadError", "load_planner"} <= set(
        package.__all__
    )
    assert all(getattr(package, name) is getattr(load, name) for name in package.__all__)


def test_the_simulator_imports_nothing_above_it() -> None:
    """``marinenav.sim`` sits below the scenarios, the checks and the training: importing it
    (in a fresh interpreter) loads no marinenav module outside it but the shared vocabulary
    (angles, files, keys). The encounter situations it classifies live in sim/situation.py,
    and the COLREGs checks read them from there."""
    code = (
        "import sys, marinenav.sim, marinenav.sim.approach;"
        "print(' '.join(m for m in sys.modules if m.startswith('marinenav.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    outside = {m for m in loaded if not m.startswith("marinenav.sim")}
    assert outside <= {"marinenav.angles", "marinenav.files", "marinenav.keys"}, outside
