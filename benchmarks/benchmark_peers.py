"""albert_tf beside transformers/torch ALBERT: speed ratios, real-length cost, recompute memory.

Needs the optional peers: `pip install -e '.[bench]'` (torch CPU, transformers).
Every measurement runs in a fresh process, and the implementations alternate
round by round, so machine noise hits both alike; a row's figure is the median.

  python benchmarks/benchmark_peers.py                       # every section, ~1 hour on 2 cores
  python benchmarks/benchmark_peers.py --sections=uniform    # ALBERT-base b8 s128 only
  python benchmarks/benchmark_peers.py --sections=memory --memory_presets=large

Sections:
  uniform      train (forward + backward + Adam) and inference examples/s of a plain user
               step, ALBERT-base, --batch_size x --seq_length, float32 and bfloat16
               (albert_tf: tf.function over AlbertEncoder + Dense with mixed_bfloat16;
               torch: the same model and head under autocast(bfloat16)). Beside them, in
               the same run, the matmul peak at the model's shapes, each step's fraction
               of it, the fraction the step's matmuls alone reach (all else free), and the
               bound with the fewest bytes its other passes must move at the same-run
               memory bandwidth, of large arrays and of cached ones (`step_min_bytes`).
  real_length  fine-tuning steps on MRPC-like lengths (pairs of median 60 pieces, p90 ~95)
               at --max_seq_length=512 and 128: albert_tf as run_classifier.py batches them
               (length buckets, and fixed padding for comparison), torch padded to 512 and
               padded per batch. R = time at 128 / time at 512.
  memory       peak memory of training steps at seq 512 without and with recompute
               (ALBERT-large b4, ALBERT-xxlarge b1, float32): activation memory = the peak
               of tensor bytes in TF's CPU allocator (tf.config.experimental.get_memory_info)
               during such a step less that during a step on one 8-token example (weights,
               optimizer slots, gradients, the update's temporaries), the peak resident
               set of the process, and the step time; the median of --memory_rounds
               processes each.
"""

import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# `benchmarking` (which imports TensorFlow) is imported where it is used, after a worker
# has set TensorFlow's environment.

from absl import app, flags

flags.DEFINE_list("sections", ["uniform", "real_length", "memory"], "What to measure.")
flags.DEFINE_integer("batch_size", 8, "uniform: examples per step.")
flags.DEFINE_integer("seq_length", 128, "uniform: tokens per example.")
flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "uniform: float32 and/or bfloat16.")
flags.DEFINE_list("modes", ["train", "infer"], "uniform: train and/or infer.")
flags.DEFINE_list("peers", ["torch", "onnx"], "uniform: peers beside torch (onnx: ONNX Runtime "
                  "inference of transformers' exported model, float32).")
flags.DEFINE_integer("steps", 4, "Timed steps per process.")
flags.DEFINE_integer("rounds", 3, "Processes per implementation and setting (alternating).")
flags.DEFINE_integer("real_batch_size", 8, "real_length: examples per step.")
flags.DEFINE_list("memory_presets", ["large", "xxlarge"], "memory: model sizes.")
flags.DEFINE_integer("memory_rounds", 2, "memory: processes per setting (alternating).")
flags.DEFINE_string("json_output", None, "Also write every measurement here.")
flags.DEFINE_string("worker", None, "Internal: run one measurement (JSON spec) and print it.")
FLAGS = flags.FLAGS

MEMORY_BATCH = {"base": 8, "large": 4, "xlarge": 2, "xxlarge": 1}


# ----------------------------------------------------------------------------- inputs

