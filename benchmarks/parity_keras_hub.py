"""albert_tf against KerasHub (Keras 3), both ways, on a real model and run.

1. --release (a released-layout directory) written as a KerasHub preset by
   convert_checkpoint.py --output_format=keras_hub, loaded by
   keras_hub.models.Backbone.from_preset: the largest output differences.
2. --classifier_run (a run_classifier.py --output_dir, e.g. the demo's mrpc/) as an
   AlbertTextClassifier preset: the largest logit difference from the run's model.
3. An AlbertBackbone with random weights (grouped: 4 layers, 2 groups, 2 inner
   repetitions) saved by keras_hub, read by albert_tf.

  python benchmarks/parity_keras_hub.py --release=DIR --classifier_run=DIR --work_dir=/tmp/kh
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from absl import app, flags
import numpy as np

from albert_tf import AlbertEncoder, formats, load_checkpoint
from albert_tf import sources
from albert_tf.commands import convert

flags.DEFINE_string("release", None, "A released-layout directory.")
flags.DEFINE_string("classifier_run", None, "A run_classifier.py --output_dir.")
flags.DEFINE_string("work_dir", None, "Where the presets go (must not exist).")
FLAGS = flags.FLAGS


def _inputs(vocab_size, batch=3, seq=48, seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, (batch, seq)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1:, seq // 2:] = 0
  types = np.zeros_like(ids)
  types[:, seq // 3:] = 1
  return (dict(input_word_ids=ids * mask, input_mask=mask, input_type_ids=types * mask),
          dict(token_ids=ids * mask, padding_mask=mask, segment_ids=types * mask))


def main(_):
  import keras_hub  # pylint: disable=g-import-not-at-top
  os.makedirs(FLAGS.work_dir)
  backbone_dir = os.path.join(FLAGS.work_dir, "backbone")
  source = sources.read(FLAGS.release)
  convert.write_keras_hub(source, backbone_dir)
  ours, theirs = _inputs(source.config.vocab_size)
  encoder = getattr(source.model, "encoder", source.model)
  a, b = encoder(ours), keras_hub.models.Backbone.from_preset(backbone_dir)(theirs)
  keep = ours["input_mask"].astype(bool)
  print(f"albert_tf -> KerasHub backbone: pooled {np.abs(a['pooled_output'] - b['pooled_output']).max():.2e}, "
        f"sequence {np.abs(a['sequence_output'] - b['sequence_output'])[keep].max():.2e}")
  if FLAGS.classifier_run:
    task_dir = os.path.join(FLAGS.work_dir, "classifier")
    run = sources.read(FLAGS.classifier_run)
    convert.write_keras_hub(run, task_dir)
    task = keras_hub.models.AlbertTextClassifier.from_preset(task_dir, preprocessor=None)
    ours, theirs = _inputs(run.config.vocab_size, seq=run.max_seq_length or 64)
    diff = np.abs(run.model(ours, training=False).numpy() - np.asarray(task(theirs)))
    print(f"albert_tf run -> AlbertTextClassifier: logits {diff.max():.2e}")
  backbone = keras_hub.models.AlbertBackbone(
      vocabulary_size=300, num_layers=4, num_heads=4, embedding_dim=16, hidden_dim=64,
      intermediate_dim=128, num_groups=2, num_inner_repetitions=2, max_sequence_length=64)
  rng = np.random.default_rng(1)
  for weight in backbone.weights:
    weight.assign(rng.normal(0, 0.2, weight.shape).astype(np.float32))
  written = os.path.join(FLAGS.work_dir, "written_by_keras_hub")
  backbone.save_to_preset(written)
  found = formats.read_model_directory(written)
  model = AlbertEncoder(found.config)
  load_checkpoint(model, written)
  ours, theirs = _inputs(300)
  a, b = model(ours), backbone(theirs)
  keep = ours["input_mask"].astype(bool)
  print(f"KerasHub -> albert_tf (grouped): pooled {np.abs(a['pooled_output'] - b['pooled_output']).max():.2e}, "
        f"sequence {np.abs(a['sequence_output'] - b['sequence_output'])[keep].max():.2e}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["release", "work_dir"])
  app.run(main)
