"""What answers a packed batch: a model under TensorFlow (float32 or bfloat16), or its ONNX
export under ONNX Runtime, each a `forward` (NumPy inputs, named as the ONNX export's ->
named NumPy outputs), and `auto`'s choice among these pairs, measured once per CPU and
weights.

A pair is "runtime/dtype" (`PAIRS`). `--runtime=auto` weighs every runtime, `--dtype=auto`
every dtype, both every pair (`candidates`). The rule (`choose`): the fastest float32 pair
on the first batch, unless a bfloat16 pair is `BFLOAT16_MARGIN` times as fast warm, no
slower on a new batch shape's first call, and gives that batch the float32 answers (labels,
label sets, spans, choices; scores within the problem's tolerance): bfloat16 trades
precision for speed, and the trade is taken only where the answers stay and no file of
any lengths answers slower.

A run's forward is made by its owner (`albert_tf.runs.Run.answering`) from these; nothing
here knows what a run is.
"""

import json
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.export.onnx import inference_function
from albert_tf.files import atomic_open

RUNTIMES = ("tensorflow", "onnxruntime")
AUTO = "auto"
DTYPES = ("float32", "bfloat16")
QUANTIZATIONS = ("none", "dynamic_int8")

# The runtime-dtype pairs a run can answer with: ONNX Runtime runs float32 (its int8 is
# `--quantization`'s, which changes the answers, so auto never takes it).
PAIRS = ("tensorflow/float32", "tensorflow/bfloat16", "onnxruntime/float32")
# bfloat16 is taken only when it answers at least this much faster than float32 (below it,
# the gain is within the first batch's timing noise and not worth the precision).
BFLOAT16_MARGIN = 1.05
# What `measured_choice` times: the first batch's first rows, up to this many pieces (at
# least one row): ALBERT-base's 32 x 316 pieces took 4 float32 calls of 8.6 s each.
MEASURED_PIECES = 2048
MIN_TIMED_SECONDS = 0.2

Forward = Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]
# (float32 outputs, a candidate's outputs) -> None when they give the same answers, else
# what differs (one line).
Agreement = Callable[[Dict[str, np.ndarray], Dict[str, np.ndarray]], Optional[str]]


def candidates(runtime: str, dtype: str, flag: str = "--runtime") -> List[str]:
  """The pairs (`PAIRS`) `runtime` and `dtype` allow, `AUTO` meaning any; an error naming
  the flags when none does."""
  pairs = [p for p in PAIRS
           if runtime in (AUTO, p.split("/")[0]) and dtype in (AUTO, p.split("/")[1])]
  if not pairs:
    raise ValueError(f"--dtype={dtype} is TensorFlow's; {flag}={runtime} runs float32, or "
                     "int8 with --quantization=dynamic_int8")
  return pairs


def is_float32(pair: str) -> bool:
  return pair.endswith("/float32")


def choose(rates: Dict[str, float], differences: Dict[str, Optional[str]],
           first_rates: Optional[Dict[str, float]] = None) -> Tuple[str, str]:
  """(the pair to answer with, why) from the rows/s each pair answered the first batch at,
  warm (`rates`) and on a batch shape's first call (`first_rates`: each new batch width
  costs oneDNN's bfloat16 kernels a first call, ~0.1 s on `make demo`'s model against a
  40 ms batch, so a file of short texts meets it again and again), and, for each bfloat16
  pair, what in its answers differed from float32's (`differences`: None when nothing
  did). Float32 pairs: the fastest warm. A bfloat16 pair replaces it only when it answers
  alike, is at least `BFLOAT16_MARGIN` times as fast warm, and is no slower on a new
  shape's first call."""
  first_rates = first_rates or rates
  float32 = {p: r for p, r in rates.items() if is_float32(p)}
  best = max(float32, key=float32.get)
  why = ", ".join(f"{p} {r:.1f} rows/s ({first_rates[p]:.1f} on a new shape)"
                  for p, r in rates.items())
  notes = []
  for pair in sorted((p for p in rates if not is_float32(p)), key=rates.get, reverse=True):
    if differences.get(pair):
      notes.append(f"{pair} not taken: {differences[pair]}")
    elif rates[pair] < BFLOAT16_MARGIN * rates[best]:
      notes.append(f"{pair} not taken: under {BFLOAT16_MARGIN:.2f}x float32's speed")
    elif first_rates[pair] < first_rates[best]:
      notes.append(f"{pair} not taken: slower than float32 on each new batch shape's first "
                   "call")
    else:
      notes.append(f"{pair}: the same answers, {rates[pair] / rates[best]:.2f}x float32's speed")
      best = pair
      break
  return best, "; ".join([why] + notes)