def batches(spec, rng_seed=0):
  """The spec's batches as NumPy: (ids, mask, type_ids, labels), padded to `pad_to`.

  lengths="fixed": every example is `seq` tokens. "mrpc": lengths drawn like MRPC
  pairs (log-normal, median 60, p90 ~95 pieces), cut at `seq`.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(rng_seed)
  b, s = spec["batch"], spec["seq"]
  out = []
  for _ in range(spec["steps"] + 1):   # one warm-up batch more
    if spec.get("lengths", "fixed") == "fixed":
      lengths = np.full(b, s)
    else:
      lengths = np.clip(rng.lognormal(np.log(60), 0.35, b).astype(int), 8, s)
    ids = np.zeros((b, s), np.int32)
    mask = np.zeros((b, s), np.int32)
    types = np.zeros((b, s), np.int32)
    for i, n in enumerate(lengths):
      ids[i, :n] = rng.integers(5, 30000, n)
      mask[i, :n] = 1
      types[i, n // 2:n] = 1
    out.append((ids, mask, types, rng.integers(0, 2, b).astype(np.int32)))
  return out


# ----------------------------------------------------------------------------- workers

def rss_bytes(field):
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith(field + ":"):
        return int(line.split()[1]) * 1024
  raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak():
  """Makes VmHWM (peak resident set) start again from the current resident set."""
  with open("/proc/self/clear_refs", "w") as f:
    f.write("5")


def run_albert_tf(spec):
  if spec.get("memory"):
    # TensorFlow's CPU allocator counts its bytes only when it is oneDNN's (on by default on
    # CPUs with AVX-512 VNNI, bfloat16 or AMX) or the BFC allocator: the BFC one on every
    # CPU, so that the reading means the same on each (AVX2-only CPUs have neither).
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  import albert_tf  # pylint: disable=g-import-not-at-top
  from albert_tf.data import records  # pylint: disable=g-import-not-at-top
  import benchmarking  # pylint: disable=g-import-not-at-top

  keras.mixed_precision.set_global_policy(
      "mixed_bfloat16" if spec["dtype"] == "bfloat16" else "float32")
  config = albert_tf.AlbertConfig.from_preset(spec["preset"])
  step = benchmarking.plain_step(albert_tf.AlbertEncoder(config, recompute=spec.get("recompute", False)),
                           spec["mode"], jit_compile=spec.get("xla", False))
  lengths = records.bucket_lengths(spec["seq"])

  def as_inputs(batch):
    ids, mask, types, labels = batch
    x = dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
             input_type_ids=tf.constant(types))
    if spec.get("bucket"):
      x = records.cut_to_bucket(x, lengths)
    return x, tf.constant(labels)

  data = [as_inputs(b) for b in batches(spec)]
  if spec.get("memory"):
    reset_peak()
  shapes = {}
  for x, y in data:
    shapes.setdefault(int(x["input_mask"].shape[-1]), (x, y))
  for x, y in shapes.values():
    np.asarray(step(x, y))   # trace every shape before timing
  times = []
  for x, y in data[1:]:
    start = time.perf_counter()
    np.asarray(step(x, y))
    times.append(time.perf_counter() - start)
  result = dict(seconds_per_step=statistics.median(times),
                examples_per_second=spec["batch"] / statistics.median(times),
                tokens=int(sum(int(np.prod(x["input_mask"].shape)) for x, _ in data[1:])))
  if spec.get("memory"):
    # The peak of a step on one 8-token example holds the weights, optimizer slots,
    # gradients and the update's temporaries, which do not grow with the batch; what a
    # real step needs above it is its activations. Each peak is read for a step whose
    # shape has run before (a shape's first step also allocates what oneDNN keeps for it),
    # the two alternating twice: single readings taken before the real shape's first step
    # moved from -41 to +75 MB between processes (ALBERT-base b2 s64, Intel Xeon with AMX).
    tiny = ({k: v[:1, :8] for k, v in data[0][0].items()}, data[0][1][:1])
    np.asarray(step(*tiny))
    peaks = {"tiny": [], "real": []}
    for _ in range(2):
      for name, (x, y) in (("tiny", tiny), ("real", data[-1])):
        tf.config.experimental.reset_memory_stats("CPU:0")
        np.asarray(step(x, y))
        peaks[name].append(tf.config.experimental.get_memory_info("CPU:0")["peak"])
    result.update(activation_bytes=max(peaks["real"]) - min(peaks["tiny"]),
                  state_bytes=min(peaks["tiny"]), peak_bytes=rss_bytes("VmHWM"))
  return result


def run_torch(spec):
  import torch  # pylint: disable=g-import-not-at-top
  model, head = _torch_model(spec)
  params = list(model.parameters()) + list(head.parameters())
  optimizer = torch.optim.Adam(params, lr=1e-5)
  bf16 = spec["dtype"] == "bfloat16"
  train = spec["mode"] == "train"
  model.train(train)
  return _time_torch(spec, model, head, optimizer, bf16, train)


def _torch_model(spec):
  """transformers' AlbertModel of the preset (tanh GELU, as albert_tf's) and a Linear head."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  import albert_tf  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(os.cpu_count())
  torch.manual_seed(0)
  c = albert_tf.AlbertConfig.from_preset(spec["preset"])
  config = transformers.AlbertConfig(
      vocab_size=c.vocab_size, embedding_size=c.embedding_size, hidden_size=c.hidden_size,
      num_hidden_layers=c.num_hidden_layers, num_hidden_groups=c.num_hidden_groups,
      num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
      inner_group_num=c.inner_group_num, hidden_act="gelu_new",
      hidden_dropout_prob=c.hidden_dropout_prob,
      attention_probs_dropout_prob=c.attention_probs_dropout_prob,
      max_position_embeddings=c.max_position_embeddings, type_vocab_size=c.type_vocab_size)
  return transformers.AlbertModel(config), torch.nn.Linear(c.hidden_size, 2)


