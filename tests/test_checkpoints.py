import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder, AlbertPretrainer, load_original_checkpoint, save_original_checkpoint
from albert_tf.modeling.checkpoints import variable_map
import original_albert
from common import GROUPED, SQUARE, TINY, assert_close, encoder_inputs, random_inputs


def _assert_matches_reference(out, ref, atol=1e-5):
  for key in ("sequence_output", "pooled_output", "sop_logits", "mlm_logits"):
    if key in ref and key in out:
      np.testing.assert_allclose(out[key].numpy(), ref[key], atol=atol, rtol=1e-5, err_msg=key)
  if "encoder_outputs" in out:
    assert len(out["encoder_outputs"]) == len(ref["encoder_outputs"])
    for got, want in zip(out["encoder_outputs"], ref["encoder_outputs"]):
      np.testing.assert_allclose(got.numpy(), want, atol=atol, rtol=1e-5)


@pytest.mark.parametrize("cfg", [GROUPED, TINY, SQUARE], ids=["grouped", "shared", "E==H"])
def test_original_checkpoint_matches_numpy_reference(tmp_path, cfg):
  weights = original_albert.random_weights(cfg)
  prefix = original_albert.write_checkpoint(str(tmp_path / "model.ckpt-best"), weights,
                                            optimizer_slots=True)
  inputs = random_inputs(cfg)
  ref = original_albert.forward(cfg, weights, inputs["input_word_ids"], inputs["input_mask"],
                                inputs["input_type_ids"], inputs["masked_lm_positions"])
  model = AlbertPretrainer(cfg)
  report = load_original_checkpoint(model, prefix)
  assert report.freshly_initialized == [] and report.unused == []
  assert len(report.loaded) == len(weights)
  _assert_matches_reference(model(inputs), ref)
  # The same checkpoint into a bare encoder: heads are simply not used.
  encoder = AlbertEncoder(cfg)
  report = load_original_checkpoint(encoder, str(tmp_path))  # a directory resolves too
  assert all(n.startswith("cls/") for n in report.unused) and len(report.unused) == 7
  _assert_matches_reference(encoder(encoder_inputs(inputs)), ref)


def test_tf1_hub_module_variables_with_module_prefix(tmp_path):
  weights = original_albert.random_weights(GROUPED, heads=False, seed=3)
  os.makedirs(tmp_path / "hub" / "variables")
  original_albert.write_checkpoint(str(tmp_path / "hub" / "variables" / "variables"), weights,
                                   prefix_names="module/")
  encoder = AlbertEncoder(GROUPED)
  report = load_original_checkpoint(encoder, str(tmp_path / "hub"))
  assert report.path.endswith(os.path.join("variables", "variables"))
  inputs = random_inputs(GROUPED)
  ref = original_albert.forward(GROUPED, weights, inputs["input_word_ids"], inputs["input_mask"],
                                inputs["input_type_ids"])
  _assert_matches_reference(encoder(encoder_inputs(inputs)), ref)


def test_encoder_only_checkpoint_into_pretrainer_reports_fresh_heads(tmp_path):
  weights = original_albert.random_weights(TINY, heads=False)
  prefix = original_albert.write_checkpoint(str(tmp_path / "enc"), weights)
  model = AlbertPretrainer(TINY)
  before = model.masked_lm.output_bias.numpy().copy()
  report = load_original_checkpoint(model, prefix)
  assert sorted(report.freshly_initialized) == sorted(
      n for n in original_albert.original_variables(TINY) if n.startswith("cls/"))
  np.testing.assert_array_equal(model.masked_lm.output_bias.numpy(), before)
  np.testing.assert_array_equal(model.encoder.embedding_table.numpy(),
                                weights["bert/embeddings/word_embeddings"])


def test_mismatch_lists_every_missing_unexpected_and_misshaped_variable(tmp_path):
  weights = original_albert.random_weights(GROUPED)
  prefix = original_albert.write_checkpoint(str(tmp_path / "grouped"), weights)
  other = dict(GROUPED, num_hidden_groups=1, intermediate_size=40)
  model = AlbertPretrainer(other)
  before = [w.numpy().copy() for w in model.weights]
  with pytest.raises(ValueError) as err:
    load_original_checkpoint(model, prefix)
  message = str(err.value)
  assert "unexpected in the checkpoint (32)" in message            # group_1: 2 blocks x 16 vars
  assert "group_1/inner_group_1/LayerNorm_1/beta" in message
  assert "shape mismatch (6)" in message  # 2 inner blocks x (intermediate kernel+bias, output kernel)
  assert "ffn_1/intermediate/dense/kernel: checkpoint [32, 48] vs model [32, 40]" in message
  assert "missing from the checkpoint" not in message
  # Nothing was assigned.
  for w, b in zip(model.weights, before):
    np.testing.assert_array_equal(w.numpy(), b)
  del weights["bert/pooler/dense/bias"]
  prefix = original_albert.write_checkpoint(str(tmp_path / "no_pooler"), weights)
  with pytest.raises(ValueError, match=r"missing from the checkpoint \(1\):\n    bert/pooler/dense/bias"):
    load_original_checkpoint(AlbertEncoder(GROUPED), prefix)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
  with pytest.raises(FileNotFoundError, match="no checkpoint at"):
    load_original_checkpoint(AlbertEncoder(TINY), str(tmp_path / "nothing"))


