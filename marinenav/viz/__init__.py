"""Pictures for people: rendering environments (headless matplotlib)."""

from marinenav.viz.frames import TrailRecorder, draw_environment, render_environment

__all__ = ["TrailRecorder", "draw_environment", "render_environment"]