def _time_torch(spec, model, head, optimizer, bf16, train):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top

  def step(ids, mask, types, labels):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
      if not train:
        with torch.inference_mode():
          return head(model(input_ids=ids, attention_mask=mask, token_type_ids=types)
                      .pooler_output)
      logits = head(model(input_ids=ids, attention_mask=mask, token_type_ids=types).pooler_output)
      loss = torch.nn.functional.cross_entropy(logits.float(), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss

  def as_inputs(batch):
    ids, mask, types, labels = batch
    if spec.get("bucket"):   # padded per batch, to its longest example
      width = int(mask.sum(-1).max())
      ids, mask, types = ids[:, :width], mask[:, :width], types[:, :width]
    return [torch.from_numpy(np.ascontiguousarray(a)).long() for a in (ids, mask, types, labels)]

  data = [as_inputs(b) for b in batches(spec)]
  step(*data[0])
  times = []
  for batch in data[1:]:
    start = time.perf_counter()
    step(*batch)
    times.append(time.perf_counter() - start)
  return dict(seconds_per_step=statistics.median(times),
              examples_per_second=spec["batch"] / statistics.median(times))


def run_onnx(spec):
  """Inference of transformers' AlbertModel + the head exported with torch.onnx.export and
  run by ONNX Runtime on the CPU (float32: ONNX Runtime's CPU kernels have no bfloat16)."""
  import tempfile  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import onnxruntime  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  model, head = _torch_model(spec)
  model.eval()

  class Classifier(torch.nn.Module):
    def __init__(self):
      super().__init__()
      self.model, self.head = model, head

    def forward(self, ids, mask, types):
      return self.head(self.model(input_ids=ids, attention_mask=mask,
                                  token_type_ids=types).pooler_output)

  data = batches(spec)
  example = tuple(torch.from_numpy(a).long() for a in data[0][:3])
  path = os.path.join(tempfile.mkdtemp(prefix="albert_onnx_"), "model.onnx")
  with torch.no_grad():
    torch.onnx.export(Classifier(), example, path, input_names=["ids", "mask", "types"],
                      output_names=["logits"], opset_version=18, dynamo=False)
  options = onnxruntime.SessionOptions()
  options.intra_op_num_threads = os.cpu_count()
  session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  feed = lambda b: dict(ids=b[0].astype(np.int64), mask=b[1].astype(np.int64),
                        types=b[2].astype(np.int64))
  session.run(None, feed(data[0]))
  times = []
  for b in data[1:]:
    start = time.perf_counter()
    session.run(None, feed(b))
    times.append(time.perf_counter() - start)
  return dict(seconds_per_step=statistics.median(times),
              examples_per_second=spec["batch"] / statistics.median(times))


def run_peak(spec):
  """The matmul peak of this machine at the model's own shapes (`benchmarking.matmul_peak`)."""
  import benchmarking  # pylint: disable=g-import-not-at-top
  return dict(gflops=benchmarking.matmul_peak(spec))


def run_matmuls(spec):
  """The step's matmuls alone, at the model's shapes, in one tf.function: what the step
  would take if everything but its matmuls were free. Forward: per layer the Q, K, V
  projection, the scores and context batch matmuls, the output projection and the FFN,
  and the embedding projection; training adds each matmul's two gradient matmuls (with
  the transposes TensorFlow's gradients use). The same inputs serve every layer (warmer
  caches than the real step's): an upper bound."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import albert_tf  # pylint: disable=g-import-not-at-top
  c = albert_tf.AlbertConfig.from_preset(spec["preset"])
  b, s = spec["batch"], spec["seq"]
  t, h, i, e, n = b * s, c.hidden_size, c.intermediate_size, c.embedding_size, c.num_attention_heads
  dtype = tf.bfloat16 if spec["dtype"] == "bfloat16" else tf.float32
  train = spec["mode"] == "train"
  random = lambda *shape: tf.cast(tf.random.normal(shape), dtype)
  dense = [(random(t, k), random(k, m), random(t, m)) for k, m in ((h, 3 * h), (h, h), (h, i), (i, h))]
  q, k, v, p = random(b, n, s, h // n), random(b, n, s, h // n), random(b, n, s, h // n), random(b, n, s, s)
  embedded, projection, projected = random(t, e), random(e, h), random(t, h)

  def matmuls():
    out = []
    for x, w, dy in dense:
      out.append(tf.matmul(x, w))
      if train:
        out += [tf.matmul(dy, w, transpose_b=True), tf.matmul(x, dy, transpose_a=True)]
    out += [tf.matmul(q, k, transpose_b=True), tf.matmul(p, v)]
    if train:   # d scores = p here: the shapes are what count
      out += [tf.matmul(p, k), tf.matmul(p, q, transpose_a=True),
              tf.matmul(q, v, transpose_b=True), tf.matmul(p, q, transpose_a=True)]
    return [tf.reduce_sum(tf.cast(o[..., :1, :1], tf.float32)) for o in out]

  @tf.function
  def step():
    total = tf.reduce_sum(tf.cast(tf.matmul(embedded, projection)[:1, :1], tf.float32))
    if train:
      total += tf.reduce_sum(tf.cast(tf.matmul(projected, projection, transpose_b=True)[:1, :1]
                                     + tf.matmul(embedded, projected, transpose_a=True)[:1, :1],
                                     tf.float32))
    for _ in tf.range(c.num_hidden_layers):   # a loop: layer after layer, nothing merged
      total += tf.add_n(matmuls())
    return total

  for _ in range(2):
    step().numpy()
  best = float("inf")
  for _ in range(5):
    start = time.perf_counter()
    step().numpy()
    best = min(best, time.perf_counter() - start)
  return dict(seconds=best)


def run_bandwidth(spec):
  """The memory bandwidth of elementwise passes, in bytes/s: `a + b` on float32 arrays
  (read two, write one) of 16 MiB each, about a [T, I] tensor's size, where caches help
  ("cached"), and of 64 MiB each ("memory"); the best of TensorFlow's own (multi-threaded)
  op and an XLA kernel, and of several repetitions."""
  del spec
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  result = {}
  for key, size in (("cached", 1 << 22), ("memory", 1 << 24)):
    a, b = tf.random.normal([size]), tf.random.normal([size])
    best = 0.0
    for jit in (False, True):
      add = tf.function(lambda x, y: x + y, jit_compile=jit)
      for _ in range(3):
        add(a, b).numpy()
      for _ in range(10):
        start = time.perf_counter()
        add(a, b).numpy()   # a CPU tensor's numpy() shares its buffer: no copy
        best = max(best, 3 * 4 * size / (time.perf_counter() - start))
    result[key] = best
  return result


def step_min_bytes(spec):
  """The fewest bytes a step's passes outside the matmuls must move, each reading its
  inputs and writing its output once, nothing fused into a matmul but the scores' scale and
  mask; layout transposes, masks and the tiny tensors are left out. Per layer: the softmax
  (2 passes of the [B, N, S, S] scores forward, 3 backward), the two bias + residual +
  LayerNorms (3 passes of [T, H] forward; backward 5: its input, the residual, the upstream
  gradient, the other use's gradient, the result), the FFN's bias + GELU (2 passes of
  [T, I] forward, none in float32 inference, whose matmul takes them; 3 backward), and in
  training each application's gradient of the shared weights added to their float32 sum
  (its gradient read; the sum read and written once per `applications_per_sum`
  applications). Per step in training, the optimizer's update: Adam's parameter, two
  slots and gradient read, three written (float32)."""
  import albert_tf  # pylint: disable=g-import-not-at-top
  from albert_tf.modeling.encoder import applications_per_sum  # pylint: disable=g-import-not-at-top
  c = albert_tf.AlbertConfig.from_preset(spec["preset"])
  b, s = spec["batch"], spec["seq"]
  t, h, i, n = b * s, c.hidden_size, c.intermediate_size, c.num_attention_heads
  e = 2 if spec["dtype"] == "bfloat16" else 4
  scores = b * n * s * s
  if spec["mode"] != "train":
    gelu = 2 * t * i if e == 2 else 0
    return c.num_hidden_layers * e * (2 * scores + 2 * 3 * t * h + gelu)
  weights = 4 * h * h + 2 * h * i
  per_sum = applications_per_sum(c) if e == 2 else 1
  layer = e * (5 * scores + 2 * 8 * t * h + 5 * t * i) + weights * (e + 8 / per_sum)
  return c.num_hidden_layers * layer + 28 * (parameter_count(c) + 2 * h + 2)   # and the head


def parameter_count(c):
  """An AlbertEncoder's parameters from its config: embeddings (and their LayerNorm), the
  projection to H, the blocks (kernels, biases, two LayerNorms), the pooler."""
  h, i, e = c.hidden_size, c.intermediate_size, c.embedding_size
  block = 4 * h * h + 2 * h * i + 9 * h + i
  return ((c.vocab_size + c.max_position_embeddings + c.type_vocab_size + 2) * e
          + (e + 1) * h + c.num_hidden_groups * c.inner_group_num * block + h * h + h)


def measure(spec):
  """Runs one spec in a fresh process and returns its result dict."""
  done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker=" + json.dumps(spec)],
                        capture_output=True, text=True)
  if done.returncode:
    raise RuntimeError(f"{spec} failed:\n{done.stderr[-3000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- sections

def alternate(specs, rounds=None):
  """{name: [result of each round]} over `rounds` (`FLAGS.rounds`) rounds of every spec in
  turn."""
  results = {name: [] for name in specs}
  for _ in range(rounds or FLAGS.rounds):
    for name, spec in specs.items():
      results[name].append(measure(spec))
  return results


def median(results, key="examples_per_second"):
  return statistics.median(r[key] for r in results)


def uniform():
  """Examples/s of each implementation, the same-run matmul peak of the dtype, and each
  step's fraction of it (nominal step FLOPs / step time / peak)."""
  rows = []
  for dtype in FLAGS.dtypes:
    for mode in FLAGS.modes:
      common = dict(preset="base", batch=FLAGS.batch_size, seq=FLAGS.seq_length, dtype=dtype,
                    mode=mode, steps=FLAGS.steps)
      impls = ["albert_tf", "torch"] + (["onnx"] if "onnx" in FLAGS.peers and mode == "infer"
                                        and dtype == "float32" else [])
      specs = {impl: dict(common, impl=impl) for impl in impls}
      specs["peak"] = dict(common, impl="peak")
      specs["matmuls"] = dict(common, impl="matmuls")
      specs["bandwidth"] = dict(common, impl="bandwidth")
      got = alternate(specs)
      peak = median(got["peak"], "gflops")
      import benchmarking  # pylint: disable=g-import-not-at-top
      gflop = benchmarking.step_gflop(common)
      # The bound a step meets even if all but its matmuls were free.
      matmuls_seconds = median(got["matmuls"], "seconds")
      matmuls_of_peak = gflop / matmuls_seconds / peak
      # ... and if besides them it only moved its fewest bytes, at the memory's or the
      # caches' bandwidth, none of it beside a matmul (a pass beside one takes its core).
      gb = step_min_bytes(common) / 1e9
      bandwidth = {k: median(got["bandwidth"], k) / 1e9 for k in ("memory", "cached")}
      bound = {k: gflop / (matmuls_seconds + gb / v) / peak for k, v in bandwidth.items()}
      row = dict(section="uniform", mode=mode, dtype=dtype, peak_gflops=peak, step_gflop=gflop,
                 matmuls_alone_of_peak=matmuls_of_peak, min_gb=gb,
                 memory_gb_s=bandwidth["memory"], cached_gb_s=bandwidth["cached"],
                 bound_of_peak=(bound["memory"], bound["cached"]))
      for impl in impls:
        row[impl] = median(got[impl])
        row[f"{impl}_of_peak"] = gflop * row[impl] / FLAGS.batch_size / peak
      row["ratio"] = row["albert_tf"] / row["torch"]
      text = (f"uniform {mode:5s} {dtype:8s} peak {peak:.0f} GFLOP/s, step {gflop:.0f} GFLOP "
              f"(its matmuls alone: {matmuls_of_peak:.0%} of peak; and its fewest {gb:.2f} GB "
              f"at {bandwidth['memory']:.1f}-{bandwidth['cached']:.1f} GB/s: "
              f"{bound['memory']:.0%}-{bound['cached']:.0%}): "
              + ", ".join(f"{impl} {row[impl]:.2f} ex/s ({row[f'{impl}_of_peak']:.0%} of peak)"
                          for impl in impls)
              + f"; albert_tf / torch {row['ratio']:.2f}")
      if "onnx" in impls:
        row["ratio_onnx"] = row["albert_tf"] / row["onnx"]
        text += f", albert_tf / onnxruntime {row['ratio_onnx']:.2f}"
      rows.append(row)
      print(text, flush=True)
  return rows


def real_length():
  common = dict(preset="base", batch=FLAGS.real_batch_size, dtype="float32", mode="train",
                steps=FLAGS.steps, lengths="mrpc")
  specs = {
      "albert_tf 512 buckets": dict(common, impl="albert_tf", seq=512, bucket=True),
      "albert_tf 128 buckets": dict(common, impl="albert_tf", seq=128, bucket=True),
      "albert_tf 512 fixed": dict(common, impl="albert_tf", seq=512, bucket=False),
      "albert_tf 128 fixed": dict(common, impl="albert_tf", seq=128, bucket=False),
      "torch 512 padded per batch": dict(common, impl="torch", seq=512, bucket=True),
      "torch 512 fixed": dict(common, impl="torch", seq=512, bucket=False),
  }
  got = alternate(specs)
  rows = []
  for name, results in got.items():
    rows.append(dict(section="real_length", run=name,
                     seconds_per_step=median(results, "seconds_per_step")))
    print(f"real_length {name:28s} {rows[-1]['seconds_per_step']:.3f} s/step", flush=True)
  t = {r["run"]: r["seconds_per_step"] for r in rows}
  summary = dict(section="real_length", run="summary",
                 R_buckets=t["albert_tf 128 buckets"] / t["albert_tf 512 buckets"],
                 R_fixed=t["albert_tf 128 fixed"] / t["albert_tf 512 fixed"],
                 speedup_512=t["albert_tf 512 fixed"] / t["albert_tf 512 buckets"],
                 ratio_to_torch_per_batch=t["torch 512 padded per batch"]
                 / t["albert_tf 512 buckets"],
                 ratio_to_torch_fixed=t["torch 512 fixed"] / t["albert_tf 512 buckets"])
  print("real_length " + ", ".join(f"{k} {v:.2f}" for k, v in summary.items()
                                   if isinstance(v, float)), flush=True)
  return rows + [summary]


def memory():
  rows = []
  for preset in FLAGS.memory_presets:
    common = dict(preset=preset, batch=MEMORY_BATCH[preset], seq=512, dtype="float32",
                  mode="train", steps=3, impl="albert_tf", memory=True)
    got = alternate({False: dict(common, recompute=False), True: dict(common, recompute=True)},
                    FLAGS.memory_rounds)
    gib = lambda recompute, key: median(got[recompute], key) / 2**30
    row = dict(section="memory", preset=preset, batch=MEMORY_BATCH[preset],
               activation_gib=gib(False, "activation_bytes"),
               activation_gib_recompute=gib(True, "activation_bytes"),
               state_gib=gib(False, "state_bytes"),
               peak_gib=gib(False, "peak_bytes"), peak_gib_recompute=gib(True, "peak_bytes"),
               seconds_per_step=median(got[False], "seconds_per_step"),
               seconds_per_step_recompute=median(got[True], "seconds_per_step"),
               processes=FLAGS.memory_rounds)
    row["memory_ratio"] = row["activation_gib"] / row["activation_gib_recompute"]
    row["time_ratio"] = row["seconds_per_step_recompute"] / row["seconds_per_step"]
    rows.append(row)
    print(f"memory {preset} b{row['batch']} s512: activations {row['activation_gib']:.2f} GiB -> "
          f"{row['activation_gib_recompute']:.2f} GiB with recompute "
          f"({row['memory_ratio']:.1f}x less), step {row['seconds_per_step']:.1f} s -> "
          f"{row['seconds_per_step_recompute']:.1f} s ({row['time_ratio']:.2f}x); peak resident "
          f"{row['peak_gib']:.2f} GiB -> {row['peak_gib_recompute']:.2f} GiB "
          f"(median of {FLAGS.memory_rounds} processes each)", flush=True)
  return rows


def cpu_description():
  """lscpu's model name, the CPU flags that decide the speed of each dtype, the cores."""
  import re  # pylint: disable=g-import-not-at-top
  info = open("/proc/cpuinfo").read()
  name = re.search(r"model name\s*:\s*(.*)", info).group(1).strip()
  present = set(re.search(r"flags\s*:\s*(.*)", info).group(1).split())
  wanted = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f", "avx2")
  return (f"{name} ({' '.join(f for f in wanted if f in present) or 'none of ' + str(wanted)}), "
          f"{os.cpu_count()} CPUs")


def main(_):
  if FLAGS.worker:
    spec = json.loads(FLAGS.worker)
    result = dict(albert_tf=run_albert_tf, torch=run_torch, onnx=run_onnx,
                  peak=run_peak, matmuls=run_matmuls, bandwidth=run_bandwidth)[spec["impl"]](spec)
    print(json.dumps(result))
    return
  print(f"{cpu_description()}; each figure the median of {FLAGS.rounds} processes "
        f"({FLAGS.memory_rounds} in memory)", flush=True)
  rows = []
  for section in FLAGS.sections:
    rows += {"uniform": uniform, "real_length": real_length, "memory": memory}[section]()
  if FLAGS.json_output:
    with open(FLAGS.json_output, "w") as f:
      json.dump(rows, f, indent=2)


if __name__ == "__main__":
  app.run(main)
