"""Where a train step's time goes: op time by op type, from `tf.profiler`.

Runs the plain user step of `benchmark_peers.py` (a tf.function over
AlbertEncoder + Dense + Keras Adam) under the profiler and sums, per op type,
the time of the ops TensorFlow's executor ran (the threads of the host plane).
Shares are of the summed op time, which exceeds the wall time where ops run
side by side (a bfloat16 ALBERT-base train step: 2.3 s of op time in 1.5 s);
the wall time per step is printed too. XLA-compiled kernels (`albert_tf.modeling.fused`)
appear as "XLA" and their HLO fusion names. First come the step's parts: the matmuls,
the XLA kernels, the optimizer's update (Keras Adam's ops) and the other ops.

With `--inter_op_threads=1` TensorFlow runs one op at a time: the op times are then
each op's own, none slowed by another beside it on the two cores, and add up to about
the wall time.

  python benchmarks/profile_step.py --dtype=bfloat16 --top=25
  python benchmarks/profile_step.py --dtype=bfloat16 --mode=infer --inter_op_threads=1

Last, the op time by class (large matmuls, attention matmuls, casts, normalization,
activations, softmax, gradient sums, optimizer, data, other), beside what the matmul classes
would take at the same-run matmul peak (`benchmarking.matmul_peak`: their nominal FLOPs /
peak; the other classes would take nothing there). The plain step's inputs are constants,
so its data class is empty: a run's input pipeline runs beside its steps (docs/performance.md).
  python benchmarks/profile_step.py --dtype=bfloat16 --inter_op_threads=1
"""

import collections
import glob
import os
import re
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags
import numpy as np
import tensorflow as tf
import tf_keras as keras

import albert_tf
import benchmarking

