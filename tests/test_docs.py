"""Every ``python`` code block in the README and in ``docs/`` runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
