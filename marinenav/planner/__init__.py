"""Planner files: the original C++ (VRX) planner's files and ours, written, read and called.

A *planner file* is an agent's acting network in float64 in the calling convention of the
original's C++ node (docs/migrating.md, "The node's call, from C++"). The package holds the
three parts that share that convention, each depending only on the one before it:

* :mod:`marinenav.planner.convention`: how a planner file is named, called and read (inputs
  and example inputs, file names and formats, the export record's keys, the action rule with
  the options an agent declares);
* :mod:`marinenav.planner.export`: writing an agent as TorchScript, an AOTInductor ``.pt2``
  package or ONNX (:mod:`marinenav.planner.elementary_atan` for ONNX's missing float64
  ``atan``), and the command line ``python -m marinenav.export RUN_DIR``;
* :mod:`marinenav.planner.load`: loading any of those files (the original's shipped files too)
  as a batched TorchRL policy, :class:`PlannerPolicy`, whose names this package re-exports::

      from marinenav.planner import planner_policy

      policy = planner_policy("tests/data/pretrained/traced_AC_IQN_model.pt")
      policy(td)  # writes ("agents", "action") for any batch of MarineNavEnv observations

The old module paths ``marinenav.export``, ``marinenav.planner_convention`` and
``marinenav.elementary_atan`` are the same modules under their old names
(docs/migrating.md, "Old module paths").
"""

from marinenav.planner.load import (
    DEFAULT_BLOCK_ROWS,
    OnnxPlanner,
    PackagePlanner,
    PlannerLoadError,
    PlannerModule,
    PlannerPolicy,
    check_planner_io,
    load_planner,
    planner_policy,
)

__all__ = [
    "DEFAULT_BLOCK_ROWS",
    "OnnxPlanner",
    "PackagePlanner",
    "PlannerLoadError",
    "PlannerModule",
    "PlannerPolicy",
    "check_planner_io",
    "load_planner",
    "planner_policy",
]