def tensorflow_forward(model) -> Forward:
  """The model's inference call (the graph its ONNX export is made of), NumPy in and out."""
  function, spec, _ = inference_function(model)

  def forward(batch):
    outputs = function(*[tf.constant(batch[s.name], s.dtype) for s in spec])
    return {k: (tf.cast(v, tf.float32) if v.dtype.is_floating else v).numpy()
            for k, v in outputs.items()}
  return forward


def onnx_forward(path: str) -> Forward:
  """`forward` under ONNX Runtime, on the ONNX file in `path`."""
  try:
    import onnxruntime  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("--runtime=onnxruntime needs ONNX Runtime and tf2onnx: pip install "
                      "'albert_tf[onnx]'") from None
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
  session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  inputs = {i.name: i.type for i in session.get_inputs()}
  names = [o.name for o in session.get_outputs()]

  def forward(batch):
    feed = {k: batch[k].astype(np.float32 if "float" in inputs[k] else np.int32)
            for k in inputs}
    return dict(zip(names, session.run(names, feed)))
  return forward


def host_kind() -> str:
  """The CPU, as a runtime's speed depends on it: `lscpu`'s model name, the vector and
  matrix extensions TensorFlow and ONNX Runtime choose kernels by, the core count."""
  name, present = "unknown CPU", set()
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name == "unknown CPU":
          name = value.strip()
        elif key.strip() == "flags" and not present:
          present = set(value.split())
  except OSError:
    pass
  wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
  return f"{name} ({' '.join(w for w in wanted if w in present)}), {os.cpu_count()} CPUs"


def recorded_choice(path: str, key: Dict[str, object], flag: str = "auto") -> Optional[str]:
  """The pair `auto` recorded in `path` for `key` (this CPU, these weights, these
  candidates), or None when it has not measured them here (printed when found). A record
  of an older albert_tf (a runtime, float32) holds for TensorFlow against ONNX Runtime."""
  try:
    with open(path, encoding="utf-8") as f:
      recorded = json.load(f)
  except (OSError, ValueError):
    return None
  if "pair" not in recorded and recorded.get("runtime") in RUNTIMES:
    recorded = dict(recorded, pair=f"{recorded['runtime']}/float32",
                    candidates=["tensorflow/float32", "onnxruntime/float32"])
  if not (all(recorded.get(k) == v for k, v in key.items()) and recorded.get("pair") in PAIRS):
    return None
  print(f"{flag}: {recorded['pair']}, as measured on this CPU before "
        f"({recorded.get('reason')}; {path})")
  return recorded["pair"]


def timed(pair: str, forward: Forward, warm_up: Optional[Dict[str, np.ndarray]],
          batch: Dict[str, np.ndarray]) -> Tuple[float, float, Dict[str, np.ndarray]]:
  """(seconds of `forward`'s first call on `batch`'s shape, after one call on `warm_up`'s
  (another shape; None: none), the best warm call on `batch`: of 3, or of as many as fill
  `MIN_TIMED_SECONDS`, since a small model's calls of a few ms vary by more than the
  dtypes differ; the outputs of `batch`)."""
  del pair
  if warm_up is not None:
    forward(warm_up)                             # tracing, sessions, first execution
  started = time.perf_counter()
  outputs = forward(batch)
  first = time.perf_counter() - started
  best, calls, started = float("inf"), 0, time.perf_counter()
  while calls < 3 or time.perf_counter() - started < MIN_TIMED_SECONDS:
    call = time.perf_counter()
    forward(batch)
    best = min(best, time.perf_counter() - call)
    calls += 1
  return first, best, outputs


