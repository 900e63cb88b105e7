"""Where a batch-1 call's milliseconds go: the encoder SavedModel under TensorFlow beside
the same model's ONNX file under onnxruntime, per op type.

  python benchmarks/profile_serving.py --work_dir=W --seq_length=32

W is a benchmarks/benchmark_serving.py --work_dir (its `encoder` SavedModel and
`onnx/encoder.onnx`). Each side runs in its own process: TensorFlow's per-op times from
a full-trace run of the SavedModel's graph (tf.compat.v1 session, step stats), then
onnxruntime's from its own profiler; both after warm-ups, summed per op type and averaged
per call, with the plain (untraced) median call time beside them. With --kernels, the
oneDNN primitives TensorFlow's matmuls run (ONEDNN_VERBOSE) and their mean times.
"""

import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app, flags

flags.DEFINE_string("work_dir", None, "A benchmark_serving.py --work_dir.", required=True)
flags.DEFINE_integer("seq_length", 32, "Tokens in the one example.")
flags.DEFINE_integer("calls", 20, "Profiled calls per side.")
flags.DEFINE_integer("top", 12, "Op types listed per side.")
flags.DEFINE_bool("kernels", True, "Also list TensorFlow's oneDNN matmul kernels.")
flags.DEFINE_string("worker", None, "Internal: tf, ort or kernels.")
FLAGS = flags.FLAGS


def _inputs(seq):
  import numpy as np  # pylint: disable=g-import-not-at-top
  ids = np.random.default_rng(seq).integers(5, 2000, (1, seq)).astype(np.int32)
  return dict(input_word_ids=ids, input_mask=np.ones_like(ids),
              input_type_ids=np.zeros_like(ids))


def _median_ms(call, n=40):
  for _ in range(5):
    call()
  times = []
  for _ in range(n):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
  return 1000 * statistics.median(times)


def profile_tf(path, seq, calls):
  """(plain median ms, {op type: (ms per call, ops per call)}) of the SavedModel."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.compat.v1.disable_eager_execution()
  session = tf.compat.v1.Session()
  meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
  signature = meta.signature_def["serving_default"]
  feed = {signature.inputs[k].name: v for k, v in _inputs(seq).items()}
  fetch = signature.outputs["pooled_output"].name
  plain = _median_ms(lambda: session.run(fetch, feed))
  options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
  spent, count = collections.Counter(), collections.Counter()
  for _ in range(calls):
    metadata = tf.compat.v1.RunMetadata()
    session.run(fetch, feed, options=options, run_metadata=metadata)
    for device in metadata.step_stats.dev_stats:
      for node in device.node_stats:
        label = node.timeline_label
        op = label.split("=")[-1].split("(")[0].strip() if "=" in label else node.node_name
        spent[op] += node.all_end_rel_micros / 1000
        count[op] += 1
  return plain, {k: (v / calls, count[k] / calls) for k, v in spent.items()}


def profile_ort(path, seq, calls):
  """The same for onnxruntime (its profiler's per-node kernel times)."""
  import onnxruntime  # pylint: disable=g-import-not-at-top
  options = onnxruntime.SessionOptions()
  options.intra_op_num_threads = os.cpu_count()
  feeds = _inputs(seq)
  session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  plain = _median_ms(lambda: session.run(None, feeds))
  options.enable_profiling = True
  options.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="ort_profile_"), "ort")
  session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  for _ in range(5):
    session.run(None, feeds)
  for _ in range(calls):
    session.run(None, feeds)
  with open(session.end_profiling()) as f:
    events = json.load(f)
  runs = sum(1 for e in events if e.get("name") == "model_run")
  spent, count = collections.Counter(), collections.Counter()
  for e in events:
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
      spent[e["args"]["op_name"]] += e["dur"] / 1000
      count[e["args"]["op_name"]] += 1
  return plain, {k: (v / runs, count[k] / runs) for k, v in spent.items()}


def tf_kernels(path, seq):
  """{oneDNN primitive and shape: (mean ms, calls per call)} of the SavedModel's matmuls,
  from ONEDNN_VERBOSE (run in a child with the variable set)."""
  env = dict(os.environ, ONEDNN_VERBOSE="1")
  code = ("import sys, numpy as np, tensorflow as tf\n"
          "import profile_serving as p\n"
          f"f = tf.saved_model.load({path!r}).signatures['serving_default']\n"
          f"x = {{k: tf.constant(v) for k, v in p._inputs({seq}).items()}}\n"
          "for _ in range(15): f(**x)\n")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True, cwd=os.path.dirname(os.path.abspath(__file__))  # import p
                       ).stdout.splitlines()
  execs = [l.split(",") for l in out if l.startswith("onednn_verbose") and ",exec," in l]
  execs = execs[len(execs) // 3:]   # past the warm-ups' first-time reorders
  times = collections.defaultdict(list)
  for e in execs:
    if e[5] in ("inner_product", "matmul", "gemm_api"):
      times[f"{e[5]} {e[6]} {e[-2]}"].append(float(e[-1]))
  calls = 10   # of the 15
  return {k: (statistics.mean(v), len(v) / calls) for k, v in times.items()}


def _table(title, plain, ops, top):
  total = sum(ms for ms, _ in ops.values())
  print(f"\n{title}: {plain:.1f} ms per call untraced; traced op time {total:.1f} ms per "
        f"call in {sum(n for _, n in ops.values()):.0f} ops")
  print("| op type | ms per call | ops per call | share |")
  print("|---|---|---|---|")
  for op, (ms, n) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:top]:
    print(f"| {op} | {ms:.2f} | {n:.0f} | {ms / total:.0%} |")


def main(_):
  encoder = os.path.join(FLAGS.work_dir, "encoder")
  onnx_file = os.path.join(FLAGS.work_dir, "onnx", "encoder.onnx")
  if FLAGS.worker:
    if FLAGS.worker == "tf":
      result = profile_tf(encoder, FLAGS.seq_length, FLAGS.calls)
    elif FLAGS.worker == "ort":
      result = profile_ort(onnx_file, FLAGS.seq_length, FLAGS.calls)
    else:
      result = tf_kernels(encoder, FLAGS.seq_length)
    print(json.dumps(result))
    return
  for path in (encoder, onnx_file):
    if not os.path.exists(path):
      raise app.UsageError(f"--work_dir: no {path}; run benchmarks/benchmark_serving.py "
                           f"--work_dir={FLAGS.work_dir} --paths=saved_model,onnx first")
  def worker(kind):
    done = subprocess.run([sys.executable, os.path.abspath(__file__), f"--worker={kind}",
                           f"--work_dir={FLAGS.work_dir}", f"--seq_length={FLAGS.seq_length}",
                           f"--calls={FLAGS.calls}"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
  for kind, title in (("tf", "TensorFlow, the encoder SavedModel's serving_default"),
                      ("ort", "onnxruntime, the same model's ONNX file")):
    plain, ops = worker(kind)
    _table(f"{title}, batch 1, seq {FLAGS.seq_length}", plain, ops, FLAGS.top)
  if FLAGS.kernels:
    print("\nTensorFlow's matmuls as oneDNN runs them (mean ms per execution):")
    print("| primitive, implementation, shape | ms | per call |")
    print("|---|---|---|")
    for k, (ms, n) in sorted(worker("kernels").items(), key=lambda kv: -kv[1][0] * kv[1][1]):
      print(f"| {k} | {ms:.3f} | {n:.0f} |")


if __name__ == "__main__":
  app.run(main)
