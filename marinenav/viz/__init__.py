"""Pictures for people (headless matplotlib): environment frames, recorded evaluation
episodes (PNG frames, GIF), learning curves. Command line: ``python -m marinenav.viz``."""

from marinenav.envs.trail import TrailRecorder  # lives in envs; re-exported for old imports
from marinenav.viz.curves import (
    RunCurves,
    aggregate,
    draw_learning_curves,
    load_runs,
    plot_learning_curves,
    read_evaluations,
)
from marinenav.viz.episode import (
    EpisodeRecording,
    record_episode,
    record_episodes,
    save_animation,
    save_frames,
)
from marinenav.viz.frames import (
    CurrentField,
    FrameState,
    current_speed_field,
    draw_environment,
    draw_frame,
    render_environment,
    render_figure,
)

__all__ = [
    "CurrentField",
    "EpisodeRecording",
    "FrameState",
    "RunCurves",
    "TrailRecorder",
    "aggregate",
    "current_speed_field",
    "draw_environment",
    "draw_frame",
    "draw_learning_curves",
    "load_runs",
    "plot_learning_curves",
    "read_evaluations",
    "record_episode",
    "record_episodes",
    "render_environment",
    "render_figure",
    "save_animation",
    "save_frames",
]
