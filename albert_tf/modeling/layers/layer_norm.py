"""LayerNorm over the last axis, in float32, with a hand-written gradient.

Keras' `LayerNormalization` computes the same function; its gradient is what
autodiff makes of `tf.nn.moments` + `tf.nn.batch_normalization`: about twice
the elementwise passes over [T, H] of the closed form below. In a bfloat16
training step of ALBERT-base this layer's share of the non-matmul time is the
largest after the GELU (see `benchmarks/benchmark_peers.py`).
"""

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling.tracing import custom_gradient, plain_python


@keras.utils.register_keras_serializable(package="albert_tf")
class LayerNorm(keras.layers.LayerNormalization):
  """`LayerNormalization(axis=-1)` with the same weights, names and config.

  y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + epsilon), the
  statistics over the last axis, computed in float32 whatever the input dtype
  (the output has the compute dtype). Gradients:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma,
    dgamma = sum(dy * xhat), dbeta = sum(dy)  (sums over all leading axes).
  Other axes, or `center`/`scale` off, fall back to Keras' own computation.
  """

  @plain_python
  def call(self, inputs):
    if (isinstance(inputs, tf.RaggedTensor) or inputs.shape.rank is None
        or self.axis != [inputs.shape.rank - 1] or not (self.center and self.scale)):
      return super().call(inputs)
    return _layer_norm(inputs, tf.convert_to_tensor(self.gamma, tf.float32),
                       tf.convert_to_tensor(self.beta, tf.float32), self.epsilon)


def _layer_norm(x, gamma, beta, epsilon):
  @custom_gradient
  def forward(x, gamma, beta):
    x32 = tf.cast(x, tf.float32)                                             # [..., H]
    centered = x32 - tf.reduce_mean(x32, -1, keepdims=True)
    rstd = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), -1, keepdims=True) + epsilon)
    xhat = centered * rstd                                                   # [..., H]

    def grad(dy):
      dy = tf.cast(dy, tf.float32)
      leading = tf.range(tf.rank(dy) - 1)
      g = dy * gamma
      dx = rstd * (g - tf.reduce_mean(g, -1, keepdims=True)
                   - xhat * tf.reduce_mean(g * xhat, -1, keepdims=True))
      return (tf.cast(dx, x.dtype), tf.reduce_sum(dy * xhat, leading),
              tf.reduce_sum(dy, leading))

    return tf.cast(xhat * gamma + beta, x.dtype), grad

  return forward(x, gamma, beta)
