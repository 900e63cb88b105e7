"""The encoder SavedModel in float32 and in bfloat16 (`hub_export/export.py --dtype`):
serving speed and the difference of their outputs.

Exports one ALBERT-base (random weights, the same for both) twice with the
library call behind the command, then times `serving_default` at
--batch_size x --seq_length in fresh processes, the two exports alternating,
and compares their pooled and sequence outputs on the same random batch.

  python benchmarks/benchmark_export_dtype.py --rounds=3
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags
import numpy as np

import benchmarking

flags.DEFINE_string("preset", "base", "An AlbertConfig preset, or small (H=128, 4 layers).")
flags.DEFINE_integer("batch_size", 8, "Examples per call.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
flags.DEFINE_integer("rounds", 3, "Processes per export (alternating).")
flags.DEFINE_integer("steps", 10, "Timed calls per process.")
flags.DEFINE_string("worker", None, "Internal: time the export at this path.")
FLAGS = flags.FLAGS


def batch(vocab_size):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  b, s = FLAGS.batch_size, FLAGS.seq_length
  return dict(input_word_ids=tf.constant(rng.integers(5, vocab_size, (b, s)), tf.int32),
              input_mask=tf.ones([b, s], tf.int32), input_type_ids=tf.zeros([b, s], tf.int32))


def time_export(path):
  """Median seconds of one `serving_default` call of the export at `path`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  serve = tf.saved_model.load(path).signatures["serving_default"]
  x = batch(benchmarking.preset_config(FLAGS.preset).vocab_size)
  for _ in range(2):
    serve(**x)["pooled_output"].numpy()
  times = []
  for _ in range(FLAGS.steps):
    start = time.perf_counter()
    serve(**x)["pooled_output"].numpy()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def main(_):
  if FLAGS.worker:
    print(json.dumps(dict(seconds=time_export(FLAGS.worker))))
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from albert_tf import AlbertPretrainer  # pylint: disable=g-import-not-at-top
  from albert_tf.commands import export_tf_hub as export  # pylint: disable=g-import-not-at-top
  config = benchmarking.preset_config(FLAGS.preset)
  tmp = tempfile.mkdtemp(prefix="albert_tf_export_dtype_")
  config_file = os.path.join(tmp, "albert_config.json")
  config.to_json_file(config_file)
  model = AlbertPretrainer(config)
  prefix = tf.train.Checkpoint(**model.checkpoint_items).write(os.path.join(tmp, "ckpt", "ckpt"))
  paths = {}
  for dtype in ("float32", "bfloat16"):
    paths[dtype] = os.path.join(tmp, dtype)
    export.export_from_sources(paths[dtype], albert_config_file=config_file,
                               init_checkpoint=prefix, dtype=dtype)
  x = batch(config.vocab_size)
  outputs = {d: tf.saved_model.load(p).signatures["serving_default"](**x)
             for d, p in paths.items()}
  seconds = {d: [] for d in paths}
  for _ in range(FLAGS.rounds):
    for dtype, path in paths.items():
      done = subprocess.run([sys.executable, os.path.abspath(__file__), f"--worker={path}",
                             f"--preset={FLAGS.preset}", f"--batch_size={FLAGS.batch_size}",
                             f"--seq_length={FLAGS.seq_length}", f"--steps={FLAGS.steps}"],
                            capture_output=True, text=True, check=True)
      seconds[dtype].append(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
  speed = {d: FLAGS.batch_size / statistics.median(s) for d, s in seconds.items()}
  print(f"{FLAGS.preset} b{FLAGS.batch_size} s{FLAGS.seq_length}, serving_default, median of "
        f"{FLAGS.rounds} processes: float32 {speed['float32']:.2f} ex/s, bfloat16 "
        f"{speed['bfloat16']:.2f} ex/s, ratio {speed['bfloat16'] / speed['float32']:.2f}")
  for key in ("pooled_output", "sequence_output"):
    want, got = outputs["float32"][key].numpy(), outputs["bfloat16"][key].numpy()
    print(f"  {key}: max |bfloat16 - float32| {np.abs(got - want).max():.4f} "
          f"(mean {np.abs(got - want).mean():.4f}; float32 values up to {np.abs(want).max():.2f})")


if __name__ == "__main__":
  app.run(main)
