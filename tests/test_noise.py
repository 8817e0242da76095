"""Perception noise statistics: Gaussian position / velocity noise and the von Mises
radius noise, sampled without host synchronisation."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import torch

from marinenav.sim import MarineNavSimulator
from marinenav.sim.noise import VonMisesTable, von_mises_abs_quantiles

SCENARIO = json.loads((Path(__file__).parent / "data" / "one_robot_one_obstacle.json").read_text())


def _noisy_scenario(pos_std: float, vel_std: float, kappa: float, ratio: float) -> dict:
    scenario = copy.deepcopy(SCENARIO)
    perception = scenario["robots"]["perception"]
    perception.update(pos_std=[pos_std], vel_std=[vel_std], r_kappa=[kappa], r_mean_ratio=[ratio])
    return scenario


@pytest.mark.parametrize("kappa", [0.5, 1.0, 4.0])
def test_von_mises_matches_the_distribution(kappa: float) -> None:
    gen = torch.Generator().manual_seed(0)
    table = VonMisesTable([kappa], dtype=torch.float64)
    x = table.sample(torch.tensor(kappa, dtype=torch.float64), (200_000,), gen)
    assert x.min() >= -math.pi and x.max() <= math.pi
    # E[cos X] = I1(kappa) / I0(kappa), E[sin X] = 0
    expected = torch.special.i1(torch.tensor(kappa)) / torch.special.i0(torch.tensor(kappa))
    assert x.cos().mean().item() == pytest.approx(expected.item(), abs=0.005)
    assert x.sin().mean().item() == pytest.approx(0.0, abs=0.005)
    # histogram against the density exp(kappa cos x) / (2 pi I0(kappa))
    edges = torch.linspace(-math.pi, math.pi, 21, dtype=torch.float64)
    counts = torch.histc(x, bins=20, min=-math.pi, max=math.pi) / x.numel()
    fine = torch.linspace(-math.pi, math.pi, 20 * 200 + 1, dtype=torch.float64)
    density = torch.exp(kappa * fine.cos()) / (2 * math.pi * torch.special.i0(torch.tensor(kappa)))
    cdf = torch.cat(
        (torch.zeros(1, dtype=torch.float64), torch.cumulative_trapezoid(density, fine))
    )
    expected_mass = cdf[::200].diff()
    assert edges.numel() == expected_mass.numel() + 1
    torch.testing.assert_close(counts, expected_mass, atol=0.003, rtol=0.0)


def test_von_mises_small_kappa_is_uniform() -> None:
    table = VonMisesTable([0.0])
    x = table.sample(torch.tensor(0.0), (100_000,), torch.Generator().manual_seed(1))
    assert x.mean().item() == pytest.approx(0.0, abs=0.02)
    assert x.var().item() == pytest.approx(math.pi**2 / 3, rel=0.02)


def _bessel_i(order: int, kappa: float) -> float:
    """Modified Bessel function of the first kind by its power series (independent of torch)."""
    return sum(
        math.exp(
            (2 * m + order) * math.log(kappa / 2) - math.lgamma(m + 1) - math.lgamma(m + order + 1)
        )
        for m in range(80)
    )


@pytest.mark.parametrize("kappa", [0.5, 1.0, 4.0, 20.0])
def test_quantile_table_matches_the_fourier_cdf(kappa: float) -> None:
    """P(|X| <= q_j) = j / resolution at every table node, with the CDF from its Fourier series
    P(|X| <= x) = x / pi + 2 / (pi I0) sum_n I_n(kappa) sin(n x) / n."""
    resolution = 256
    q = von_mises_abs_quantiles(kappa, resolution)
    assert q[0] == 0 and q[-1] == math.pi and bool((q.diff() >= 0).all())
    n = torch.arange(1, 120, dtype=torch.float64)
    bessel = torch.tensor([_bessel_i(int(k), kappa) for k in n], dtype=torch.float64)
    series = (bessel / n * torch.sin(n * q.unsqueeze(-1))).sum(-1)
    cdf = q / math.pi + 2 / (math.pi * _bessel_i(0, kappa)) * series
    expected = torch.linspace(0, 1, resolution + 1, dtype=torch.float64)
    torch.testing.assert_close(cdf, expected, atol=1e-8, rtol=0.0)


def test_von_mises_table_draws_each_element_with_its_own_kappa() -> None:
    table = VonMisesTable([4.0, 0.5, 1.0], dtype=torch.float64)
    kappa = torch.tensor([0.5, 1.0, 4.0], dtype=torch.float64).repeat(100_000)
    x = table.sample(kappa, tuple(kappa.shape), torch.Generator().manual_seed(2))
    for value in (0.5, 1.0, 4.0):
        k = torch.tensor(value, dtype=torch.float64)
        ratio = (torch.special.i1(k) / torch.special.i0(k)).item()
        assert x[kappa == value].cos().mean().item() == pytest.approx(ratio, abs=0.006)
        assert x[kappa == value].sin().mean().item() == pytest.approx(0.0, abs=0.006)


def test_von_mises_table_rejects_a_bad_kappa() -> None:
    with pytest.raises(ValueError, match="kappa"):
        VonMisesTable([-1.0])


def test_simulator_builds_tables_for_loaded_kappas() -> None:
    """A loaded scenario with a new kappa gets its own table; the perceived radius follows it."""
    n = 3000
    scenario = _noisy_scenario(pos_std=0.0, vel_std=0.0, kappa=4.0, ratio=0.8)
    sim = MarineNavSimulator.from_scenarios([scenario] * n, dtype=torch.float64, seed=4)
    assert 4.0 in sim._radius_noise.kappas.tolist()
    factor = sim.observation.objects[:, 0, 0, 4] / SCENARIO["env"]["obstacles"]["r"][0]
    x = (factor - 0.8) / 0.2 * math.pi
    k = torch.tensor(4.0, dtype=torch.float64)
    assert x.cos().mean().item() == pytest.approx(
        (torch.special.i1(k) / torch.special.i0(k)).item(), abs=0.01
    )


def test_observation_noise_statistics() -> None:
    """Thousands of copies of one robot next to one obstacle: the perceived obstacle's position,
    velocity and radius follow the noise models of docs/simulator.md, "The model in equations"."""
    n = 3000
    scenario = _noisy_scenario(pos_std=0.05, vel_std=0.05, kappa=1.0, ratio=0.8)
    sim = MarineNavSimulator.from_scenarios([scenario] * n, dtype=torch.float64, seed=3)
    obs = sim.observation
    assert bool(obs.objects_mask[:, 0, 0].all())
    truth = torch.tensor(SCENARIO["env"]["obstacles"]["positions"][0], dtype=torch.float64)
    start = torch.tensor(SCENARIO["robots"]["start"][0], dtype=torch.float64)
    theta = SCENARIO["robots"]["init_theta"][0]
    c, s = math.cos(theta), math.sin(theta)
    rel = truth - start
    expected = torch.tensor(
        [c * rel[0] + s * rel[1], -s * rel[0] + c * rel[1]], dtype=torch.float64
    )
    seen = obs.objects[:, 0, 0]  # [n, 5]
    position_error = seen[:, :2] - expected
    assert position_error.mean(0).abs().max().item() < 0.005
    torch.testing.assert_close(
        position_error.std(0), torch.full((2,), 0.05, dtype=torch.float64), rtol=0.06, atol=0.0
    )
    # a static obstacle is seen with a noisy, non-zero velocity
    torch.testing.assert_close(
        seen[:, 2:4].std(0), torch.full((2,), 0.05, dtype=torch.float64), rtol=0.06, atol=0.0
    )
    # radius factor rho + (1 - rho) X / pi with X ~ VonMises(0, 1): in [0.6, 1.0], mean 0.8
    factor = seen[:, 4] / SCENARIO["env"]["obstacles"]["r"][0]
    assert factor.min().item() >= 0.6 - 1e-12 and factor.max().item() <= 1.0 + 1e-12
    assert factor.mean().item() == pytest.approx(0.8, abs=0.005)
    x = (factor - 0.8) / 0.2 * math.pi
    i_ratio = (torch.special.i1(torch.tensor(1.0)) / torch.special.i0(torch.tensor(1.0))).item()
    assert x.cos().mean().item() == pytest.approx(i_ratio, abs=0.03)


def test_noise_off_gives_exact_observations() -> None:
    scenario = _noisy_scenario(pos_std=0.0, vel_std=0.0, kappa=1.0, ratio=1.0)
    sim = MarineNavSimulator.from_scenarios([scenario] * 4, dtype=torch.float64)
    objects = sim.observation.objects[:, 0, 0]
    assert bool((objects == objects[0]).all())
    assert bool((objects[:, 2:4] == 0).all())
