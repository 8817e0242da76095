"""The docs' headings and the link anchors a Markdown page gives them, for the tests that check
citations of sections and links to them."""

from __future__ import annotations

import functools
import re
from pathlib import Path


def headings(page: Path) -> list[str]:
    """The headings of a Markdown page, in order, outside fenced code blocks."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return [m.group(1).strip() for m in re.finditer(r"^#+\s+(.*)$", text, re.M)]


def anchor(heading: str) -> str:
    """The link anchor a Markdown page gives ``heading`` (GitHub's rule: lower case, spaces to
    hyphens, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@functools.cache
def heading_anchors(page: Path) -> frozenset[str]:
    """Every anchor a link into ``page`` can name: its headings' :func:`anchor`, a repeated
    one numbered ``-1``, ``-2`` as GitHub numbers them, and any ``<a name="...">``."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    for heading in headings(page):
        slug = anchor(heading)
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    out.update(re.findall(r'<a (?:name|id)="([^"]+)"', page.read_text()))
    return frozenset(out)
