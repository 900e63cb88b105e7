"""The activations an `albert_config.json` may name, as the original defines them."""

import tensorflow as tf


def gelu(x):
  """GELU, tanh approximation: what the original `hidden_act: "gelu"` computes."""
  return tf.nn.gelu(x, approximate=True)


def linear(x):
  return x


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": gelu,  # Hugging Face's name for the same tanh approximation
    "relu": tf.nn.relu,
    "swish": tf.nn.silu,
    "silu": tf.nn.silu,
    "tanh": tf.math.tanh,
    "linear": linear,
}


def get(name: str, field: str = "hidden_act"):
  """Returns the activation function called `name` (case-insensitive)."""
  key = str(name).lower() if name is not None else "linear"
  if key not in _ACTIVATIONS:
    raise ValueError(f"{field}: unsupported activation {name!r}; "
                     f"choose one of {', '.join(sorted(_ACTIVATIONS))}")
  return _ACTIVATIONS[key]