# How `measured_choice` times a candidate; tests replace it to drive the choice.
TIME: Callable[[str, Forward, Optional[Dict[str, np.ndarray]], Dict[str, np.ndarray]],
               Tuple[float, float, Dict[str, np.ndarray]]] = timed


def measured_choice(candidates: Dict[str, Forward], path: str, key: Dict[str, object],
                    agree: Agreement, flag: str = "auto") -> Forward:
  """A forward that times every candidate pair on the first batch it is given (its first
  rows, up to `MEASURED_PIECES` pieces: `timed`, a new shape's first call and warm),
  checks each bfloat16 pair's answers of those rows against the float32 ones (`agree`),
  answers the batch with the pair `choose` takes, keeps that one (the others are let go),
  and records the choice and its reason in `path` with `key`."""
  chosen = []

  def forward(batch):
    if chosen:
      return chosen[0](batch)
    ids = np.asarray(batch["input_word_ids"])
    rows = max(1, min(len(ids), MEASURED_PIECES // max(1, int(np.prod(ids.shape[1:])))))
    sample = {k: v[:rows] for k, v in batch.items()}
    # One call on another shape first (a row fewer, else half the width) takes what a
    # process pays once; the sample's own first call is then what each new shape costs.
    width = ids.shape[-1]
    warm_up = ({k: v[:rows - 1] for k, v in batch.items()} if rows > 1 else
               {k: v[..., :width // 2] if v.shape[-1] == width else v
                for k, v in sample.items()} if width > 1 else None)
    first, seconds, outputs = {}, {}, {}
    for name, candidate in candidates.items():
      first[name], seconds[name], outputs[name] = TIME(name, candidate, warm_up, sample)
    reference = outputs[next(p for p in candidates if is_float32(p))]
    differences = {p: agree(reference, o) for p, o in outputs.items() if not is_float32(p)}
    rates = {p: rows / v for p, v in seconds.items()}
    first_rates = {p: rows / v for p, v in first.items()}
    name, reason = choose(rates, differences, first_rates)
    shape = "x".join(str(d) for d in sample["input_word_ids"].shape)
    reason = f"{reason} (on {shape} pieces of the first batch)"
    print(f"{flag}: {name} ({reason}); recorded in {path} for this CPU")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path, encoding="utf-8") as f:
      json.dump(dict(key, pair=name, runtime=name.split("/")[0], dtype=name.split("/")[1],
                     reason=reason, rows_per_second=rates,
                     rows_per_second_on_a_new_shape=first_rates), f, indent=2)
    chosen.append(candidates[name])
    candidates.clear()                           # the others' models are let go
    return outputs[name] if rows == len(ids) else chosen[0](batch)
  return forward


def same_argmax(reference: Dict[str, np.ndarray], outputs: Dict[str, np.ndarray],
                names: Sequence[str] = ()) -> Optional[str]:
  """None when every output in `names` (default: every one ending in `logits`) has the
  same argmax over its last axis in `outputs` as in `reference` (a span's start and end, a
  choice, a label); else the first that differs."""
  for name in names or [k for k in reference if k.endswith("logits")]:
    want, got = np.argmax(reference[name], -1), np.argmax(outputs[name], -1)
    if not np.array_equal(want, got):
      row = int(np.flatnonzero(np.asarray(want != got).reshape(-1))[0])
      return f"{name}'s argmax differs in row {row} of the batch"
  return None
