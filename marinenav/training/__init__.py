"""Training: device replay, the trainer loop, evaluation, checkpoints."""
