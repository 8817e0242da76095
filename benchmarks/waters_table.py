"""The table of docs/results.md, "Real waters": every evaluated planner, run or baseline in every
water, from the JSON files ``scripts/waters_evaluate.sh`` writes.

``python benchmarks/waters_table.py results/evaluations/waters [--labels A B ...]`` prints one
Markdown row per label: success with its Wilson 95% interval and episode count in open water
(the large set), the harbour, with 4 and 8 vortex cores, and the Imazu cases solved and kept to
the COLREGs (of 22).

``--broken`` prints instead, per label, the Imazu checks broken and what broke them
(``marinenav.encounters.TargetCheck.broken``): for head-on (rule 14) and give-way (rule 15)
targets, whether the own ship held its course or turned to port first, and on which side it
passed; for overtaking (rule 13), coming too close. Checks whose closest approach came within
the first ``EARLY`` steps are counted apart ("closest within 5 steps": a target that starts 7-11 m
off on a near-parallel course, which a ship speeding up from its first step leaves behind
before it has altered course), the other columns count the rest; the last, "closest at the
end", how many of the rest had their closest approach on the episode's last step (the own ship
reached its goal, or its episode ended otherwise, with the target still closing).

``--bars`` prints instead, per label, the bars of the mixed recipe's issue (:data:`BARS`: the
success rate, not its interval, in open water, the harbour and with 4 vortex cores, the Imazu
cases solved and kept) and which each meets, then how many labels meet every bar: the "k of n
seeds" of docs/results.md, computed from the files (a water not evaluated fails its bar).

``--recipes`` prints instead one row per recipe, the labels ``<recipe>_s<seed>`` grouped (a label
without that ending is no recipe's seed and is left out): its seeds, in how many each bar of
``--bars`` is met, and in how many every bar is; recipes with fewer than ``--min-seeds`` seeds
(default 2) are left out. The "k of n seeds" of every setting tried, at a glance; with the
per-seed rate of meeting every bar (its Wilson 95% interval over the seeds) and the chance, at
that rate, that ``SEEDS_ASKED`` (3) fresh seeds all meet every bar (the rate cubed; the
interval's ends cubed): the issue's "3 of 3 seeds" read as what a recipe with that rate delivers.

``--cases`` prints instead one row per Imazu case over the labels given (the seeds of a
recipe): its targets' encounters (rule), in how many labels the case was solved and its COLREGs
kept, and the checks broken there by rule: which situations a recipe never learns, and which
it learns in some seeds only. Labels without an Imazu file are left out and named.

``--sighted`` reads every COLREGs count and check above with the rule-14/15 turn read from
sighting (``marinenav.encounters``: from the step the target first came within the perception
range) instead of from the start; a file written before that reading existed has none, and the
script says which.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marinenav.sim.constants import ROBOT_DEFAULTS  # noqa: E402
from marinenav.stats import format_rate, wilson_interval  # noqa: E402

STEP_TIME = ROBOT_DEFAULTS["dt"] * ROBOT_DEFAULTS["N"]  # s per environment step (0.5)

WATERS = ("large", "harbour", "currents4", "currents8")


def load(directory: Path) -> dict[str, dict[str, dict]]:
    """label -> water -> metrics, from ``<label>__<water>.json`` files."""
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(directory.glob("*__*.json")):
        label, water = path.stem.rsplit("__", 1)
        out.setdefault(label, {})[water] = json.loads(path.read_text())
    return out


def read_from_sighting(table: dict[str, dict[str, dict]], labels: list[str]) -> None:
    """``--sighted``: the Imazu record of each of ``labels`` read with the rule-14/15 turn read
    from sighting, in place: its count, each episode's verdict and each target's check and what
    broke it become the second reading's, so every table below reads them; a file written
    before that reading existed is refused by name."""
    for label in labels:
        imazu = table.get(label, {}).get("imazu")
        if imazu is None:
            continue
        if "kept_sighted" not in imazu["colregs"]:
            raise SystemExit(
                f"waters_table.py: error: {label}'s Imazu file has no kept_sighted "
                "(written before the turn was read from sighting: evaluate it again)"
            )
        imazu["colregs"]["kept"] = imazu["colregs"]["kept_sighted"]
        for record in imazu["encounters"]:
            if record is None:
                continue
            record["colregs_kept"] = record["colregs_kept_sighted"]
            for target in record["targets"]:
                target["passed"] = target["passed_sighted"]
                target["broken"] = target["broken_sighted"]


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


# the mixed recipe's bars (issue 32): a success rate at least this in a water, or at least this
# many of the 22 Imazu cases solved and kept to the COLREGs
BARS = (("large", 0.90), ("harbour", 0.80), ("currents4", 0.85), ("solved", 20), ("kept", 18))
SEEDS_ASKED = 3  # the "every bar in 3 of 3 seeds": --recipes reads a rate as that chance
BAR_NAMES = {"large": "open water", "harbour": "harbour", "currents4": "4 vortex cores",
             "solved": "Imazu solved", "kept": "COLREGs kept"}  # fmt: skip
# the bars' columns of a table's header: "open water >= 0.90 | ... | COLREGs kept >= 18"
BAR_COLUMNS = " | ".join(
    f"{BAR_NAMES[name]} >= {bar:.2f}" if isinstance(bar, float) else f"{BAR_NAMES[name]} >= {bar}"
    for name, bar in BARS
)


def bar_values(metrics: dict[str, dict]) -> dict[str, float | None]:
    """Per bar of :data:`BARS`, the label's value (``None``: that water was not evaluated)."""
    values: dict[str, float | None] = {}
    for water in WATERS:
        m = metrics.get(water)
        values[water] = sum(m["episodes"]["success"]) / len(m["episodes"]["success"]) if m else None
    imazu = metrics.get("imazu")
    values["solved"] = sum(imazu["episodes"]["success"]) if imazu else None
    values["kept"] = imazu["colregs"]["kept"] if imazu else None
    return values


