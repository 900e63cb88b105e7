"""Dropout whose random state can be checkpointed, so a resumed run draws the same masks.

tf_keras's default dropout uses stateful random ops whose state lives in the
runtime: a run resumed from a checkpoint draws other masks than the run that
was never stopped. `dropout` builds Keras dropout on a `tf.random.Generator`
instead (`rng_type="stateful"`); the Trainer's checkpoint holds the
generators' state (`random_generators` below; TF-Hub exports save them too). tf_keras leaves
them out of model checkpoints on purpose, so weight files are unchanged.
The transformer blocks draw their masks otherwise (one stateless seed per
application, from a generator of their own, so `--recompute` can replay them).
"""

from typing import List

import tensorflow as tf
import tf_keras as keras


def dropout(rate: float, **kwargs) -> keras.layers.Dropout:
  """`keras.layers.Dropout(rate)` drawing its masks from its own tf.random.Generator."""
  return keras.layers.Dropout(rate, rng_type="stateful", **kwargs)


def random_generators(model: keras.Model) -> List[tf.random.Generator]:
  """The tf.random.Generators of `model`'s random layers (dropout built with
  rng_type="stateful", and each transformer block's source of dropout seeds),
  created now if the model is not built yet, in a fixed order, for the training
  checkpoint: tf_keras keeps them out of model checkpoints, and without them a
  resumed run draws other masks. Call it in the strategy's scope."""
  found = []
  for layer in model.submodules:
    rng = getattr(layer, "_random_generator", None)
    if not isinstance(layer, keras.layers.Layer) or not hasattr(rng, "_maybe_init"):
      continue
    rng._maybe_init()  # pylint: disable=protected-access
    if isinstance(getattr(rng, "_generator", None), tf.random.Generator):
      found.append(rng._generator)  # pylint: disable=protected-access
  return found
