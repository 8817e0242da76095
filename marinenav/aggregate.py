"""Across seeds: the aggregate statistics of Agarwal et al. (2021), computed with rliable.

A recipe is a distribution over runs: its seeds differ far more than the episode noise of one
evaluation (docs/results.md: per-seed Wilson intervals of about +-0.03 at n=600 against seed
spreads of 0.05-0.3). "Deep RL at the edge of the statistical precipice" (Agarwal, Schwarzer,
Castro, Courville, Bellemare; NeurIPS 2021) gives the statistics the field uses for such
claims, and its library rliable computes them; this module feeds it our runs:

* a run's **score** is the success rate of its last checkpoint: on the large set where the run
  has one (``RUN/evaluation_large.json``, written by ``python -m marinenav.evaluate RUN --set
  large --out RUN/evaluation_large.json`` or ``scripts/collect_recipe_run.sh``), else on its
  last validation evaluation (``evaluations.jsonl``); or the success rate of one evaluation file
  (``python -m marinenav.evaluate ... --out FILE.json``: a planner's score in one water,
  ``results/evaluations/waters/<label>__<water>.json``), :func:`evaluation_file_score`;
* a group of runs (one recipe, several seeds) gets the **IQM** (interquartile mean: the mean of
  the middle half of the scores, ``scipy.stats.trim_mean(scores, 0.25)``; with fewer than four
  runs nothing is trimmed and it equals the mean), the **mean** and the **median**, each with a
  95% **stratified bootstrap** interval over runs (``rliable.library.get_interval_estimates``;
  one task, so the strata are the one task's runs), and its **worst** run;
* two groups get the **probability of improvement** P(X > Y): the chance that a run of X
  scores above a run of Y (the Mann-Whitney statistic over all pairs, ties counting a half),
  with its bootstrap interval;
* **performance profiles**: the fraction of runs scoring above each level tau, with bootstrap
  bands (:func:`performance_profiles`; drawn by ``python -m marinenav.viz compare``).

Intervals count the spread between seeds; the episode noise of each run is inside each score.
rliable's ``aggregate_median`` is the median over tasks of each task's mean over runs, which with
our one task is the mean; the median here is over runs. Bootstraps are seeded (``seed``): the same
runs give the same intervals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from rliable import library as rly
from rliable import metrics

from marinenav.run_files import EVALUATIONS_NAME, LARGE_NAME, run_config

ScoreSource = Literal["auto", "large", "validation"]
REPS = 50_000  # bootstrap resamples for the aggregates (rliable's default)
IMPROVEMENT_REPS = 2_000  # resamples for P(X > Y): each is a Mann-Whitney test in Python
SOURCE_NAMES = {"large": "large set", "validation": "last validation", "file": "evaluation file"}
PROFILE_REPS = 2_000  # resamples for each performance-profile band (rliable's default)


@dataclass(frozen=True)
class RunScore:
    """One run's score.

    Attributes:
        run_dir: the run directory.
        name: how a table names the run: ``seed N`` from its config, else the directory name.
        successes: successful episodes of the scored evaluation.
        episodes: episodes of the scored evaluation.
        source: ``"large"`` (the last checkpoint on the large set), ``"validation"`` (the
            run's last validation evaluation) or ``"file"`` (an evaluation file, the run's
            ``run_dir`` that file).
    """

    run_dir: Path
    name: str
    successes: int
    episodes: int
    source: str

    @property
    def score(self) -> float:
        """Success rate of the scored evaluation, in [0, 1]."""
        return self.successes / self.episodes


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its 95% interval."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Aggregate:
    """The aggregate statistics of one group of runs (module docstring).

    Attributes:
        label: the group's name in tables and figures.
        runs: the runs' scores, in the order given.
        iqm, mean, median: the statistics over runs with stratified-bootstrap 95% intervals.
    """

    label: str
    runs: tuple[RunScore, ...]
    iqm: Estimate
    mean: Estimate
    median: Estimate

    @property
    def scores(self) -> np.ndarray:
        """``[runs, 1]`` score matrix (rows runs, one column: the task), rliable's layout."""
        return np.array([[run.score] for run in self.runs], dtype=np.float64)

    @property
    def worst(self) -> RunScore:
        """The run with the lowest score (the first of equals)."""
        return min(self.runs, key=lambda run: run.score)


