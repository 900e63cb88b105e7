import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.modeling import activations
from common import assert_close

# A released albert_base v2 albert_config.json, extra keys included.
RELEASED = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
    "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1,
    "type_vocab_size": 2, "vocab_size": 30000,
}


def test_released_config_round_trip_keeps_extra_keys(tmp_path):
  path = tmp_path / "albert_config.json"
  path.write_text(json.dumps(RELEASED))
  config = AlbertConfig.from_json_file(str(path))
  assert config.hidden_size == 768 and config.extra["net_structure_type"] == 0
  assert config.to_dict() == RELEASED
  again = AlbertConfig.from_dict(json.loads(config.to_json_string()))
  assert again == config
  out = tmp_path / "written.json"
  config.to_json_file(str(out))
  assert json.loads(out.read_text()) == RELEASED


@pytest.mark.parametrize("name,hidden,layers,heads,dropout", [
    ("base", 768, 12, 12, 0.0), ("base_v1", 768, 12, 12, 0.1), ("large_v1", 1024, 24, 16, 0.1),
    ("albert-large-v2", 1024, 24, 16, 0.0), ("xlarge", 2048, 24, 16, 0.0),
    ("xxlarge_v2", 4096, 12, 64, 0.0)])
def test_presets(name, hidden, layers, heads, dropout):
  c = AlbertConfig.from_preset(name)
  assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads) == (hidden, layers, heads)
  assert c.hidden_dropout_prob == c.attention_probs_dropout_prob == dropout
  assert c.embedding_size == 128 and c.vocab_size == 30000 and c.hidden_act == "gelu"


def test_unknown_preset_lists_known():
  with pytest.raises(ValueError, match="base_v2"):
    AlbertConfig.from_preset("huge")


@pytest.mark.parametrize("change,field", [
    (dict(hidden_size=100, num_attention_heads=12), "hidden_size"),
    (dict(num_hidden_layers=0), "num_hidden_layers"),
    (dict(vocab_size=-1), "vocab_size"),
    (dict(num_hidden_groups=13), "num_hidden_groups"),
    (dict(hidden_act="gelu_fast"), "hidden_act"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
    (dict(embedding_size=12.5), "embedding_size"),
])
def test_validation_names_the_field(change, field):
  with pytest.raises(ValueError, match=field):
    AlbertConfig.from_dict(dict(RELEASED, **change))


def test_bad_files_name_the_file(tmp_path):
  with pytest.raises(FileNotFoundError, match="nowhere.json"):
    AlbertConfig.from_json_file(str(tmp_path / "nowhere.json"))
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(ValueError, match="bad.json"):
    AlbertConfig.from_json_file(str(bad))
  wrong = tmp_path / "wrong.json"
  wrong.write_text(json.dumps(dict(RELEASED, num_attention_heads=7)))
  with pytest.raises(ValueError, match="wrong.json.*num_attention_heads"):
    AlbertConfig.from_json_file(str(wrong))


def test_group_index_is_the_originals():
  c = AlbertConfig.from_dict(dict(RELEASED, num_hidden_layers=12, num_hidden_groups=4))
  assert [c.group_index(i) for i in range(12)] == [int(i / 12 * 4) for i in range(12)]
  assert [c.group_index(i) for i in range(12)] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_gelu_is_the_tanh_approximation():
  x = np.linspace(-6, 6, 101).astype(np.float32)
  tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  got = activations.get("gelu")(tf.constant(x)).numpy()
  assert_close(got, tanh_form, 1e-6)
  assert_close(activations.get("gelu_new")(tf.constant(x)).numpy(), tanh_form, 1e-6)
  exact = tf.nn.gelu(tf.constant(x), approximate=False).numpy()
  assert np.abs(got - exact).max() > 1e-4  # the two differ, so the check above means something
  assert_close(activations.get("swish")(tf.constant(x)).numpy(), x / (1 + np.exp(-x)), 1e-5)
  np.testing.assert_array_equal(activations.get("relu")(tf.constant(x)).numpy(), np.maximum(x, 0))


def test_fused_training_gelu_is_gelu_and_its_derivative():
  """The fused training GELU: in float32 its value equals the reference at 1e-6 and its
  gradient autodiff of the reference at 1e-5; in bfloat16 values and gradient are the
  tanh form's to bfloat16 rounding."""
  x64 = np.linspace(-6, 6, 241)
  c = np.sqrt(2 / np.pi)
  t = np.tanh(c * (x64 + 0.044715 * x64 ** 3))
  value = 0.5 * x64 * (1 + t)
  slope = 0.5 * (1 + t) + 0.5 * x64 * (1 - t ** 2) * c * (1 + 3 * 0.044715 * x64 ** 2)
  step = 1e-6   # the closed form above against the function itself
  assert_close(
      slope, (0.5 * (x64 + step) * (1 + np.tanh(c * ((x64 + step) + 0.044715 * (x64 + step) ** 3)))
              - 0.5 * (x64 - step) * (1 + np.tanh(c * ((x64 - step) + 0.044715 * (x64 - step) ** 3))))
      / (2 * step), 1e-6)

  x32 = tf.constant(x64, tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(x32)
    y = activations.gelu(x32)
  assert_close(activations._gelu_backward_fused(x32, tf.ones_like(x32)).numpy(),
               tape.gradient(y, x32).numpy(), 1e-5)
  assert_close(activations.gelu_fused(x32).numpy(), y.numpy(), 1e-6)
  fused = activations.for_training(activations.get("gelu"))
  assert fused is activations.gelu_fused
  assert activations.for_training(tf.nn.relu) is tf.nn.relu

  x16 = tf.constant(x64, tf.bfloat16)
  dy = tf.constant(np.linspace(-2, 2, 241), tf.bfloat16)
  with tf.GradientTape() as tape:
    tape.watch(x16)
    y16 = fused(x16)
  grad = tape.gradient(y16, x16, output_gradients=dy)
  assert y16.dtype == grad.dtype == tf.bfloat16
  x_rounded = tf.cast(x16, tf.float64).numpy()   # the function at bfloat16's x
  t = np.tanh(c * (x_rounded + 0.044715 * x_rounded ** 3))
  slope = 0.5 * (1 + t) + 0.5 * x_rounded * (1 - t ** 2) * c * (1 + 3 * 0.044715 * x_rounded ** 2)
  ulp = 2.0 ** -8   # one rounding to bfloat16 of a value computed in float32
  np.testing.assert_allclose(tf.cast(y16, tf.float64).numpy(), 0.5 * x_rounded * (1 + t),
                             rtol=ulp, atol=1e-6)
  np.testing.assert_allclose(tf.cast(grad, tf.float64).numpy(),
                             slope * tf.cast(dy, tf.float64).numpy(), rtol=ulp, atol=1e-5)
