"""Prints the largest absolute differences between albert_tf and independent references.

References: the float64 NumPy implementation of the original equations in
tests/original_albert.py (fed an original-format TF1 checkpoint), and
tf-models-official's AlbertEncoder restored through its own TF1 converter.
It also compares the exported TF-Hub SavedModel (loaded with hub.KerasLayer)
with the in-process model, including ALBERT-base, and prints the export size.
The test suite asserts these stay under 1e-5; this shows the actual figures.

  python benchmarks/parity_report.py
"""

import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import numpy as np
import tensorflow as tf

import albert_tf
import original_albert
from common import GROUPED, SQUARE, TINY, encoder_inputs, random_inputs

KEYS = ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")


def _max_diff(a, b):
  return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def main():
  tmp = tempfile.mkdtemp()
  print("albert_tf (float32) vs NumPy reference of the original (float64), max |diff|:")
  for name, cfg in (("grouped: L=5, G=2, inner=2", GROUPED), ("full sharing", TINY),
                    ("E == H (no projection)", SQUARE)):
    weights = original_albert.random_weights(cfg)
    prefix = original_albert.write_checkpoint(os.path.join(tmp, str(len(os.listdir(tmp)))), weights)
    x = random_inputs(cfg)
    ref = original_albert.forward(cfg, weights, x["input_word_ids"], x["input_mask"],
                                  x["input_type_ids"], x["masked_lm_positions"])
    model = albert_tf.AlbertPretrainer(cfg)
    albert_tf.load_original_checkpoint(model, prefix)
    out = model(x)
    diffs = {k: _max_diff(out[k], ref[k]) for k in KEYS}
    diffs["encoder_outputs"] = max(_max_diff(a, b) for a, b in zip(out["encoder_outputs"],
                                                                     ref["encoder_outputs"]))
    print(f"  {name:28s} " + "  ".join(f"{k} {v:.1e}" for k, v in diffs.items()))

  from official.legacy.albert import configs as tfm_configs
  from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter
  weights = original_albert.random_weights(TINY, heads=False, seed=11)
  os.makedirs(os.path.join(tmp, "v1"))
  os.makedirs(os.path.join(tmp, "v2"))
  v1 = original_albert.write_checkpoint(os.path.join(tmp, "v1", "model.ckpt"), weights)
  tfm_config = tfm_configs.AlbertConfig.from_dict(TINY)
  converter.convert_checkpoint(tfm_config, os.path.join(tmp, "v2", "ckpt"), v1, "encoder")
  theirs = converter._create_albert_model(tfm_config)
  tf.train.Checkpoint(encoder=theirs).read(tf.train.latest_checkpoint(os.path.join(tmp, "v2")))
  ours = albert_tf.AlbertEncoder(TINY)
  albert_tf.load_original_checkpoint(ours, v1)
  x = encoder_inputs(random_inputs(TINY, batch=4, seq=16))
  seq, pooled = theirs([x["input_word_ids"], x["input_mask"], x["input_type_ids"]])
  out = ours(x)
  print("albert_tf vs tf-models-official AlbertEncoder (same TF1 checkpoint), max |diff|:\n"
        f"  sequence_output {_max_diff(out['sequence_output'], seq):.1e}  "
        f"pooled_output {_max_diff(out['pooled_output'], pooled):.1e}")

  model = albert_tf.AlbertPretrainer(GROUPED)
  x = {k: tf.constant(v) for k, v in random_inputs(GROUPED).items()}
  eager = model(x)
  xla = tf.function(lambda inputs: model(inputs), jit_compile=True)(x)
  print("XLA (jit_compile=True) vs eager, max |diff|:\n  " +
        "  ".join(f"{k} {_max_diff(eager[k], xla[k]):.1e}" for k in KEYS))


  import tensorflow_hub as hub
  from albert_tf.export import tf_hub as export
  print("TF-Hub SavedModel through hub.KerasLayer vs in-process model, max |diff|:")
  for i, (name, cfg, batch, seq) in enumerate((("grouped: L=5, G=2, inner=2", GROUPED, 3, 11),
                                ("full sharing", TINY, 3, 11),
                                ("ALBERT-base (random weights)", albert_tf.PRESETS["base_v2"], 2, 128))):
    model = albert_tf.AlbertPretrainer(cfg)
    path = os.path.join(tmp, "hub", str(i))
    export.export_encoder(model, path)
    x = random_inputs(dict(model.config.to_dict()), batch=batch, seq=seq)
    want = model(x)
    got = dict(hub.KerasLayer(path, trainable=True)(encoder_inputs(x)))
    loaded = hub.load(path)
    got["mlm_logits"] = loaded.mlm(x)["mlm_logits"]
    got["sop_logits"] = loaded.sop(encoder_inputs(x))["sop_logits"]
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    print(f"  {name:28s} " + "  ".join(f"{k} {_max_diff(got[k], want[k]):.1e}" for k in KEYS)
          + f"  ({size / 2**20:.1f} MiB)")


if __name__ == "__main__":
  main()