def _evaluation_counts(record: Mapping) -> tuple[int, int]:
    """``(successes, episodes)`` of one evaluation record, from its per-episode outcomes."""
    outcomes = record["episodes"]["success"]
    return int(sum(bool(s) for s in outcomes)), len(outcomes)


def _run_name(run_dir: Path) -> str:
    """``seed N`` where the run's Hydra config says its seed, else the directory's name."""
    config = run_config(run_dir)
    seed = config.get("seed") if isinstance(config, dict) else None
    return f"seed {seed}" if seed is not None else run_dir.name


def run_score(run_dir: str | Path, source: ScoreSource = "auto") -> RunScore:
    """The score of one run (module docstring). ``source="auto"`` takes the large set where the
    run has it, else the last validation evaluation; ``"large"`` raises ``FileNotFoundError``
    without it. Raises ``FileNotFoundError`` for a run with no evaluation at all."""
    run_dir = Path(run_dir)
    if source not in ("auto", "large", "validation"):
        raise ValueError(f"source must be auto, large or validation, got {source!r}")
    large = run_dir / LARGE_NAME
    if source in ("auto", "large") and large.is_file():
        successes, episodes = _evaluation_counts(json.loads(large.read_text()))
        return RunScore(run_dir, _run_name(run_dir), successes, episodes, "large")
    if source == "large":
        raise FileNotFoundError(
            f"no {LARGE_NAME} in {run_dir} (python -m marinenav.evaluate {run_dir} --set large "
            f"--out {large})"
        )
    path = run_dir / EVALUATIONS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no {EVALUATIONS_NAME} in {run_dir}: the run has not evaluated")
    records = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[int(record["timestep"])] = record  # a timestep evaluated twice: the last
    if not records:
        raise FileNotFoundError(f"{path} holds no evaluation")
    successes, episodes = _evaluation_counts(records[max(records)])
    return RunScore(run_dir, _run_name(run_dir), successes, episodes, "validation")


def evaluation_file_score(path: str | Path) -> RunScore:
    """The score of one evaluation file (``marinenav.evaluate --out``'s JSON, per-episode
    outcomes under ``episodes``), named by the file's stem. Raises ``FileNotFoundError`` for a
    missing file and ``ValueError`` for a file that is no evaluation."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"evaluation file {path} does not exist")
    try:
        successes, episodes = _evaluation_counts(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is no evaluation file (python -m marinenav.evaluate ... "
                         f"--out FILE.json): {error!r}") from None  # fmt: skip
    if episodes == 0:
        raise ValueError(f"{path} holds no episode")
    return RunScore(path, path.stem, successes, episodes, "file")


def _interval_estimates(score_dict, func, reps: int, confidence: float, seed: int):
    """rliable's ``get_interval_estimates``, reproducible: rliable's stratified bootstrap draws
    its resampled run indices from numpy's global generator (``np.random.choice``), whatever
    ``random_state`` it is given, so the global generator is seeded here and its state put back
    afterwards, leaving a caller's own use of it undisturbed."""
    saved = np.random.get_state()  # noqa: NPY002 (rliable reads the legacy global generator)
    np.random.seed(seed)  # noqa: NPY002
    try:
        return rly.get_interval_estimates(
            score_dict, func, reps=reps, confidence_interval_size=confidence
        )
    finally:
        np.random.set_state(saved)  # noqa: NPY002


def _statistics(scores: np.ndarray) -> np.ndarray:
    """``[IQM, mean, median]`` of a ``[runs, tasks]`` score matrix (rliable's aggregates)."""
    return np.array([
        metrics.aggregate_iqm(scores),
        metrics.aggregate_mean(scores),
        np.median(scores),  # over runs (rliable's aggregate_median is over tasks)
    ])  # fmt: skip


