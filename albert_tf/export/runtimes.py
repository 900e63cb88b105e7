"""What answers a packed batch: a model under TensorFlow, or its ONNX export under ONNX
Runtime, each a `forward` (NumPy inputs, named as the ONNX export's -> named NumPy
outputs), and `--runtime=auto`'s choice between them, measured once per CPU and weights.

A run's forward is made by its owner (`albert_tf.runs.Run.answering`) from these; nothing
here knows what a run is.
"""

import json
import os
import time
from typing import Callable, Dict, Optional

import numpy as np
import tensorflow as tf

from albert_tf.export.onnx import inference_function
from albert_tf.files import atomic_open

RUNTIMES = ("tensorflow", "onnxruntime")
AUTO = "auto"
DTYPES = ("float32", "bfloat16")
QUANTIZATIONS = ("none", "dynamic_int8")

Forward = Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]


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


def recorded_choice(path: str, key: Dict[str, str]) -> Optional[str]:
  """The runtime `--runtime=auto` recorded in `path` for `key` (this CPU, these weights),
  or None when it has not measured here (printed when found)."""
  try:
    with open(path, encoding="utf-8") as f:
      recorded = json.load(f)
  except (OSError, ValueError):
    return None
  if not (all(recorded.get(k) == v for k, v in key.items())
          and recorded.get("runtime") in RUNTIMES):
    return None
  print(f"--runtime=auto: {recorded['runtime']}, as measured on this CPU before "
        f"({recorded.get('reason')}; {path})")
  return recorded["runtime"]


def measured_choice(candidates: Dict[str, Forward], path: str, key: Dict[str, str]
                    ) -> Forward:
  """A forward that times every candidate on the first batch it is given (best of 3,
  after a first call that traces and warms up), answers it with the fastest, keeps that
  one, and records the choice and its reason in `path` with `key`."""
  chosen = []

  def forward(batch):
    if chosen:
      return chosen[0](batch)
    rows = len(next(iter(batch.values())))
    seconds, outputs = {}, {}
    for name, candidate in candidates.items():
      outputs[name] = candidate(batch)           # first call: tracing, sessions warmed up
      best = float("inf")
      for _ in range(3):
        started = time.perf_counter()
        candidate(batch)
        best = min(best, time.perf_counter() - started)
      seconds[name] = best
    name = min(seconds, key=seconds.get)
    shape = "x".join(str(d) for d in np.shape(batch["input_word_ids"]))
    reason = (f"{', '.join(f'{k} {rows / v:.1f} rows/s' for k, v in seconds.items())} on a "
              f"batch of {shape} pieces")
    print(f"--runtime=auto: {name} ({reason}); recorded in {path} for this CPU")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path, encoding="utf-8") as f:
      json.dump(dict(key, runtime=name, reason=reason,
                     rows_per_second={k: rows / v for k, v in seconds.items()}), f, indent=2)
    chosen.append(candidates[name])
    return outputs[name]
  return forward
