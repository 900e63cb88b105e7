import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from albert_tf import AlbertPretrainer, export, load_original_checkpoint
import original_albert
from common import GROUPED, TINY, encoder_inputs, random_inputs


@pytest.mark.parametrize("cfg", [GROUPED, TINY], ids=["grouped", "shared"])
def test_exported_encoder_matches_in_process_model(tmp_path, cfg, spm_model):
  weights = original_albert.random_weights(cfg)
  prefix = original_albert.write_checkpoint(str(tmp_path / "model.ckpt-best"), weights)
  model = AlbertPretrainer(cfg)
  load_original_checkpoint(model, prefix)
  path = export.export_encoder(model, str(tmp_path / "hub"), spm_model_file=spm_model)
  x = random_inputs(cfg)
  layer = hub.KerasLayer(path, trainable=True)
  got, want = layer(encoder_inputs(x)), model(x)
  assert sorted(got) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
  for key in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), atol=1e-5)
  np.testing.assert_array_equal(got["default"].numpy(), got["pooled_output"].numpy())
  # Every encoder weight is trainable through the layer. (The MLM/SOP head weights
  # are still listed too, unused by the root; issue 4 is to narrow that.)
  shapes = sorted(tuple(w.shape) for w in layer.trainable_weights)
  for w in model.encoder.trainable_weights:
    shapes.remove(tuple(w.shape))
  assert len(shapes) == 7
  loaded = hub.load(path)
  np.testing.assert_allclose(loaded.mlm(x)["mlm_logits"].numpy(), want["mlm_logits"].numpy(), atol=1e-5)
  np.testing.assert_allclose(loaded.sop(encoder_inputs(x))["sop_logits"].numpy(),
                             want["sop_logits"].numpy(), atol=1e-5)
  assert bool(loaded.do_lower_case.numpy())
  assert open(loaded.sp_model_file.asset_path.numpy().decode(), "rb").read() == open(spm_model, "rb").read()


def test_exported_encoder_fine_tunes(tmp_path):
  model = AlbertPretrainer(TINY)
  path = export.export_encoder(model, str(tmp_path / "hub"))
  ins = {k: keras.Input(shape=(None,), dtype=tf.int32, name=k)
         for k in ("input_word_ids", "input_mask", "input_type_ids")}
  pooled = hub.KerasLayer(path, trainable=True)(ins)["pooled_output"]
  classifier = keras.Model(ins, keras.layers.Dense(2)(pooled))
  # A learnable task: the label is whether token 7 occurs in the sequence.
  rng = np.random.default_rng(0)
  ids = rng.integers(8, 97, (64, 10)).astype(np.int32)
  labels = rng.integers(0, 2, 64)
  ids[labels == 1, rng.integers(1, 10, (labels == 1).sum())] = 7
  x = dict(input_word_ids=ids, input_mask=np.ones_like(ids), input_type_ids=np.zeros_like(ids))
  classifier.compile(keras.optimizers.Adam(3e-3),
                     keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = classifier.fit(x, labels, epochs=15, batch_size=16, verbose=0).history["loss"]
  assert history[-1] < 0.5 * history[0], history
  classifier.save(str(tmp_path / "classifier"), save_format="tf")
  reloaded = keras.models.load_model(str(tmp_path / "classifier"),
                                     custom_objects={"KerasLayer": hub.KerasLayer})
  np.testing.assert_allclose(reloaded.predict(x, verbose=0), classifier.predict(x, verbose=0),
                             atol=1e-5)


def test_export_refuses_to_overwrite(tmp_path):
  target = tmp_path / "hub"
  target.mkdir()
  (target / "keep.txt").write_text("mine")
  with pytest.raises(FileExistsError, match="--overwrite"):
    export.export_encoder(AlbertPretrainer(TINY), str(target))
  assert (target / "keep.txt").read_text() == "mine"
  export.export_encoder(AlbertPretrainer(TINY), str(target), overwrite=True)
  assert not (target / "keep.txt").exists() and (target / "saved_model.pb").exists()
  assert sorted(os.listdir(tmp_path)) == ["hub"]
