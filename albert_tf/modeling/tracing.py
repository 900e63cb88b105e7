"""AutoGraph off for albert_tf's layers: their Python already is the graph they mean.

Keras hands a subclassed layer's `call` to AutoGraph whenever it is traced outside a
`tf.function(autograph=False)`: in functional models, `model.fit` and `predict`,
`tf.saved_model.save` (TF-Hub exports) and users' own `tf.function`s. AutoGraph then
rewrites the source of `call` and of every function it calls, to turn Python control flow
on tensors into graph control flow. Nothing in albert_tf's layers branches or loops on a
tensor's value (the Trainer and the exports trace them with autograph=False), so that
rewriting is pure cost: a TF-Hub export of the demo's model (4 layers, H=128) took 6.5 s
with it and 3.6 s without (2 cores of an AMD EPYC, docs/testing.md).
"""

from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def plain_python(fn: F) -> F:
  """Marks `fn` so AutoGraph calls it as written instead of converting it.

  AutoGraph leaves its own output alone (`is_autograph_artifact`, this attribute).
  `tf.autograph.experimental.do_not_convert` sets the same mark, but on a wrapper taking
  (*args, **kwargs), whose signature Keras would then read as the layer's `call`.
  """
  fn.autograph_info__ = frozenset()
  return fn