def test_save_original_round_trip_with_heads(tmp_path):
  model = AlbertPretrainer(GROUPED)
  # Make every weight distinct from a fresh model's.
  for w in model.weights:
    w.assign(w + tf.random.normal(w.shape, stddev=0.1))
  prefix = save_original_checkpoint(model, str(tmp_path / "out" / "model.ckpt-best"), global_step=7)
  reader = tf.train.load_checkpoint(prefix)
  names = reader.get_variable_to_shape_map()
  expected = original_albert.original_variables(GROUPED)
  assert {n: list(s) for n, s in names.items() if n != "global_step"} == expected
  assert reader.get_tensor("global_step") == 7
  fresh = AlbertPretrainer(GROUPED)
  load_original_checkpoint(fresh, prefix)
  inputs = random_inputs(GROUPED)
  a, b = model(inputs), fresh(inputs)
  for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
    np.testing.assert_array_equal(a[key], b[key])
  # The NumPy reference reads the written file the way the original graph would.
  stored = {n: reader.get_tensor(n) for n in expected}
  ref = original_albert.forward(GROUPED, stored, inputs["input_word_ids"], inputs["input_mask"],
                                inputs["input_type_ids"], inputs["masked_lm_positions"])
  _assert_matches_reference(a, ref)


def test_save_refuses_to_overwrite(tmp_path):
  model = AlbertEncoder(TINY)
  prefix = str(tmp_path / "model.ckpt")
  save_original_checkpoint(model, prefix)
  index_before = open(prefix + ".index", "rb").read()
  with pytest.raises(FileExistsError, match="overwrite=True"):
    save_original_checkpoint(AlbertEncoder(TINY), prefix)
  assert open(prefix + ".index", "rb").read() == index_before
  other = AlbertEncoder(TINY)
  save_original_checkpoint(other, prefix, overwrite=True)
  check = AlbertEncoder(TINY)
  load_original_checkpoint(check, prefix)
  np.testing.assert_array_equal(check.embedding_table.numpy(), other.embedding_table.numpy())
  assert sorted(os.listdir(tmp_path)) == ["model.ckpt.data-00000-of-00001", "model.ckpt.index"]


def test_matches_tf_models_official_albert_encoder(tmp_path):
  """tf-models-official converts the same TF1 checkpoint with its own converter."""
  from official.legacy.albert import configs as tfm_configs
  from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter
  cfg = TINY
  weights = original_albert.random_weights(cfg, heads=False, seed=11)
  os.makedirs(tmp_path / "v1")
  v1 = original_albert.write_checkpoint(str(tmp_path / "v1" / "model.ckpt"), weights)
  tfm_config = tfm_configs.AlbertConfig.from_dict(cfg)
  os.makedirs(tmp_path / "v2")
  converter.convert_checkpoint(tfm_config, str(tmp_path / "v2" / "ckpt"), v1, "encoder")
  theirs = converter._create_albert_model(tfm_config)
  tf.train.Checkpoint(encoder=theirs).read(
      tf.train.latest_checkpoint(str(tmp_path / "v2"))).assert_existing_objects_matched()
  ours = AlbertEncoder(cfg)
  load_original_checkpoint(ours, v1)
  inputs = encoder_inputs(random_inputs(cfg, batch=4, seq=16))
  seq, pooled = theirs([inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]])
  out = ours(inputs)
  assert_close(out["sequence_output"].numpy(), seq.numpy(), 1e-5)
  assert_close(out["pooled_output"].numpy(), pooled.numpy(), 1e-5)


def test_native_object_checkpoint_restores_encoder_alone(tmp_path):
  """checkpoint_items lets a fine-tuning model restore just the encoder of a pretrainer."""
  model = AlbertPretrainer(GROUPED)
  for w in model.weights:
    w.assign(w + tf.random.normal(w.shape, stddev=0.1))
  path = tf.train.Checkpoint(**model.checkpoint_items).write(str(tmp_path / "ckpt"))
  fresh = AlbertPretrainer(GROUPED)
  tf.train.Checkpoint(**fresh.checkpoint_items).read(path).assert_consumed()
  inputs = random_inputs(GROUPED)
  np.testing.assert_array_equal(model(inputs)["mlm_logits"], fresh(inputs)["mlm_logits"])
  encoder = AlbertEncoder(GROUPED)
  tf.train.Checkpoint(**encoder.checkpoint_items).read(path).assert_existing_objects_matched()
  np.testing.assert_array_equal(encoder(encoder_inputs(inputs))["pooled_output"],
                                model(inputs)["pooled_output"])


def test_init_from_group0_starts_the_missing_groups_from_group_0(tmp_path):
  """The original's --init_from_group0: a one-group checkpoint into a two-group model."""
  one_group = dict(GROUPED, num_hidden_groups=1)
  prefix = save_original_checkpoint(AlbertPretrainer(one_group), str(tmp_path / "model.ckpt-1"))
  with pytest.raises(ValueError, match="missing from the checkpoint"):
    load_original_checkpoint(AlbertPretrainer(GROUPED), prefix)
  model = AlbertPretrainer(GROUPED)
  report = load_original_checkpoint(model, prefix, init_from_group0=True)
  reader = tf.train.load_checkpoint(prefix)
  targets = variable_map(model)
  group1 = [n for n in targets if "/group_1/" in n]
  assert group1 and set(group1) <= set(report.loaded)
  for name in group1:
    np.testing.assert_array_equal(targets[name].numpy(),
                                  reader.get_tensor(name.replace("/group_1/", "/group_0/")))