flags.DEFINE_string("preset", "base", "An AlbertConfig preset, or small (H=128, 4 layers).")
flags.DEFINE_integer("batch_size", 8, "Examples per step.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
flags.DEFINE_enum("dtype", "bfloat16", ["float32", "bfloat16"], "Compute dtype.")
flags.DEFINE_enum("mode", "train", ["train", "infer"], "What the step does.")
flags.DEFINE_integer("steps", 3, "Profiled steps.")
flags.DEFINE_integer("top", 25, "Op types to print.")
flags.DEFINE_bool("recompute", False,
                  "AlbertEncoder(recompute=True): the blocks run again in the backward pass.")
flags.DEFINE_integer("inter_op_threads", 0,
                     "TensorFlow's inter-op threads (0: its default). 1 runs one op at a time: "
                     "each op's time is then its own, with no op beside it sharing the cores.")
flags.DEFINE_bool("peak", True, "Also measure the matmul peak at the model's shapes (in "
                  "this process, after the profile) and give each class's time at it.")
FLAGS = flags.FLAGS


XLA_ENCLOSING = ("call", "Execute", "ParallelFor", "ExecutorDoneCallback")
MATMULS = {"_MklMatMul", "_MklBatchMatMulV2", "_MklFusedBatchMatMulV2", "_MklFusedMatMul",
           "_MklNativeFusedMatMul", "MatMul", "_FusedMatMul", "BatchMatMulV2"}
# The op classes of issue 86's profile, in the order printed. An XLA kernel
# (`albert_tf.modeling.fused`) is classed by its function's name.
CLASSES = ("large matmuls", "attention matmuls", "casts", "normalization", "activations",
           "softmax", "gradient sums", "optimizer", "data", "other")
XLA_CLASSES = (("norm", "normalization"), ("gelu", "activations"), ("softmax", "softmax"),
               ("accumulate", "gradient sums"), ("group_sums", "gradient sums"),
               ("projection", "large matmuls"))


def part_of(key):
  """The part of the step an op (op name, op type) belongs to; the optimizer's ops are
  named Adam/... ."""
  op_name, op_type = key
  if op_name.startswith("Adam/"):
    return "optimizer update"
  if op_type in MATMULS:
    return "matmul kernels"
  return "XLA kernels" if op_type.startswith("XLA ") else "other ops"


def batch_matmul_nodes(function) -> dict:
  """{node name: True when it is attention's} of the nodes of a traced tf.function (and
  the functions it calls: custom gradients' backward) whose output is a batch of matrices:
  attention's [B, N, ., .] (more than one matrix), or the Q, K, V projection's 4-D form
  [1, 1, T, 3H] (`fused.projection`). What a profiled batch matmul (or the fused node
  named after its last op) is, as the profile does not record shapes."""
  found, seen = {}, set()

  def walk(graph):
    for op in graph.get_operations():
      for output in op.outputs[:1]:
        shape = output.shape
        if shape.rank == 4 and None not in shape.as_list():
          found.setdefault(op.name, int(np.prod(shape.as_list()[:-2])) > 1)
    for inner in getattr(graph, "_functions", {}).values():
      inner = getattr(inner, "graph", None)
      if inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        walk(inner)
  walk(function.graph)
  return found


def class_of(key, attention_nodes):
  """Issue 86's op class of an op (op name, op type) of `op_times`."""
  op_name, op_type = key
  lower = op_name.lower()
  if op_name.startswith("Adam/") or "/Adam/" in op_name:
    return "optimizer"
  if op_type.startswith("XLA "):
    return next((c for word, c in XLA_CLASSES if word in lower), "other")
  if op_type in MATMULS:
    return "attention matmuls" if attention_nodes.get(op_name, False) else "large matmuls"
  if op_type in ("Cast", "Bitcast"):
    return "casts"
  if "softmax" in op_type.lower():
    return "softmax"
  if "layernorm" in lower.replace("_", "") or op_type in ("Rsqrt", "SquaredDifference"):
    return "normalization"
  if op_type in ("Tanh", "Erf", "Pow", "Gelu") or "gelu" in lower:
    return "activations"
  if op_type in ("AddN", "BiasAddGrad", "UnsortedSegmentSum"):
    return "gradient sums"
  if op_type.startswith(("Iterator", "Prefetch")):
    return "data"
  return "other"


def op_times(logdir):
  """{(op name, op type): summed microseconds} of the executor's ops in the profile under
  `logdir`; an XLA kernel's fusions as (its function's name, "XLA <fusion>")."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0], "rb") as f:
    space.ParseFromString(f.read())
  totals = collections.Counter()
  for plane in space.planes:
    if not plane.name.startswith("/host:CPU"):
      continue
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    for line in plane.lines:
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        # Executor op events are named "op_name:OpType"; the executor's own and the
        # function's events ("ExecutorState::Process", "__inference_...") enclose them.
        # XLA kernels' events on the executor's threads are their HLO fusions, named
        # without a ":", inside enclosing "call" / "Execute" events (left out here), and
        # carry their module: the tf.function's name (a_inference__bias_gelu_forward_7__.69).
        if line.name.startswith("tf_") and ":" not in name and re.fullmatch(
            r"[\w.-]+", name) and name.split(".")[0] not in XLA_ENCLOSING:
          module = [plane.stat_metadata[s.ref_value].name for s in event.stats
                    if stat_names.get(s.metadata_id) == "hlo_module"]
          function = re.sub(r"^a_inference_|_\d+__.*$", "", module[0]) if module else ""
          totals[function, "XLA " + re.sub(r"(\.\d+)*(\.clone)?$", "", name)] += (
              event.duration_ps / 1e6)
          continue
        op_type = name.rsplit(":", 1)[-1].strip()
        if ":" not in name or "::" in name or op_type.startswith("__") or " " in op_type:
          continue
        totals[name.rsplit(":", 1)[0].strip(), op_type] += event.duration_ps / 1e6
  return totals


def grouped(totals, group):
  """[(group, summed microseconds)], largest first, of `op_times`' totals by `group(key)`."""
  sums = collections.Counter()
  for key, us in totals.items():
    sums[group(key)] += us
  return sums.most_common()


def main(_):
  if FLAGS.inter_op_threads:
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)
  keras.mixed_precision.set_global_policy(
      "mixed_bfloat16" if FLAGS.dtype == "bfloat16" else "float32")
  config = benchmarking.preset_config(FLAGS.preset)
  step = benchmarking.plain_step(albert_tf.AlbertEncoder(config, recompute=FLAGS.recompute), FLAGS.mode)
  rng = np.random.default_rng(0)
  b, s = FLAGS.batch_size, FLAGS.seq_length
  x = dict(input_word_ids=tf.constant(rng.integers(5, config.vocab_size, (b, s)), tf.int32),
           input_mask=tf.ones([b, s], tf.int32), input_type_ids=tf.zeros([b, s], tf.int32))
  y = tf.constant(rng.integers(0, 2, b), tf.int32)
  for _ in range(2):
    np.asarray(step(x, y))   # trace and warm up
  attention_nodes = batch_matmul_nodes(step.get_concrete_function(x, y))
  logdir = tempfile.mkdtemp(prefix="albert_tf_profile_")
  times = []
  tf.profiler.experimental.start(logdir)
  for _ in range(FLAGS.steps):
    start = time.perf_counter()
    np.asarray(step(x, y))
    times.append(time.perf_counter() - start)
  tf.profiler.experimental.stop()
  totals = op_times(logdir)
  whole = sum(totals.values())
  print(f"{FLAGS.preset} {FLAGS.mode} {FLAGS.dtype} b{b} s{s}: {statistics.median(times):.3f} s "
        f"per step (profiled); op time {whole / 1e6 / FLAGS.steps:.3f} s per step")
  for part, us in grouped(totals, part_of):
    print(f"  {part:36s} {us / 1e6 / FLAGS.steps:7.3f} s  {100 * us / whole:5.1f}%")
  print("by op type:")
  for op, us in grouped(totals, lambda key: key[1])[:FLAGS.top]:
    print(f"  {op:36s} {us / 1e6 / FLAGS.steps:7.3f} s  {100 * us / whole:5.1f}%")
  spec = dict(preset=FLAGS.preset, batch=b, seq=s, mode=FLAGS.mode, dtype=FLAGS.dtype)
  peak = benchmarking.matmul_peak(spec) if FLAGS.peak else None
  gflop = {"large matmuls": benchmarking.step_gflop(spec) - benchmarking.attention_gflop(spec),
           "attention matmuls": benchmarking.attention_gflop(spec)}
  by_class = dict(grouped(totals, lambda key: class_of(key, attention_nodes)))
  step_time = statistics.median(times)
  print("by op class" + (f", and what each would take at the same-run matmul peak ({peak:.0f} "
                         f"GFLOP/s at the model's shapes)" if peak else "") + ":")
  for name in CLASSES:
    seconds = by_class.get(name, 0.0) / 1e6 / FLAGS.steps
    at_peak = (f"{gflop[name] / peak:7.3f} s ({gflop[name]:.0f} GFLOP)"
               if peak and name in gflop else "      0")
    print(f"  {name:20s} {seconds:7.3f} s  {100 * seconds * 1e6 * FLAGS.steps / whole:5.1f}%"
          f"   at the peak {at_peak}")
  if peak:
    total = sum(gflop.values())
    print(f"  the step: {step_time:.3f} s, at the peak {total / peak:.3f} s: "
          f"{total / step_time / peak:.0%} of the peak")


if __name__ == "__main__":
  app.run(main)
