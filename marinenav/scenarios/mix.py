"""``scenario=mix``: episodes drawn from several layouts at once, one navigator for many waters
(docs/scenarios.md, "Mixed waters").

Each restarting environment draws a *part* with probability proportional to its weight and
starts a scenario of that part's layout (any registered layout but ``mix`` and ``files``, with
its own options). Every part generates for every restarting environment and the draw picks one
per environment (a handful of parts: a loop over parts, never over environments), so the
random stream, and with it a seeded run, does not depend on the mix of the moment. An episode
remembers its part (``Scenario.layout_part``), and a part's own rules (reward terms, end
conditions) apply to its episodes only. The curriculum clock reaches every part, so a
``random`` part keeps its stages.

Eight rules of the mix's own act in every part, each off at 0: ``cross_ahead_penalty``, the
give-way term of :mod:`marinenav.scenarios.give_way` per step, ``bow_crossing_penalty``, its
event (once, on the step a vessel crosses the bow of one it must keep out of the way of, less
than ``bow_crossing_range`` m from it), ``passed_ahead_penalty``, the pass the COLREGs
check reads (once, at the closest approach, ahead of the other's beam with the other to
starboard, within 20 m; with ``passed_ahead_at_boundaries`` also one between two steps or at
the episode's start or end), ``give_way_check_penalty``, the rule-15 check itself (its
verdict so far paid as it changes, summing over an episode to the broken give-way encounters the
check counts; ``give_way_check_from=in_range`` fixes who gives way where the two first came
within 20 m instead of at the start), ``port_turn_penalty``, per radian turned to port while a
vessel ahead or to starboard closes within 20 m, ``give_way_speed_penalty``, per metre made good
while a vessel to starboard that it has not yet passed astern of closes within 20 m, and
``stand_on_turn_penalty``, per radian turned to port while a vessel that must keep out of its
way closes within 20 m (the stand-on vessel's side of the crossing, rule 17),
``head_on_clearance_penalty``, per step while a head-on vessel closes less than
``head_on_clearance`` m to port of the own course line; all
against ``cross_ahead_of`` vessels (``any`` by default: the same rule whether the other vessel
gives way or not, so that what a part rewards does not contradict what another penalises for a
geometry the policy sees alike). One more reads no other vessel: ``overspeed_penalty``, per
step and m/s of speed over the ground above ``safe_speed`` (2 m/s; rule 6, safe speed,
:mod:`marinenav.scenarios.safe_speed`). ``rule_parts`` confines one of them to the episodes of
the parts it names (``scenario.rule_parts.give_way_check_penalty=[imazu]``: the check charged
where the encounters are set up as the check reads them, and nowhere else).

The evaluation set is each part's own, in order (a part's ``layout_part`` on each episode):
``episodes_per_stage`` episodes per stage of every part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from omegaconf import MISSING
from torch import Tensor

from marinenav.scenarios.base import (
    DeviceConstant,
    ScenarioLayout,
    make_layout,
    register_layout,
)
from marinenav.scenarios.give_way import (
    AGAINST,
    GIVE_WAY_FROM,
    bow_crossing_penalty,
    cross_ahead_penalty,
    give_way_check_penalty,
    give_way_speed_penalty,
    head_on_clearance_penalty,
    passed_ahead_penalty,
    port_turn_penalty,
    stand_on_turn_penalty,
)
from marinenav.scenarios.safe_speed import overspeed_penalty
from marinenav.sim.rules import LayoutRules
from marinenav.sim.scenario import Scenario, Slots

NOT_MIXABLE = ("mix", "files")  # a part cannot be a mix, nor episodes read from files
# the mix's own rules, in the order of their terms: option (its weight) -> (term, rule)
RULES_OF_THE_MIX = {
    "cross_ahead_penalty": ("cross_ahead", cross_ahead_penalty),
    "bow_crossing_penalty": ("bow_crossing", bow_crossing_penalty),
    "passed_ahead_penalty": ("passed_ahead", passed_ahead_penalty),
    "give_way_check_penalty": ("give_way_check", give_way_check_penalty),
    "port_turn_penalty": ("port_turn", port_turn_penalty),
    "give_way_speed_penalty": ("give_way_speed", give_way_speed_penalty),
    "stand_on_turn_penalty": ("stand_on_turn", stand_on_turn_penalty),
    "head_on_clearance_penalty": ("head_on_clearance", head_on_clearance_penalty),
    "overspeed_penalty": ("overspeed", overspeed_penalty),
}
NO_OTHER_VESSEL = ("overspeed_penalty",)  # mix rules that read the own vessel only


@dataclass
class MixConfig:
    # part name -> {"layout": a layout's name, "weight": > 0, "options": that layout's options};
    # required: the parts live in conf/scenario/mix.yaml (they follow the run's curriculum)
    parts: dict[str, Any] = MISSING
    # the mix's own term in every part: per step crossing ahead of a vessel to starboard
    # (give_way.cross_ahead_penalty), against cross_ahead_of vessels ("any" or "traffic")
    cross_ahead_penalty: float = 0.0
    # ... and once on the step a policy vessel crosses the bow of a vessel that has it on its
    # port side (give_way.bow_crossing_penalty; a collision costs 5), less than
    # bow_crossing_range m from it (20: the perception range)
    bow_crossing_penalty: float = 0.0
    bow_crossing_range: float = 20.0
    # ... and once at the closest approach to a vessel passed ahead of its beam with it on the
    # starboard side, within 20 m (give_way.passed_ahead_penalty: what the rule-15 check reads)
    passed_ahead_penalty: float = 0.0
    # ... read at every closest approach the check reads: also one on the boundary between two
    # steps or at the episode's start or end (give_way.passed_ahead_penalty, at_boundaries)
    passed_ahead_at_boundaries: bool = False
    # ... the rule-15 check itself: in sum over an episode -weight per vessel the check finds
    # passed ahead of (who gives way fixed at the start, the pass read at the closest approach
    # of the episode), paid as its verdict so far changes (give_way.give_way_check_penalty)
    give_way_check_penalty: float = 0.0
    # ... who gives way fixed at the episode's start ("start", the check's) or where the two
    # first came within 20 m ("in_range"; give_way.give_way_check_penalty, give_way_from)
    give_way_check_from: str = "start"
    # ... and per radian turned to port on a step while a vessel ahead or to starboard closes
    # within 20 m (give_way.port_turn_penalty: the first alteration the checks read)
    port_turn_penalty: float = 0.0
    # ... and per metre made good on a step while a vessel to starboard, not yet passed astern,
    # closes within 20 m (give_way.give_way_speed_penalty: the slow approach the keeping
    # checkpoints made, not the race)
    give_way_speed_penalty: float = 0.0
    # ... and per radian turned to port on a step while a vessel that must keep out of its way
    # (on its port side, not yet astern of it) closes within 20 m (give_way.stand_on_turn_penalty:
    # rule 17, the stand-on vessel's duty)
    stand_on_turn_penalty: float = 0.0
    # ... and per step while a head-on vessel (as first met within 20 m) closes ahead of the
    # beam less than head_on_clearance m to port of the own course line, in proportion to the
    # shortfall (give_way.head_on_clearance_penalty: rule 14, port to port at a distance)
    head_on_clearance_penalty: float = 0.0
    head_on_clearance: float = 10.0
    # ... and per step, per m/s of speed over the ground above safe_speed (m/s), in every
    # water whatever is in sight (safe_speed.overspeed_penalty: rule 6, no race across a
    # target's track before it can be seen)
    overspeed_penalty: float = 0.0
    safe_speed: float = 2.0
    cross_ahead_of: str = "any"
    # a mix rule's option name -> the parts whose episodes it acts in (every part where absent)
    rule_parts: dict[str, Any] = field(default_factory=dict)


def _gated(rule, parts: tuple[int, ...]):
    """``rule`` applied to the episodes of ``parts`` only (0 / false elsewhere)."""

    def gated(scenario: Scenario, events) -> Tensor:
        value = rule(scenario, events)
        mine = scenario.layout_part == parts[0]
        for part in parts[1:]:  # a handful of parts at most
            mine = mine | (scenario.layout_part == part)
        return torch.where(mine.unsqueeze(-1), value, torch.zeros_like(value))

    return gated


@register_layout
class MixLayout(ScenarioLayout):
    """A weighted mixture of layouts (module docstring); options checked in one line each."""

    name = "mix"
    Config = MixConfig

    def __init__(self, config: MixConfig | None = None) -> None:
        c = config or MixConfig()
        if c.parts == MISSING or not c.parts:
            raise ValueError("scenario.parts is empty: give at least one part")
        self.part_names: list[str] = []
        self.layouts: list[ScenarioLayout] = []
        weights = []
        for name, part in c.parts.items():
            where = f"scenario.parts.{name}"
            if not isinstance(part, dict) or "layout" not in part:
                raise ValueError(f"{where} needs a 'layout' (and a 'weight')")
            unknown = sorted(set(part) - {"layout", "weight", "options"})
            if unknown:
                raise ValueError(
                    f"{where} has no key {unknown[0]!r}; its keys: layout, weight, options"
                )
            if part["layout"] in NOT_MIXABLE:
                raise ValueError(f"{where}.layout cannot be {part['layout']!r}")
            weight = part.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                raise ValueError(f"{where}.weight must be a positive number, got {weight!r}")
            try:
                layout = make_layout(part["layout"], part.get("options") or {})
            except (TypeError, ValueError) as error:
                raise ValueError(f"{where}: {error}") from None
            self.part_names.append(name)
            self.layouts.append(layout)
            weights.append(float(weight))
        for key in RULES_OF_THE_MIX:
            value = getattr(c, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"scenario.{key} must be >= 0, got {value!r}")
        for key in ("bow_crossing_range", "head_on_clearance", "safe_speed"):
            value = getattr(c, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                unit = "m/s" if key == "safe_speed" else "m"
                raise ValueError(f"scenario.{key} must be > 0 {unit}, got {value!r}")
        at_boundaries = c.passed_ahead_at_boundaries
        if not isinstance(at_boundaries, bool):
            raise ValueError(
                f"scenario.passed_ahead_at_boundaries must be true or false: {at_boundaries!r}"
            )
        if c.give_way_check_from not in GIVE_WAY_FROM:
            raise ValueError(
                f"scenario.give_way_check_from must be one of {GIVE_WAY_FROM}, "
                f"got {c.give_way_check_from!r}"
            )
        if c.cross_ahead_of not in AGAINST:
            raise ValueError(
                f"scenario.cross_ahead_of must be one of {AGAINST}, got {c.cross_ahead_of!r}"
            )
        self.rule_parts = self._rule_parts(c)
        self.config = c
        total = sum(weights)
        self.weights = [w / total for w in weights]
        # [P] cumulative probabilities of the parts
        self._cumulative = DeviceConstant(torch.tensor(self.weights, dtype=torch.float64).cumsum(0))

    def _rule_parts(self, c: MixConfig) -> dict[str, tuple[int, ...]]:
        """``c.rule_parts`` checked (a mix rule that is on, each a non-empty list of distinct
        part names), as the parts' indices."""
        out = {}
        for key, names in (c.rule_parts or {}).items():
            where = f"scenario.rule_parts.{key}"
            if key not in RULES_OF_THE_MIX:
                raise ValueError(f"{where}: no mix rule {key!r}; the rules: "
                                 f"{', '.join(RULES_OF_THE_MIX)}")  # fmt: skip
            if not getattr(c, key) > 0:
                raise ValueError(f"{where} confines a rule that is off (scenario.{key} = 0)")
            if isinstance(names, str) or not names or len(set(names)) != len(list(names)):
                raise ValueError(f"{where} must be a non-empty list of distinct part names, "
                                 f"got {names!r}")  # fmt: skip
            unknown = [n for n in names if n not in self.part_names]
            if unknown:
                raise ValueError(f"{where} names no part {unknown[0]!r}; the parts: "
                                 f"{', '.join(self.part_names)}")  # fmt: skip
            out[key] = tuple(self.part_names.index(n) for n in names)
        return out

    @property
    def slots(self) -> Slots:
        counts = zip(*(layout.slots for layout in self.layouts), strict=True)
        return Slots(*(max(count) for count in counts))

    @property
    def rules(self) -> LayoutRules:
        terms, ends = {}, {}
        for k, (name, layout) in enumerate(zip(self.part_names, self.layouts, strict=True)):
            for term, rule in layout.rules.reward_terms.items():
                terms[f"{name}.{term}"] = _gated(rule, (k,))
            for end, rule in layout.rules.end_conditions.items():
                ends[f"{name}.{end}"] = _gated(rule, (k,))
        c = self.config
        options = {
            "bow_crossing_penalty": {"within": float(c.bow_crossing_range)},
            "passed_ahead_penalty": {"at_boundaries": c.passed_ahead_at_boundaries},
            "give_way_check_penalty": {"give_way_from": c.give_way_check_from},
            "head_on_clearance_penalty": {"clearance": float(c.head_on_clearance)},
            "overspeed_penalty": {"safe_speed": float(c.safe_speed)},
        }
        for key, (term, rule) in RULES_OF_THE_MIX.items():
            weight = getattr(c, key)
            if weight > 0:
                against = {} if key in NO_OTHER_VESSEL else {"against": c.cross_ahead_of}
                rule = partial(rule, weight=weight, **against, **options.get(key, {}))
                if key in self.rule_parts:
                    rule = _gated(rule, self.rule_parts[key])
                terms[term] = rule
        reads_closest = (
            c.give_way_check_penalty > 0
            or c.head_on_clearance_penalty > 0
            or any(layout.rules.closest_approach for layout in self.layouts)
        )
        return LayoutRules(reward_terms=terms, end_conditions=ends, closest_approach=reads_closest)

    def radius_noise_kappas(self, base: Scenario) -> Tensor:
        return torch.cat([layout.radius_noise_kappas(base).reshape(-1) for layout in self.layouts])

    def generate(self, base: Scenario, step: Tensor, generator: torch.Generator) -> Scenario:
        n, device = base.num_envs, base.start.device
        draw = torch.rand(n, generator=generator, dtype=torch.float64, device=device)
        cumulative = self._cumulative.on(device)
        pick = torch.searchsorted(cumulative, draw, right=True).clamp(max=len(self.layouts) - 1)
        out = None
        for k, layout in enumerate(self.layouts):
            made = layout.generate(base, step, generator)
            made.layout_part.fill_(k)
            out = made if out is None else made.select(pick == k, out)
        return out

    def evaluation_scenarios(
        self, episodes_per_stage: int, seed: int, slots: Slots | tuple[int, int, int]
    ) -> list[dict]:
        """Every part's own evaluation set, in the order of the parts, each episode marked
        with its part (``env.layout_part``)."""
        out = []
        for k, layout in enumerate(self.layouts):
            for scenario in layout.evaluation_scenarios(episodes_per_stage, seed, slots):
                scenario["env"]["layout_part"] = k
                out.append(scenario)
        return out

    def episode_labels(self, scenarios: list[dict]) -> list[str]:
        """``<part> <k>``: each episode's part and its index in the set."""
        return [
            f"{self.part_names[int(s['env'].get('layout_part', 0))]} {k}"
            for k, s in enumerate(scenarios)
        ]


__all__ = ["MixConfig", "MixLayout"]