def aggregate(
    label: str,
    runs: Sequence[RunScore],
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Aggregate:
    """IQM, mean and median of the runs' scores with stratified-bootstrap intervals (rliable,
    ``reps`` resamples of the runs). One run gives intervals of zero width. Raises
    ``ValueError`` for no runs or runs scored on different sources (large set and validation
    mixed would compare different things)."""
    if not runs:
        raise ValueError(f"{label}: no runs to aggregate")
    sources = {run.source for run in runs}
    if len(sources) > 1 and "file" in sources:
        raise ValueError(f"{label}: evaluation files and run directories in one group")
    if len(sources) > 1:
        lacking = [str(run.run_dir) for run in runs if run.source != "large"]
        raise ValueError(
            f"{label}: some runs are scored on the large set, others on validation (no "
            f"{LARGE_NAME} in {', '.join(lacking)}); evaluate them or pass --score validation"
        )
    scores = np.array([[run.score] for run in runs], dtype=np.float64)
    points, intervals = _interval_estimates({label: scores}, _statistics, reps, confidence, seed)
    value, (low, high) = points[label], intervals[label]
    iqm, mean, median = (Estimate(float(value[k]), float(low[k]), float(high[k])) for k in range(3))
    return Aggregate(label, tuple(runs), iqm, mean, median)


def probability_of_improvement(
    x: Aggregate,
    y: Aggregate,
    reps: int = IMPROVEMENT_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """P(X > Y): the probability that a run of ``x`` scores above a run of ``y`` (ties count a
    half), with the stratified-bootstrap interval that resamples each group's runs
    independently (rliable). 0.5 means neither is better."""
    key = f"{x.label} > {y.label}"
    points, intervals = _interval_estimates(
        {key: (x.scores, y.scores)}, metrics.probability_of_improvement, reps, confidence, seed
    )
    low, high = np.ravel(intervals[key])
    return Estimate(float(points[key]), float(low), float(high))


def performance_profiles(
    groups: Sequence[Aggregate], taus: np.ndarray, reps: int = PROFILE_REPS, seed: int = 0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Score distributions (performance profiles): for each group, the fraction of runs whose
    score exceeds each ``tau`` ``[T]``, and its stratified-bootstrap 95% band ``[2, T]``
    (rliable's ``create_performance_profile`` computes the same; here the bootstrap takes our
    ``seed``)."""
    taus = np.asarray(taus, dtype=np.float64)

    def fraction_above(scores: np.ndarray) -> np.ndarray:
        return (scores[..., None] > taus).mean(axis=(0, 1))  # [runs, tasks, T] -> [T]

    return _interval_estimates(
        {group.label: group.scores for group in groups}, fraction_above, reps, 0.95, seed
    )


def aggregate_table(groups: Sequence[Aggregate]) -> str:
    """A Markdown table: one row per group with its runs, score source, IQM, mean and median
    with 95% intervals, and its worst run."""
    rows = [
        "| group | runs | scored on | IQM [95% CI] | mean [95% CI] | median [95% CI] | worst run |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for group in groups:
        worst = group.worst
        source = SOURCE_NAMES[group.runs[0].source]
        episodes = sorted({run.episodes for run in group.runs})
        rows.append(
            f"| {group.label} | {len(group.runs)} | {source} "
            f"(n={'/'.join(map(str, episodes))} per run) | {group.iqm} | {group.mean} "
            f"| {group.median} | {worst.score:.3f} ({worst.name}) |"
        )
    return "\n".join(rows)


def improvement_table(
    groups: Sequence[Aggregate], reps: int = IMPROVEMENT_REPS, seed: int = 0
) -> str:
    """A Markdown table of P(row > column) with 95% intervals for every ordered pair of
    groups (the diagonal empty)."""
    labels = [group.label for group in groups]
    rows = [
        "| P(row > column) | " + " | ".join(labels) + " |",
        "| --- |" + " ---: |" * len(groups),
    ]
    for x in groups:
        cells = [
            "-" if x is y else str(probability_of_improvement(x, y, reps=reps, seed=seed))
            for y in groups
        ]
        rows.append(f"| {x.label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
