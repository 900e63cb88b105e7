"""Throughput of albert_tf's AlbertEncoder against tf-models-official's, in one process.

Both encoders get the same config, inputs, classification head, loss and
optimizer; timed blocks of the two alternate so machine noise hits both alike.
Prints examples/s per column and the ratio albert_tf / tf-models-official.

  python benchmarks/benchmark_encoder.py --preset=base --batch_size=8 --seq_length=128
"""

import itertools
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags
import numpy as np
import tensorflow as tf
import tf_keras as keras

import albert_tf
import benchmarking  # pylint: disable=g-bad-import-order

flags.DEFINE_string("preset", "base", "AlbertConfig preset.")
flags.DEFINE_integer("batch_size", 8, "Examples per step.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
flags.DEFINE_integer("steps", 4, "Timed steps per block.")
flags.DEFINE_integer("rounds", 2, "Alternating timed blocks per implementation.")
flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "float32 and/or bfloat16 (mixed_bfloat16).")
flags.DEFINE_list("xla", ["false", "true"], "jit_compile settings to measure.")
flags.DEFINE_list("modes", ["train", "infer"], "train (forward+backward+Adam) and/or infer.")
flags.DEFINE_list("impls", ["albert_tf", "tf_models"], "Implementations to compare.")
flags.DEFINE_string("json_output", None, "Also write the results here as JSON.")
FLAGS = flags.FLAGS


def build_albert_tf(config):
  encoder = albert_tf.AlbertEncoder(config)
  return encoder, lambda x, training: encoder(x, training=training)["pooled_output"]


def build_tf_models(config):
  from official.nlp.modeling import networks
  c = config
  encoder = networks.AlbertEncoder(
      vocab_size=c.vocab_size, embedding_width=c.embedding_size, hidden_size=c.hidden_size,
      num_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
      max_sequence_length=c.max_position_embeddings, type_vocab_size=c.type_vocab_size,
      intermediate_size=c.intermediate_size, activation=albert_tf.modeling.activations.gelu,
      dropout_rate=c.hidden_dropout_prob, attention_dropout_rate=c.attention_probs_dropout_prob,
      dict_outputs=True)
  return encoder, lambda x, training: encoder(
      [x["input_word_ids"], x["input_mask"], x["input_type_ids"]], training=training)["pooled_output"]


BUILDERS = {"albert_tf": build_albert_tf, "tf_models": build_tf_models}


def make_step(impl, config, mode, jit):
  """A compiled step function of one implementation."""
  encoder, pooled = BUILDERS[impl](config)
  return benchmarking.plain_step(encoder, mode, jit_compile=jit, pooled=pooled)


def time_block(step, inputs, labels, steps):
  start = time.perf_counter()
  for _ in range(steps):
    out = step(inputs, labels)
  out.numpy()
  return FLAGS.batch_size * steps / (time.perf_counter() - start)


def main(_):
  config = albert_tf.AlbertConfig.from_preset(FLAGS.preset)
  rng = np.random.default_rng(0)
  b, s = FLAGS.batch_size, FLAGS.seq_length
  inputs = dict(input_word_ids=tf.constant(rng.integers(5, config.vocab_size, (b, s)), tf.int32),
                input_mask=tf.ones((b, s), tf.int32),
                input_type_ids=tf.constant(np.repeat([[0] * (s // 2) + [1] * (s - s // 2)], b, 0),
                                           tf.int32))
  labels = tf.constant(rng.integers(0, 2, b), tf.int32)
  print(f"ALBERT-{FLAGS.preset}, batch {b}, seq {s}, TF {tf.__version__}, "
        f"{os.cpu_count()} CPUs; examples/s (median of {FLAGS.rounds} blocks of {FLAGS.steps} steps)")
  results = []
  for dtype, xla, mode in itertools.product(FLAGS.dtypes, FLAGS.xla, FLAGS.modes):
    jit = xla.lower() == "true"
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if dtype == "bfloat16" else "float32")
    keras.backend.clear_session()
    steps = {impl: make_step(impl, config, mode, jit) for impl in FLAGS.impls}
    for impl, step in steps.items():  # compile and warm up
      step(inputs, labels)
      time_block(step, inputs, labels, 1)
    speeds = {impl: [] for impl in steps}
    for _ in range(FLAGS.rounds):
      for impl, step in steps.items():
        speeds[impl].append(time_block(step, inputs, labels, FLAGS.steps))
    row = dict(dtype=dtype, xla=jit, mode=mode,
               **{impl: statistics.median(v) for impl, v in speeds.items()})
    if len(FLAGS.impls) == 2:
      row["ratio"] = row[FLAGS.impls[0]] / row[FLAGS.impls[1]]
    results.append(row)
    print(f"  {mode:5s} {dtype:8s} xla={str(jit):5s} " + "  ".join(
        f"{k}={v:.2f}" for k, v in row.items() if k not in ("dtype", "xla", "mode")), flush=True)
  keras.mixed_precision.set_global_policy("float32")

  print("\n| mode | dtype | XLA | " + " | ".join(FLAGS.impls) +
        (" | ratio |" if len(FLAGS.impls) == 2 else ""))
  print("|---" * (3 + len(FLAGS.impls) + (len(FLAGS.impls) == 2)) + "|")
  for r in results:
    cells = [r["mode"], r["dtype"], "yes" if r["xla"] else "no"] + [f"{r[i]:.2f}" for i in FLAGS.impls]
    if "ratio" in r:
      cells.append(f"{r['ratio']:.2f}")
    print("| " + " | ".join(cells) + " |")
  if FLAGS.json_output:
    with open(FLAGS.json_output, "w") as f:
      json.dump(dict(preset=FLAGS.preset, batch_size=b, seq_length=s, results=results), f, indent=2)


if __name__ == "__main__":
  app.run(main)
