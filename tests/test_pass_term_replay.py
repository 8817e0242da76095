"""``benchmarks/pass_term_replay.py`` (docs/results.md, "The term and the check disagree on who
gives way") on a committed navigator: replayed with the give-way check term, every case's sum is
-5 per rule-15 check the COLREGs checks break on the same episode, the charges of an episode's
last step included, and no charge falls after the episode's end."""

from __future__ import annotations

import re

from tests.run_utils import ROOT, benchmark_py

PLANNER = (
    ROOT / "results/recipes/mix/rainbow_passed_ahead_5_port_turn_20_traffic_only_0.3_constraint"
    "_0.1_average_0.5_replay_3M/seed0/traced_Rainbow_model.pt"
)


def test_the_check_terms_replay_sums_to_the_broken_give_way_checks() -> None:
    done = benchmark_py("pass_term_replay.py", PLANNER, "--term", "give_way_check")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines()
            if re.match(r"^\| \d+ \|", line)]  # fmt: skip
    assert len(rows) == 22
    broken_total, last_step_charged = 0, 0
    for case, steps, charged, total, broken in rows:
        steps = int(steps)
        at = [int(k.strip().rstrip("+")) for k in charged.split(",") if k.strip() != "-"]
        assert all(1 <= k <= steps for k in at), case
        rule_15 = len(re.findall(r"(?:^|; )\s*15:", broken))
        assert float(total) == -5.0 * rule_15, case
        broken_total += rule_15
        last_step_charged += steps in at
    assert broken_total >= 5 and last_step_charged >= 1  # passes at the episode's end counted
