"""The activations an `albert_config.json` may name, as the original defines them."""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
  """GELU, tanh approximation: what the original `hidden_act: "gelu"` computes."""
  return tf.nn.gelu(x, approximate=True)


@tf.function(jit_compile=True, autograph=False)
def _gelu_forward_fused(x):
  """gelu(x) in float32 math, one fused XLA loop: [..., I] any float dtype -> the same."""
  return tf.cast(tf.nn.gelu(tf.cast(x, tf.float32), approximate=True), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward_fused(x, dy):
  """dy * gelu'(x) in float32 math, one fused XLA loop. With u = c (x + 0.044715 x^3),
  t = tanh(u): gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2)."""
  x32 = tf.cast(x, tf.float32)
  x2 = x32 * x32
  c = _SQRT_2_OVER_PI
  t = tf.math.tanh(x32 * (c + c * 0.044715 * x2))
  slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * (c + 3.0 * c * 0.044715 * x2)
  return tf.cast(tf.cast(dy, tf.float32) * slope, dy.dtype)


@tf.custom_gradient
def gelu_fused(x):
  """`gelu` for training: the same function in float32 math (in 16-bit dtypes a
  little closer to it than the op-by-op 16-bit chain; in float32 within 1e-6 of the
  reference ops), forward and gradient each one fused XLA kernel. Unfused, the tanh
  approximation and its autodiff gradient are about twenty elementwise passes over
  the [T, I] FFN activations: about 10% of a bfloat16 and 5% of a float32
  ALBERT-base train step on CPU; fused they take a third of that time. Only the
  input is kept for the backward pass. Inference keeps the reference ops (and so do
  exported SavedModels' serving signatures and TFLite files).
  """
  return _gelu_forward_fused(x), lambda dy: _gelu_backward_fused(x, dy)


def gelu_exact(x):
  """GELU with the error function: transformers' `hidden_act: "gelu"` (not the original's)."""
  return tf.nn.gelu(x, approximate=False)


def linear(x):
  return x


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": gelu,  # Hugging Face's name for the same tanh approximation
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "swish": tf.nn.silu,
    "silu": tf.nn.silu,
    "tanh": tf.math.tanh,
    "linear": linear,
}

# Training versions of activations that have one.
_FUSED_FOR_TRAINING = {gelu: gelu_fused}


def get(name: str, field: str = "hidden_act"):
  """Returns the activation function called `name` (case-insensitive)."""
  key = str(name).lower() if name is not None else "linear"
  if key not in _ACTIVATIONS:
    raise ValueError(f"{field}: unsupported activation {name!r}; "
                     f"choose one of {', '.join(sorted(_ACTIVATIONS))}")
  return _ACTIVATIONS[key]


def for_training(activation):
  """The version of `activation` to use in a training step: a fused one where there
  is one (the same function, fewer passes over memory), else `activation` itself."""
  return _FUSED_FOR_TRAINING.get(activation, activation)