def meets(values: dict[str, float | None], name: str, bar: float) -> bool:
    """Whether the value of bar ``name`` meets it (a water not evaluated does not)."""
    return values[name] is not None and values[name] >= bar


def bars_row(label: str, metrics: dict[str, dict]) -> tuple[str, bool]:
    """The label's row of ``--bars`` (each bar's value, in bold when it misses) and whether it
    meets every bar."""
    values, cells, met = bar_values(metrics), [], 0
    for name, bar in BARS:
        value = values[name]
        if value is None:
            cells.append("-")
            continue
        text = f"{value:.3f}" if isinstance(bar, float) else str(value)
        ok = meets(values, name, bar)
        met += ok
        cells.append(text if ok else f"**{text}**")
    return f"| {label} | " + " | ".join(cells) + f" | {met} of {len(BARS)} |", met == len(BARS)


SEED_LABEL = re.compile(r"^(?P<recipe>.+)_s(?P<seed>\d+)$")  # a recipe's run: <recipe>_s<seed>


def recipe_rows(table: dict[str, dict[str, dict]], labels: list[str], min_seeds: int) -> list[str]:
    """``--recipes``: per recipe (labels ``<recipe>_s<seed>`` grouped, recipes in name order) with
    at least ``min_seeds`` seeds, its seeds and in how many of them each bar, and every bar, is
    met."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for label in labels:
        match = SEED_LABEL.match(label)
        if match:
            groups.setdefault(match["recipe"], []).append((int(match["seed"]), label))
    rows = []
    for recipe, runs in sorted(groups.items()):
        if len(runs) < min_seeds:
            continue
        runs.sort()
        values = [bar_values(table.get(label, {})) for _, label in runs]
        n = len(values)
        cells = [f"{sum(meets(v, name, bar) for v in values)} of {n}" for name, bar in BARS]
        every = sum(all(meets(v, name, bar) for name, bar in BARS) for v in values)
        seeds = ", ".join(str(seed) for seed, _ in runs)
        low, high = wilson_interval(every, n)
        rate = f"{every / n:.2f} [{low:.2f}, {high:.2f}]"
        k = SEEDS_ASKED
        three = f"{(every / n) ** k:.3f} [{low**k:.3f}, {high**k:.3f}]"
        counts = " | ".join(cells)
        rows.append(f"| {recipe} | {seeds} | {counts} | {every} of {n} | {rate} | {three} |")
    return rows


EARLY = 5  # steps: a closest approach this early is the start geometry and the first actions

BROKEN_COLUMNS = (
    ("14", "held course"), ("14", "turned to port"), ("14", "passed starboard to starboard"),
    ("15", "held course"), ("15", "turned to port"), ("15", "passed ahead"),
    ("13", "came too close"),
)  # fmt: skip


def broken_row(label: str, metrics: dict[str, dict]) -> str:
    """Checks broken per rule and reason in the label's Imazu evaluation (``-`` without one;
    ``?`` for a file written before the reasons were recorded)."""
    imazu = metrics.get("imazu")
    if not imazu:
        return f"| {label} | " + " | ".join("-" for _ in range(len(BROKEN_COLUMNS) + 5)) + " |"
    # each broken check with the step its episode ended on (its time over the step time)
    broken = [
        (t, round(time / STEP_TIME))
        for record, time in zip(imazu["encounters"], imazu["episodes"]["time"], strict=True)
        if record
        for t in record["targets"]
        if t["passed"] is False
    ]
    if any("broken" not in t for t, _ in broken):
        return f"| {label} | " + " | ".join("?" for _ in range(len(BROKEN_COLUMNS) + 5)) + " |"
    at_start = [t for t, _ in broken if t["closest_step"] <= EARLY]
    later = [t for t, _ in broken if t["closest_step"] > EARLY]
    at_end = [t for t, last in broken if EARLY < t["closest_step"] == last]
    cells = [str(sum(t["rule"] == rule for t in later)) for rule in ("14", "15")]
    cells.append(str(len(at_start)))
    cells += [str(sum(t["rule"] == rule and reason in t["broken"] for t in later))
              for rule, reason in BROKEN_COLUMNS]  # fmt: skip
    cells.append(str(len(at_end)))
    kept = f"{imazu['colregs']['kept']} / {imazu['colregs']['episodes']}"
    return f"| {label} | {kept} | " + " | ".join(cells) + " |"


def case_rows(table: dict[str, dict[str, dict]], labels: list[str]) -> tuple[list[str], list]:
    """Per Imazu case, over the ``labels`` that have an Imazu file: the Markdown row (encounters,
    solved and kept in k of n, broken checks by rule), and the labels without a file."""
    records = [table[label]["imazu"] for label in labels if "imazu" in table.get(label, {})]
    missing = [label for label in labels if "imazu" not in table.get(label, {})]
    if not records:
        return [], missing
    cases = len(records[0]["episodes"]["success"])
    if any(len(r["episodes"]["success"]) != cases for r in records):
        raise SystemExit("waters_table.py: error: the Imazu files hold different case counts")
    rows = []
    for case in range(cases):
        first = records[0]["encounters"][case]
        encounters = "; ".join(f"{t['encounter']} ({t['rule']})" for t in first["targets"]) \
            if first else "-"  # fmt: skip
        solved = sum(bool(r["episodes"]["success"][case]) for r in records)
        kept = sum(bool(r["encounters"][case] and r["encounters"][case].get("colregs_kept"))
                   for r in records)  # fmt: skip
        broken: dict[str, int] = {}
        for r in records:
            for target in (r["encounters"][case] or {}).get("targets", []):
                if target["passed"] is False:
                    broken[target["rule"]] = broken.get(target["rule"], 0) + 1
        named = ", ".join(f"rule {rule}: {n}" for rule, n in sorted(broken.items())) or "-"
        rows.append(f"| case {case + 1} | {encounters} | {solved} of {len(records)} "
                    f"| {kept} of {len(records)} | {named} |")  # fmt: skip
    return rows, missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--labels", nargs="*", help="rows in this order (default: all, sorted)")
    parser.add_argument("--broken", action="store_true",
                        help="the Imazu checks broken, by rule and what broke them")  # fmt: skip
    parser.add_argument("--bars", action="store_true",
                        help="the mixed bars per label; how many meet them all")  # fmt: skip
    parser.add_argument("--recipes", action="store_true",
                        help="per recipe (<recipe>_s<seed>): bars met in k of n seeds")  # fmt: skip
    parser.add_argument("--min-seeds", type=int, default=2,
                        help="--recipes: leave out recipes with fewer seeds")  # fmt: skip
    parser.add_argument("--cases", action="store_true",
                        help="per Imazu case: solved and kept in how many labels")  # fmt: skip
    parser.add_argument("--sighted", action="store_true",
                        help="the COLREGs counts with the turn read from sighting")  # fmt: skip
    args = parser.parse_args()
    table = load(args.directory)
    if args.sighted:
        read_from_sighting(table, args.labels or sorted(table))
    if args.cases:
        rows, missing = case_rows(table, args.labels or sorted(table))
        print("| case | targets: encounter (rule) | solved | COLREGs kept | checks broken |")
        print("| --- | --- | ---: | ---: | --- |")
        print("\n".join(rows))
        if missing:
            print(f"\nno Imazu file: {', '.join(missing)}")
        return
    if args.recipes:
        print(f"| recipe | seeds | {BAR_COLUMNS} | every bar "
              f"| per seed (95%) | {SEEDS_ASKED} of {SEEDS_ASKED} at that rate |")
        print("| --- | --- |" + " ---: |" * (len(BARS) + 3))
        print("\n".join(recipe_rows(table, args.labels or sorted(table), args.min_seeds)))
        return
    if args.bars:
        print(f"| planner | {BAR_COLUMNS} | bars met |")
        print("| --- |" + " ---: |" * (len(BARS) + 1))
        labels = args.labels or sorted(table)
        rows = [bars_row(label, table.get(label, {})) for label in labels]
        for text, _ in rows:
            print(text)
        print(f"\nevery bar: {sum(all_met for _, all_met in rows)} of {len(rows)}")
        return
    if args.broken:
        print("| planner | COLREGs kept | rule 14 broken | rule 15 broken "
              f"| closest within {EARLY} steps "
              "| 14: held course | 14: turned to port | 14: starboard to starboard "
              "| 15: held course | 15: turned to port | 15: passed ahead | 13: too close "
              "| closest at the end |")
        print("| --- |" + " ---: |" * (len(BROKEN_COLUMNS) + 5))
        for label in args.labels or sorted(table):
            print(broken_row(label, table.get(label, {})))
        return
    print("| planner | open water (large) | harbour | 4 vortex cores | 8 vortex cores "
          "| Imazu solved | Imazu, COLREGs kept |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label in args.labels or sorted(table):
        print(row(label, table.get(label, {})))


if __name__ == "__main__":
    main()
