"""Activation recompute for one transformer block: keep its inputs (and one tensor it
chooses), run it again in the backward pass."""

import tensorflow as tf


def recompute_grad(f):
  """`f(x, *args)` that keeps its inputs (and `kept`) for the backward pass and runs again there.

  As `tf.recompute_grad`, for a block that takes its weights as tensor arguments:
  [B, S, H] hidden states `x` and tensors `args` (the block's read-once weights and
  its attention bias) in. `f(x, *args, kept=None)` returns `(output, kept)`: its
  output and a tensor to keep for the backward pass, which the replay gets back as
  `kept=` (a result that is cheap to store and dear to compute again); the wrapped
  function returns `output`. Variables `f` reads itself (the LayerNorms') get their
  gradients too. Memory is saved where the backward pass is built in a graph (a
  tf.function step, as every training step here is).

  `tf.recompute_grad` makes every argument wait for the output gradient by adding a
  zero computed from it (so XLA, which drops control dependencies, cannot replay
  the block early). With weights as arguments that is a copy of every weight matrix
  per application: for ALBERT-xxlarge ~0.8 GiB written at each of its 12 layers.
  Here only `x` waits on the gradient (a [B, S, H] add); the replay depends on `x`,
  so it still cannot start before the gradient of its output exists.
  """

  @tf.custom_gradient
  def wrapped(x, *args):
    outputs, kept = f(x, *args)

    def grad(output_grad, variables=None):
      first = tf.reshape(output_grad, [-1])[:1]                              # [<=1]
      # 0, once the output gradient exists (NaN if it is NaN: that passes on anyway).
      after = tf.where(tf.reduce_any(tf.math.is_nan(first)), float("nan"), 0.0)
      x_again = x + tf.cast(after, x.dtype)                                  # [B, S, H]
      variables = list(variables or [])
      with tf.GradientTape() as tape:
        tape.watch([x_again, *args])
        tape.watch(variables)
        again, _ = f(x_again, *args, kept=kept)
      grads = tape.gradient(again, [x_again, *args] + variables, output_gradients=output_grad,
                            unconnected_gradients=tf.UnconnectedGradients.ZERO)
      n = 1 + len(args)
      return (grads[:n], grads[n:]) if variables else grads[:n]

    return outputs, grad

  return wrapped
