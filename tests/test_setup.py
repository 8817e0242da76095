"""CI installs exactly as the README says, the dependencies are ranges (a user's own newer torch
is kept), and the reference recordings travel with the repository."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.reference_data import IN_REPOSITORY

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_set_up_line() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Set up\n.*?```bash\n(.*?)\n```", readme, re.S).group(1)
    readme_steps = [step.strip() for step in block.split("&&")]
    ci = (ROOT / ".ci" / "run").read_text()
    section = ci.split('# --- set-up (same lines as README "Set up") ---\n')[1].split("\n# ---")[0]
    assert section.splitlines() == readme_steps
    assert readme_steps[2] == "pip install torch==2.13.0"  # the tested build, before marinenav
    assert "\npip check\n" in ci


def test_dependencies_are_ranges_not_pins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [dep for dep in project["dependencies"] if "==" in dep]
    assert "torch>=2.13" in project["dependencies"]


def test_reference_recordings_are_in_the_repository() -> None:
    recordings = sorted(IN_REPOSITORY.glob("reference_*.json"))
    assert len(recordings) == 12
    assert sum(path.stat().st_size for path in recordings) < 5_000_000
