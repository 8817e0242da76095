"""Where each value of a run's config comes from: ``python train.py agent=sac --explain agent.lr``.

Hydra composes a run from its defaults list, then applies the command line. For the run
configs of ``conf/`` the sources are, in the order in which a later one overrides an earlier:

1. the typed schemas: an agent's or a scenario layout's option dataclass holds its defaults
   (``marinenav/agents/<agent>.py``, ``marinenav/scenarios/<layout>.py``; every other schema
   in ``marinenav/training/config.py`` carries types only);
2. the group files and ``conf/config.yaml`` (the paper's settings): ``conf/env/default.yaml``,
   ``conf/curriculum/*.yaml``, ``conf/scenario/*.yaml`` (a layout's slot needs), ...;
3. the recipe, ``conf/recipe/<recipe>.yaml``, then its part for the agent,
   ``conf/recipe_agent/<recipe>_<agent>.yaml`` when there is one;
4. the command line (``agent.lr=1e-3``, sweeps' values included).

:func:`value_sources` walks Hydra's own defaults list for the given overrides (the same
computation Hydra makes, through its config loader), loads each source on its own and notes
every leaf key it sets; :func:`explain` prints, for a key or every key under a node, the run's
value, the source that set it, and what it replaced. A run records the whole map in
``.hydra/sources.yaml`` (:func:`sources_yaml`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf

COMMAND_LINE = "command line"


@dataclass(frozen=True)
class Setting:
    """One source's value for a key: ``source`` names a file (``conf/recipe/fast.yaml``), a
    dataclass (``marinenav/agents/sac.py (SACConfig)``) or :data:`COMMAND_LINE`."""

    source: str
    value: Any


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of every leaf of a config node (a list is a leaf, and so is an
    empty mapping), unresolved (``${...}`` kept as written) and MISSING values left out."""
    if isinstance(node, DictConfig):
        for key in node.keys():
            if OmegaConf.is_missing(node, key):
                continue
            child = node._get_node(key)
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(child, DictConfig) and not child._is_none() and len(child) == 0:
                yield name, {}
            elif isinstance(child, DictConfig) and not child._is_none():
                yield from _leaves(child, name)
            elif isinstance(child, ListConfig) and not child._is_none():
                yield name, OmegaConf.to_container(child, resolve=False)
            else:
                yield name, child._value()


def _schema_source(config_path: str) -> str:
    """The file and class of a schema of the ConfigStore (``schema/agent/sac``)."""
    from marinenav.agents import agent_class
    from marinenav.scenarios import layout_class
    from marinenav.training import config

    parts = config_path.split("/")
    if parts[:2] == ["schema", "agent"]:
        cls = agent_class(parts[2]).config_class
    elif parts[:2] == ["schema", "scenario"]:
        cls = layout_class(parts[2]).Config
    else:
        return f"marinenav/training/config.py ({config_path})"
    path = Path(inspect.getfile(cls))
    package = Path(inspect.getfile(config)).parents[2]
    try:
        path = path.relative_to(package)
    except ValueError:
        pass
    return f"{path.as_posix()} ({cls.__name__})"


def _source_name(config_path: str | None, provider: str, root: str) -> str:
    if provider == "schema" or config_path in (None, "train_schema"):
        return _schema_source(config_path or "train_schema")
    return f"{root}/{config_path}.yaml"


def value_sources(
    overrides: Sequence[str], config_name: str = "config", config_dir: str | Path | None = None
) -> dict[str, list[Setting]]:
    """For every leaf key a run with ``overrides`` sets (Hydra's own ``hydra.*`` left out), the
    sources that set it in merge order: the last one gives the run's value.

    Uses the initialized Hydra (inside ``train.py``'s run) or, with ``config_dir``, initializes
    one on that directory for the call. Raises Hydra's errors for overrides it refuses."""
    if GlobalHydra.instance().is_initialized():
        return _value_sources(list(overrides), config_name, "conf")
    if config_dir is None:
        raise ValueError("Hydra is not initialized: give the config directory")
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base="1.3"):
        return _value_sources(list(overrides), config_name, Path(config_dir).name)


def _value_sources(overrides: list[str], config_name: str, root: str) -> dict[str, list[Setting]]:
    from hydra._internal.config_repository import CachingConfigRepository

    loader = GlobalHydra.instance().config_loader()
    defaults = loader.compute_defaults_list(config_name, overrides, RunMode.RUN)
    repository = CachingConfigRepository(loader.repository)
    sources: dict[str, list[Setting]] = {}
    for default in defaults.defaults:
        if default.config_path is not None and default.config_path.startswith("hydra/"):
            continue  # Hydra's own settings
        loaded = loader._load_single_config(default, repository)  # what Hydra merges next
        name = _source_name(default.config_path, loaded.provider, root)
        for key, value in _leaves(loaded.config):
            if not key.startswith("hydra."):
                sources.setdefault(key, []).append(Setting(name, value))
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.key_or_group
        if override.is_sweep_override() or key.startswith("hydra") or override.is_delete():
            continue
        if override.package is None and repository.group_exists(key):
            continue  # a group choice (agent=sac): its files are in the list above
        value = override.value()
        if isinstance(value, dict):  # key={a: 1, b: 2} sets each leaf under key
            for leaf, leaf_value in _leaves(OmegaConf.create(value), key):
                sources.setdefault(leaf, []).append(Setting(COMMAND_LINE, leaf_value))
        else:
            sources.setdefault(key, []).append(Setting(COMMAND_LINE, value))
    # an empty mapping that a later source filled (+scenario.rule_parts.X=...) is no leaf
    filled = [key for key, chain in sources.items() if chain[-1].value == {}
              and any(other.startswith(f"{key}.") for other in sources)]  # fmt: skip
    for key in filled:
        del sources[key]
    return sources


def _format_value(value: Any) -> str:
    return "null" if value is None else str(value)


def explain(
    sources: dict[str, list[Setting]], keys: Sequence[str], final: DictConfig
) -> str:
    """Lines saying, for each key (a leaf, or every leaf under a node) of the composed run
    config ``final``, its value, the source that set it and the earlier values it replaced.
    Raises ``KeyError`` naming the config's top-level keys for a key it does not have."""
    lines = []
    for key in keys:
        matched = sorted(k for k in sources if k == key or k.startswith(key + "."))
        if not matched:
            top = ", ".join(sorted({k.split(".")[0] for k in sources}))
            raise KeyError(f"unknown key {key}: the config has {top}")
        for leaf in matched:
            chain = sources[leaf]
            value = OmegaConf.select(final, leaf, throw_on_missing=False)
            if isinstance(value, ListConfig | DictConfig):
                value = OmegaConf.to_container(value, resolve=True)
            line = f"{leaf} = {_format_value(value)}    set by {chain[-1].source}"
            if isinstance(chain[-1].value, str) and "${" in chain[-1].value:
                line += f" as {chain[-1].value}"
            if len(chain) > 1:
                earlier = "; ".join(
                    f"{_format_value(s.value)} in {s.source}" for s in reversed(chain[:-1])
                )
                line += f" (over {earlier})"
            lines.append(line)
    return "\n".join(lines)


def sources_yaml(sources: dict[str, list[Setting]]) -> str:
    """The map a run records in ``.hydra/sources.yaml``: every key, the source that set its
    value (the last of its chain)."""
    return OmegaConf.to_yaml(
        OmegaConf.create({key: chain[-1].source for key, chain in sorted(sources.items())})
    )
