"""Every ``python`` code block in the README and in ``docs/`` runs as written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_utils import heading_anchors
from tests.run_utils import compose_config, train_py

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{i}")
    for page in PAGES
    for i, code in enumerate(BLOCK.findall(page.read_text()))
]


def test_the_readme_has_examples() -> None:
    assert any("README" in str(p.id) for p in EXAMPLES)


@pytest.mark.parametrize("code", EXAMPLES)
def test_doc_example_runs(code: str) -> None:
    exec(compile(code, "<doc example>", "exec"), {"__name__": "__doc_example__"})


# what runs before the program on a documented line: VAR=value assignments, nice -n N
PREFIX = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:nice -n \d+\s+)?")
# a documented command with a placeholder the reader fills in is not run as written
PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.|\bDATE\b|\bTIME\b")


def doc_commands(page: Path) -> list[str]:
    """Every ``python ...`` command of a page, whitespace collapsed: the lines of its bash
    blocks (``\\`` continuations joined, comments dropped) and its inline code spans (which may
    wrap across lines), with any ``VAR=value`` / ``nice -n N`` prefix removed."""
    text = page.read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            commands.append(line.split(" #")[0])
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    commands += re.findall(r"`([^`]+)`", prose)
    normal = (PREFIX.sub("", " ".join(c.split())) for c in commands)
    return [c for c in normal if c.startswith("python ")]


COMMANDS = sorted({(page.name, c) for page in PAGES for c in doc_commands(page)})
TRAIN_COMMANDS = sorted({
    c for _, c in COMMANDS if c.startswith("python train.py") and not PLACEHOLDER.search(c)
    and "--help" not in c and "--cfg" not in c
})  # fmt: skip


def test_the_readme_shows_training_commands() -> None:
    assert any(command == "python train.py agent=sac" for command in TRAIN_COMMANDS)


@pytest.mark.parametrize("command", TRAIN_COMMANDS)
def test_documented_train_commands_compose_and_validate(command: str) -> None:
    """Every ``python train.py ...`` line of the docs is a valid configuration (the first value
    of a sweep is composed); Hydra's own keys (``hydra/...``) are left to Hydra. A line that
    asks for CUDA graphs, or CUDA, on a machine without CUDA must stop with the documented
    error."""
    check_train_command(command)


def check_train_command(command: str) -> None:
    """Compose and validate the config of ``python train.py ARGS`` (see the test above)."""
    import torch
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from marinenav.training.validation import ConfigError, validate

    parser = OverridesParser.create()

    def first_value(arg: str) -> str:  # a sweep a,b,c composes as a; a list or a dict stays
        override = parser.parse_overrides([arg])[0]
        if not override.is_sweep_override():
            return arg
        return f"{override.get_key_element()}={next(override.sweep_string_iterator())}"

    overrides = [
        first_value(arg) for arg in shlex.split(command)[2:]
        if arg != "-m" and not arg.startswith(("hydra", "\\"))
    ]  # fmt: skip
    cfg = compose_config(*overrides)
    if "cudagraphs=true" in overrides and not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="cudagraphs=true needs a CUDA device"):
            validate(cfg)
    elif "device=cuda" in overrides and not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available on this machine"):
            validate(cfg)
    else:
        validate(cfg)


def run_python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository root, one torch thread, output captured."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def help_sections(text: str) -> dict[str, list[str]]:
    """The ``== Title ==`` sections of a help page: title -> its non-empty lines, stripped."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        title = re.fullmatch(r"== (.+) ==", line.strip())
        if title:
            current = sections.setdefault(title.group(1), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return sections


def test_train_help_lists_agents_recipes_main_keys_and_examples() -> None:
    """``python train.py --help`` is a help page (conf/hydra/help/marinenav.yaml), not
    the raw config: every agent, recipe, curriculum, scenario layout and logger backend is
    listed (each layout with a YAML file), the fast recipe's budgets are those its files
    compose (AC-IQN's 560k and every other agent's among the ones listed), the internal
    ``schema/*`` groups are not, every main key exists in the composed config, and its three
    examples compose and validate."""
    from omegaconf import OmegaConf

    from marinenav.agents import AGENT_NAMES
    from marinenav.scenarios import LAYOUTS
    from marinenav.training.loggers import LOGGER_BACKENDS

    result = train_py("--help", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    page = result.stdout
    assert "schema" not in page and "_target_" not in page
    sections = help_sections(page)
    assert list(sections) == ["Agents (agent=NAME)", "Recipes (recipe=NAME)", "Other groups",
                              "Main keys", "Examples", "After a run"]  # fmt: skip
    listed = [line.split()[0] for line in sections["Agents (agent=NAME)"]]
    assert sorted(listed) == sorted(AGENT_NAMES)
    # a recipe's line: its name, two or more spaces, what it is (continued on lines of prose)
    recipe_lines = {m.group(1): line for line in sections["Recipes (recipe=NAME)"]
                    if (m := re.match(r"(\S+)\s{2,}", line))}  # fmt: skip
    assert sorted(recipe_lines) == sorted(p.stem for p in (ROOT / "conf" / "recipe").glob("*.yaml"))
    groups = {line.split()[0].split("=")[0]: line.split()[0].split("=")[1].split("|")
              for line in sections["Other groups"] if "|" in line}  # fmt: skip
    curricula = sorted(p.stem for p in (ROOT / "conf" / "curriculum").glob("*.yaml"))
    assert sorted(groups["curriculum"]) == curricula
    layouts = sorted(p.stem for p in (ROOT / "conf" / "scenario").glob("*.yaml"))
    assert sorted(groups["scenario"]) == layouts == sorted(LAYOUTS)
    keys_lines = sections["Main keys"]
    backend_line = next(line for line in keys_lines if line.startswith("logger.backend="))
    assert backend_line.split(None, 1)[1].startswith(" | ".join(LOGGER_BACKENDS))
    cfg = compose_config()
    # the fast recipe's budgets as composed: AC-IQN's named, and every agent's among those listed
    budgets = {
        agent: compose_config(f"agent={agent}").training.total_timesteps for agent in AGENT_NAMES
    }
    fast = recipe_lines["fast"]
    assert f"AC-IQN {budgets['ac_iqn'] // 1000}k timesteps" in fast
    listed_budgets = {int(k) * 1000 for k in re.findall(r"(\d+)k\b", fast)}
    assert listed_budgets == set(budgets.values()), (fast, budgets)
    keys = [line.split()[0].split("=")[0] for line in sections["Main keys"]]
    assert len(keys) >= 10
    for key in keys:
        if key.startswith("hydra.") or key.endswith(","):
            continue
        assert OmegaConf.select(cfg, key, default="missing") != "missing", key
    examples = sections["Examples"]
    assert len(examples) == 3 and all(e.startswith("python train.py ") for e in examples)
    for example in examples:
        check_train_command(example)


def test_hydra_help_keeps_hydras_flags_and_groups() -> None:
    """``python train.py --hydra-help`` is Hydra's own page: its template's ``$FLAGS_HELP`` and
    ``$HYDRA_CONFIG_GROUPS`` are filled (train.py fills only the fields a help template uses,
    and ``--help``'s uses none), the launchers and sweepers ours register among the groups."""
    result = train_py("--hydra-help", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    page = result.stdout
    assert "== Flags ==" in page and "--multirun,-m : Run multiple jobs" in page
    groups = dict(line.split(": ", 1) for line in page.splitlines() if line.startswith("hydra/"))
    assert {"joblib", "basic"} <= set(groups["hydra/launcher"].split(", "))
    assert "optuna" in groups["hydra/sweeper"].split(", ")
    assert "marinenav" in groups["hydra/help"].split(", ")
    assert "$" not in page.replace('eval "$(', "")


def program_of(command: str) -> tuple[str, ...] | None:
    """The program a documented command runs, as ``("-m", module[, viz subcommand])`` or
    ``(script,)``; None for ``train.py`` (tested above) and anything else."""
    args = command.split()
    if len(args) > 2 and args[1] == "-m" and args[2].startswith("marinenav"):
        sub = args[3:4] if args[2] == "marinenav.viz" and len(args) > 3 else []
        return ("-m", args[2], *(s for s in sub if not s.startswith("-")))
    if len(args) > 1 and args[1].endswith(".py") and args[1] != "train.py":
        return (args[1],)
    return None


def help_programs() -> list[tuple[str, ...]]:
    """Every program the docs run, every benchmark script and every ``marinenav`` command line
    (the ``viz`` subcommands each)."""
    from marinenav.viz.__main__ import _parser

    subcommands = next(
        action.choices for action in _parser()._actions if hasattr(action, "choices")
        and isinstance(action.choices, dict)
    )  # fmt: skip
    programs = {program_of(c) for _, c in COMMANDS if not PLACEHOLDER.search(c)} - {None}
    programs |= {(str(p.relative_to(ROOT)),) for p in (ROOT / "benchmarks").glob("*.py")}
    programs |= {("-m", "marinenav.evaluate"), ("-m", "marinenav.export"),
                 ("-m", "marinenav.planner.export")}
    programs |= {("-m", "marinenav.viz", name) for name in subcommands}
    return sorted(programs)


# runs each program's --help in one interpreter (torch imported once): {program: [exit, out]}
HELP_DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for program in json.loads(sys.argv[1]):
    out = io.StringIO()
    code = "ran without exiting"
    sys.argv = [program[-1] if program[0] != "-m" else program[1], *program[2:], "--help"]
    try:
        with contextlib.redirect_stdout(out):
            if program[0] == "-m":
                runpy.run_module(program[1], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(program[0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code or 0
    except Exception as error:
        code = repr(error)
    results[" ".join(program)] = [code, out.getvalue()]
print(json.dumps(results))
"""


def test_every_documented_program_answers_help_without_running() -> None:
    """Every program the README and docs run (and every benchmark script) exists and
    answers ``--help`` with its usage and exit status 0, instead of running (a benchmark that
    ran would blow the time limit)."""
    programs = help_programs()
    assert ("benchmarks/rainbow_support.py",) in programs
    assert ("-m", "marinenav.viz", "runs") in programs
    result = run_python("-c", HELP_DRIVER, json.dumps(programs), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.splitlines()[-1])
    for program, (code, out) in answers.items():
        assert code == 0 and out.startswith("usage:"), f"{program} --help: {code} {out[:200]}"


# paths the docs name that are not in the repository, by their first part: the run-directory
# layout (a run's files, the user's run and sweep directories), the set-up's .venv, Hydra's own
# config groups (hydra/launcher=...), the original's GitHub repository and the C++ build folder
NOT_IN_REPO = {"runs", "outputs", "multirun", ".hydra", "best", "evaluated", "logs", ".venv",
               "hydra", "RobustFieldAutonomyLab", "build"}  # fmt: skip
FILE_SUFFIX = re.compile(r"\.(py|md|ya?ml|json|jsonl|pt|png|gif|sh|txt|csv|toml|cpp)$")
REPO_PATH = re.compile(r"(?<![\w/.$:<>-])((?:[\w.<>*?-]+/)+[\w.<>*?-]*)")  # globs whole


def named_paths(page: Path) -> list[str]:
    """The relative paths a page names in its code (bash blocks, inline code) and links."""
    text = re.sub(r"https?://\S+", "", page.read_text())
    code = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    code += re.findall(r"`([^`]+)`", prose)
    found = [m for snippet in code for m in REPO_PATH.findall(snippet)]
    found += [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", prose)]
    return [p.rstrip("/.") for p in found if p and not p.startswith("#")]


def test_heading_anchors_follow_github(tmp_path: Path) -> None:
    """GitHub's anchor rule on a hand-written page: punctuation, code, a repeat."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Recipes: what `python train.py` does\n```\n# not a heading\n```\n## A, b\n## A, b\n"
    )
    assert heading_anchors(page) == {"recipes-what-python-trainpy-does", "a-b", "a-b-1"}


def test_every_section_link_names_a_heading_of_its_page() -> None:
    """A link ``[text](page.md#anchor)`` or ``[text](#anchor)`` in the README or docs lands on a
    heading of that page: a renamed heading breaks no link silently."""
    broken = []
    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", page.read_text()):
            if target.startswith(("http:", "https:")):
                continue
            linked = page.parent / target if target else page
            if linked.is_file() and anchor not in heading_anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []


def test_every_path_the_docs_name_exists() -> None:
    """A path in the README's or docs' code or links names a file or folder of the
    repository (from its root, the page's folder or the package), apart from the run-directory
    layout and placeholders (``RUN_DIR``, ``<name>``, globs); e.g. no ``reference/LEARNING.md``
    and no planner file outside the repository (the original's in tests/data/pretrained/, ours
    under results/)."""
    missing = []
    for page in PAGES:
        for path in named_paths(page):
            first = path.split("/")[0]
            if (first in NOT_IN_REPO or first.isupper() or first.isdigit()
                    or re.search(r"[<>*?{}]|\.\.\.", path)):  # fmt: skip
                continue
            bases = (ROOT, page.parent, ROOT / "marinenav")
            # a path names a file (an extension) or starts at a folder we have; the rest of the
            # slashes are arithmetic (``pi/4``, ``1/d0``, ``-g/d_g`` in docs/baselines.md)
            if not (FILE_SUFFIX.search(path) or any((b / first).exists() for b in bases)):
                continue
            # a module attribute (tests/learning_utils.train_briefly) names its .py file
            module = path.rsplit(".", 1)[0] + ".py"
            if not any((b / path).exists() or (b / module).exists() for b in bases):
                missing.append(f"{page.name}: {path}")
    assert not missing, missing
    planners = [c for _, c in COMMANDS if "--planner" in c]
    # the original's planners are in tests/data/pretrained/, ours under results/
    assert planners and all(re.search(r"--planner (tests/data/pretrained|results)/", c)
                            or PLACEHOLDER.search(c) or "FILE" in c
                            for c in planners), planners  # fmt: skip
