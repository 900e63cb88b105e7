"""Gradient accumulation: peak memory and time per example of albert_tf's Trainer updates.

Each setting runs in its own process: a classifier over a released size (random
weights and ids, sequence --seq_length, dropout off) trained by the Trainer for
two updates of --train_batch_size examples as --gradient_accumulation_steps
micro-batches; reported are the second update's time per example and the
process's peak resident set (VmHWM, all of it: weights, AdamW slots, the
accumulation buffer, a micro-batch's activations, TensorFlow itself) and the peak
of tensor bytes in TF's allocator (what a GPU would hold in device memory). The
baseline runs the same micro-batch without accumulation (one update of it), so
the ratio is what accumulating costs per example.

  python benchmarks/benchmark_accumulation.py --presets=xxlarge --micro_batch_size=1 \\
      --gradient_accumulation_steps=4 --recompute
"""

import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from absl import app, flags

flags.DEFINE_list("presets", ["base", "large", "xlarge", "xxlarge"], "Released sizes.")
flags.DEFINE_integer("seq_length", 512, "Tokens per example.")
flags.DEFINE_integer("micro_batch_size", 1, "Examples per micro-batch.")
flags.DEFINE_integer("gradient_accumulation_steps", 4, "Micro-batches per update (the peak "
                     "does not depend on it: the buffer is one copy of the weights).")
flags.DEFINE_bool("recompute", True, "--recompute.")
flags.DEFINE_string("dtype", "float32", "float32 or bfloat16.")
flags.DEFINE_integer("updates", 2, "Updates per process; the last is timed (with 1, the "
                     "time includes tracing: a memory-only run).")
flags.DEFINE_bool("baseline", True, "Also run the micro-batch without accumulation.")
flags.DEFINE_string("worker", None, "Internal: run one setting (JSON) and print its result.")
FLAGS = flags.FLAGS


def _peak_bytes() -> int:
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith("VmHWM:"):
        return int(line.split()[1]) * 1024
  return 0


def run_worker(spec):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import albert_tf  # pylint: disable=g-import-not-at-top
  from albert_tf.training import trainer as trainer_lib  # pylint: disable=g-import-not-at-top

  config = albert_tf.AlbertConfig.from_preset(spec["preset"])
  batch, steps, seq = spec["train_batch_size"], spec["accumulation"], spec["seq"]

  class Task:
    def build_model(self):
      return albert_tf.AlbertClassifier(albert_tf.AlbertEncoder(config, recompute=spec["recompute"]),
                                        2, dropout_rate=0.0)

    def step_metrics(self, model, batch, training, global_batch, totals=None):
      del totals
      logits = model(batch, training=training)
      per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], logits)
      return trainer_lib.mean_per_example(dict(loss=per_example), global_batch)

    def summarize(self, sums, count, global_batch):
      return trainer_lib.summarize_per_example(sums, count, global_batch)

  rng = np.random.default_rng(0)
  micro = batch // steps
  examples = dict(input_word_ids=rng.integers(5, config.vocab_size, [64, seq]).astype(np.int32),
                  input_mask=np.ones([64, seq], np.int32), input_type_ids=np.zeros([64, seq],
                                                                                   np.int32),
                  label_ids=rng.integers(0, 2, [64]).astype(np.int32))
  data = tf.data.Dataset.from_tensor_slices(examples).repeat().batch(micro, drop_remainder=True)
  opts = trainer_lib.TrainerOptions(
      output_dir=tempfile.mkdtemp(), train_steps=10, learning_rate=1e-5, train_batch_size=batch,
      dtype=spec["dtype"], gradient_accumulation_steps=steps, progress=False)
  trainer = trainer_lib.Trainer(opts, tf.distribute.OneDeviceStrategy("/cpu:0"), Task(), data)
  times = []
  for _ in range(spec.get("updates", 2)):   # the first update traces
    start = time.perf_counter()
    sums = trainer._update()  # pylint: disable=protected-access
    float(sums["loss"])
    times.append(time.perf_counter() - start)
  return dict(seconds_per_example=times[-1] / batch, peak_bytes=_peak_bytes(),
              tensor_peak_bytes=tf.config.experimental.get_memory_info("CPU:0")["peak"],
              buffer_bytes=4 * sum(int(np.prod(v.shape)) for v in trainer.model.trainable_variables)
              if steps > 1 else 0)


def measure(spec):
  done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker=" + json.dumps(spec)],
                        capture_output=True, text=True, check=False)
  if done.returncode:
    return dict(error=(done.stderr.strip().splitlines() or ["killed"])[-1][:300])
  return json.loads(done.stdout.strip().splitlines()[-1])


def main(_):
  if FLAGS.worker:
    print(json.dumps(run_worker(json.loads(FLAGS.worker))))
    return
  cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
  model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("Model name")),
               "?")
  print(f"{model}, {os.cpu_count()} CPUs; seq {FLAGS.seq_length}, micro-batch "
        f"{FLAGS.micro_batch_size}, {FLAGS.dtype}, recompute {FLAGS.recompute}", flush=True)
  n = FLAGS.gradient_accumulation_steps
  for preset in FLAGS.presets:
    common = dict(preset=preset, seq=FLAGS.seq_length, recompute=FLAGS.recompute,
                  dtype=FLAGS.dtype, updates=FLAGS.updates)
    accumulated = measure(dict(common, train_batch_size=FLAGS.micro_batch_size * n,
                               accumulation=n))
    line = f"{preset}: "
    if "error" in accumulated:
      print(line + f"accumulation failed: {accumulated['error']}", flush=True)
      continue
    line += (f"{n} x {FLAGS.micro_batch_size} accumulated: peak {accumulated['peak_bytes'] / 2**30:.2f} "
             f"GiB (tensors {accumulated.get('tensor_peak_bytes', 0) / 2**30:.2f} GiB, of which "
             f"the buffer {accumulated['buffer_bytes'] / 2**30:.2f} GiB), "
             f"{accumulated['seconds_per_example']:.2f} s/example")
    if FLAGS.baseline:
      plain = measure(dict(common, train_batch_size=FLAGS.micro_batch_size, accumulation=1))
      if "error" in plain:
        line += f"; baseline failed: {plain['error']}"
      else:
        line += (f"; the micro-batch alone: peak {plain['peak_bytes'] / 2**30:.2f} GiB, "
                 f"{plain['seconds_per_example']:.2f} s/example; time ratio "
                 f"{accumulated['seconds_per_example'] / plain['seconds_per_example']:.3f}")
    print(line, flush=True)


if __name__ == "__main__":
  app.run(main)
