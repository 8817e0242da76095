"""The table of docs/results.md, "Real waters": every evaluated planner, run or baseline in every
water, from the JSON files ``scripts/waters_evaluate.sh`` writes.

``python benchmarks/waters_table.py results/evaluations/waters [--labels A B ...]`` prints one
Markdown row per label: success with its Wilson 95% interval and episode count in open water
(the large set), the harbour, with 4 and 8 vortex cores, and the Imazu cases solved and kept to
the COLREGs (of 22).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.stats import format_rate  # noqa: E402

WATERS = ("large", "harbour", "currents4", "currents8")


def load(directory: Path) -> dict[str, dict[str, dict]]:
    """label -> water -> metrics, from ``<label>__<water>.json`` files."""
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(directory.glob("*__*.json")):
        label, water = path.stem.rsplit("__", 1)
        out.setdefault(label, {})[water] = json.loads(path.read_text())
    return out


def row(label: str, metrics: dict[str, dict]) -> str:
    cells = []
    for water in WATERS:
        m = metrics.get(water)
        success = m["episodes"]["success"] if m else None
        cells.append(format_rate(sum(success), len(success)) if success else "-")
    imazu = metrics.get("imazu")
    if imazu:
        solved = sum(imazu["episodes"]["success"])
        cells += [f"{solved} / {len(imazu['episodes']['success'])}",
                  f"{imazu['colregs']['kept']} / {imazu['colregs']['episodes']}"]  # fmt: skip
    else:
        cells += ["-", "-"]
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--labels", nargs="*", help="rows in this order (default: all, sorted)")
    args = parser.parse_args()
    table = load(args.directory)
    print("| planner | open water (large) | harbour | 4 vortex cores | 8 vortex cores "
          "| Imazu solved | Imazu, COLREGs kept |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label in args.labels or sorted(table):
        print(row(label, table.get(label, {})))


if __name__ == "__main__":
    main()
