"""marinenav: batched multi-vessel navigation simulation and distributional RL with TorchRL."""

__version__ = "0.1.0"
