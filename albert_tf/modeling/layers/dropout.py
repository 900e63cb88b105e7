"""Dropout whose random state can be checkpointed, so a resumed run draws the same masks.

tf_keras's default dropout uses stateful random ops whose state lives in the
runtime: a run resumed from a checkpoint draws other masks than the run that
was never stopped. `dropout` builds Keras dropout on a `tf.random.Generator`
instead (`rng_type="stateful"`); the Trainer's checkpoint holds the
generators' state (`training.trainer.random_generators`). tf_keras leaves
them out of model checkpoints on purpose, so weight files are unchanged.
The transformer blocks draw their masks otherwise (one stateless seed per
application, from a generator of their own, so `--recompute` can replay them).
"""

import tf_keras as keras


def dropout(rate: float, **kwargs) -> keras.layers.Dropout:
  """`keras.layers.Dropout(rate)` drawing its masks from its own tf.random.Generator."""
  return keras.layers.Dropout(rate, rng_type="stateful", **kwargs)

