"""Pictures of the new waters: an Imazu case drawn with its traffic (``viz episode --planner
--scenario imazu``) and the per-case table figure (``viz cases``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from marinenav.viz.__main__ import main
from marinenav.viz.cases import OUTCOMES, case_outcomes

PLANNER = Path(__file__).parent / "data" / "pretrained" / "traced_AC_IQN_model.pt"


def test_an_imazu_case_is_drawn_with_grey_traffic(tmp_path: Path, capsys) -> None:
    out = tmp_path / "case5"
    code = main(["episode", "--planner", str(PLANNER), "--scenario", "imazu", "--episode", "4",
                 "--every", "100", "--out", str(out)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "episode 4 of" in printed and "imazu paper set" in printed
    first = imread(out / "frame_0000.png")[..., :3]
    grey = np.isclose(first, 169 / 255, atol=0.02).all(-1)  # darkgray hulls and tracks
    assert grey.sum() > 50  # the two target ships


def _metrics(successes: list[bool], kept: list[bool | None]) -> dict:
    records = [None if k is None else {"targets": [], "colregs_kept": k} for k in kept]
    return {"episodes": {"success": successes}, "encounters": records}


def test_case_outcomes_tell_kept_broken_and_failed_apart() -> None:
    metrics = _metrics([True, True, False, True], [True, False, False, None])
    assert case_outcomes(metrics) == ["kept", "broken", "failed", "kept"]


def test_the_case_table_figure_has_a_row_per_file(tmp_path: Path, capsys) -> None:
    files = []
    for name, successes in (("a", [True] * 3), ("b", [False] * 3)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_metrics(successes, [True, False, True])))
        files.append(str(path))
    out = tmp_path / "cases.png"
    assert main(["cases", *files, "--labels", "first", "second", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "first: 3 of 3 solved, 2 kept the COLREGs" in printed
    assert "second: 0 of 3 solved, 0 kept the COLREGs" in printed
    image = imread(out)[..., :3]
    red = np.array([0.839, 0.153, 0.157])  # tab:red, the second row's cells
    assert np.isclose(image, red, atol=0.02).all(-1).sum() > 100
    assert set(OUTCOMES) == {"kept", "broken", "failed"}


def test_cases_refuses_files_without_encounter_checks(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"episodes": {"success": [True]}}))
    with pytest.raises(SystemExit) as stop:
        main(["cases", str(path)])
    assert stop.value.code == 2


def test_a_drawn_case_is_the_case_the_evaluation_measured() -> None:
    """A planner with random inputs (IQN's taus): its stream restarts from the set's noise seed,
    as ``marinenav.evaluate`` restarts it, and the cases are copied out of one run of the set,
    so each drawing is the evaluated case, bit for bit."""
    from marinenav.planner import planner_policy
    from marinenav.scenarios import make_layout
    from marinenav.training.evaluation import EvaluationSet, Evaluator
    from marinenav.viz.episode import record_episodes

    path = PLANNER.with_name("traced_IQN_model.pt")
    cases = EvaluationSet.named("paper", make_layout("imazu"), max_steps=40)
    policy = planner_policy(path)
    policy.set_seed(cases.noise_seed)
    evaluation = Evaluator(cases, policy.action_kind, 0.99).run(policy, tracks=True)
    policy.set_seed(12345)  # what the recording does to the stream is its own business
    for row, recording in zip([5, 1], record_episodes(policy, cases, [5, 1]), strict=True):
        steps = int(evaluation["tracks"]["steps"][row])
        assert recording.num_steps == steps
        np.testing.assert_array_equal(
            recording.positions, evaluation["tracks"]["pos"][: steps + 1, row]
        )
    # taus from another stream steer other tracks: the seed is what made them agree
    policy.set_seed(cases.noise_seed + 1)
    other = Evaluator(cases, policy.action_kind, 0.99).run(policy, tracks=True)
    assert not np.array_equal(other["tracks"]["pos"], evaluation["tracks"]["pos"])
