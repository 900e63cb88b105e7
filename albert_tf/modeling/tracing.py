"""AutoGraph off for albert_tf's layers (their Python already is the graph they mean), and
custom gradients left out of inference traces.

Keras hands a subclassed layer's `call` to AutoGraph whenever it is traced outside a
`tf.function(autograph=False)`: in functional models, `model.fit` and `predict`,
`tf.saved_model.save` (TF-Hub exports) and users' own `tf.function`s. AutoGraph then
rewrites the source of `call` and of every function it calls, to turn Python control flow
on tensors into graph control flow. Nothing in albert_tf's layers branches or loops on a
tensor's value (the Trainer and the exports trace them with autograph=False), so that
rewriting is pure cost: a TF-Hub export of the demo's model (4 layers, H=128) took 6.5 s
with it and 3.6 s without (2 cores of an AMD EPYC, docs/testing.md).
"""

import contextlib
import functools
import threading
from typing import Callable, Iterator, TypeVar

import tensorflow as tf

F = TypeVar("F", bound=Callable)


def plain_python(fn: F) -> F:
  """Marks `fn` so AutoGraph calls it as written instead of converting it.

  AutoGraph leaves its own output alone (`is_autograph_artifact`, this attribute).
  `tf.autograph.experimental.do_not_convert` sets the same mark, but on a wrapper taking
  (*args, **kwargs), whose signature Keras would then read as the layer's `call`.
  """
  fn.autograph_info__ = frozenset()
  return fn


# ----------------------------------------------------------------------------- custom gradients

_inference_only = threading.local()


@contextlib.contextmanager
def inference_only() -> Iterator[None]:
  """Traces made inside compute values only: every `custom_gradient` below is its
  forward alone, the plain ops TensorFlow differentiates itself.

  A SavedModel saves a gradient function for each custom-gradient op of each of its
  traces. Its inference traces (`training=False`, serving signatures, the serving
  classifier) need none: `hub.KerasLayer` fine-tunes through the `training=True` traces.
  Differentiating an inference trace still works (TensorFlow's gradients of the same
  ops, `tests/test_export.py`), without the custom gradients' memory savings. Leaving the
  gradient functions out makes an export and its `hub.load` faster, most of all in
  bfloat16, whose fused kernels each carry one.
  """
  before = getattr(_inference_only, "on", False)
  _inference_only.on = True
  try:
    yield
  finally:
    _inference_only.on = before


def custom_gradient(f: F) -> F:
  """`tf.custom_gradient(f)`, except inside `inference_only()`: f's forward alone."""
  with_gradient = tf.custom_gradient(f)

  @functools.wraps(f)
  def call(*args, **kwargs):
    if getattr(_inference_only, "on", False):
      return f(*args, **kwargs)[0]
    return with_gradient(*args, **kwargs)

  return call
