"""The compute dtype, measured: `--dtype=auto` and the bfloat16 hint.

Whether bfloat16 pays cannot be read off the CPU's flags. oneDNN on an Intel Xeon with
`avx512_bf16` but no AMX runs bfloat16 matmuls slower than float32, while an AMD EPYC
with the same flag runs them faster, and on CPUs without either flag bfloat16 is
emulated. So the choice comes from a probe: the matmul rate of each dtype at the model's
own largest shape (the feed-forward layer's [tokens, H] x [H, I]), measured in about a
second. `--dtype=auto` takes the faster (bfloat16 only when it is clearly faster: it
costs precision), and a run records what it chose, so a resume keeps it.
"""

import dataclasses
import sys
import time
from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf

DTYPES = ("float32", "bfloat16", "float16")
AUTO = "auto"
# bfloat16 is chosen only when its matmuls are at least this much faster than float32's:
# below it the speed-up would not pay for the lost precision (and for noise in the probe).
MIN_SPEEDUP = 1.15


@dataclasses.dataclass(frozen=True)
class ProbeResult:
  """GFLOP/s of each dtype's matmul at `shape` ([m, k] x [k, n])."""
  shape: Tuple[int, int, int]
  rates: Dict[str, float]

  @property
  def speedup(self) -> float:
    """bfloat16's rate over float32's."""
    return self.rates["bfloat16"] / self.rates["float32"]

  def choice(self) -> str:
    return "bfloat16" if self.speedup >= MIN_SPEEDUP else "float32"

  def describe(self) -> str:
    m, k, n = self.shape
    return (f"matmul [{m}, {k}] x [{k}, {n}]: bfloat16 {self.rates['bfloat16']:.0f} GFLOP/s, "
            f"float32 {self.rates['float32']:.0f} GFLOP/s ({self.speedup:.2f}x)")


def probe_shape(config, tokens: int) -> Tuple[int, int, int]:
  """The feed-forward matmul of `config` ([tokens, H] x [H, I]): most of a step's FLOPs."""
  return (max(int(tokens), 1), config.hidden_size, config.intermediate_size)


def measure(shape: Tuple[int, int, int], seconds: float = 0.8) -> ProbeResult:
  """Times float32 and bfloat16 matmuls of `shape`, alternating, for about `seconds` in
  all after one warm-up call each; each dtype's best round counts."""
  m, k, n = shape
  functions, inputs = {}, {}
  for name in ("float32", "bfloat16"):
    dtype = tf.as_dtype(name)
    inputs[name] = (tf.cast(tf.random.stateless_normal([m, k], [1, 2]), dtype),
                    tf.cast(tf.random.stateless_normal([k, n], [3, 4]), dtype))
    functions[name] = tf.function(lambda a, b: tf.reduce_sum(tf.matmul(a, b)[:1, :1]),
                                  autograph=False)
    functions[name](*inputs[name]).numpy()    # trace, and oneDNN's primitive made
  best = {name: 0.0 for name in functions}
  flops = 2.0 * m * k * n
  rounds = 4
  for _ in range(rounds):
    for name, function in functions.items():
      calls, started = 0, time.perf_counter()
      while True:
        function(*inputs[name]).numpy()
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds / (2 * rounds):
          break
      best[name] = max(best[name], flops * calls / elapsed / 1e9)
  return ProbeResult(tuple(shape), best)


# The probe the scripts call; tests replace it to drive the choice.
PROBE: Callable[[Tuple[int, int, int]], ProbeResult] = measure


def resolve(requested: str, shape: Tuple[int, int, int], recorded: Optional[str] = None,
            flag: str = "--dtype") -> str:
  """The dtype a run computes in. `auto` keeps `recorded` (the dtype an earlier run in the
  same output directory chose), else measures (`PROBE`) and takes the faster; an explicit
  `bfloat16` is kept, with a one-line hint when the probe finds it slower than float32.
  Prints what was measured and chosen."""
  if requested not in DTYPES + (AUTO,):
    raise ValueError(f"{flag} must be one of {', '.join(DTYPES + (AUTO,))}; got {requested!r}")
  if requested == AUTO and recorded in DTYPES:
    print(f"{flag}=auto: {recorded}, as this run chose when it started")
    return recorded
  if requested not in (AUTO, "bfloat16"):
    return requested
  probe = PROBE(shape)
  if requested == AUTO:
    chosen = probe.choice()
    print(f"{flag}=auto: {chosen} ({probe.describe()}; bfloat16 needs "
          f"{MIN_SPEEDUP:.2f}x)")
    return chosen
  if probe.speedup < 1.0:
    print(f"hint: bfloat16 runs slower than float32 on this machine ({probe.describe()}); "
          f"{flag}=float32 or {flag}=auto would be faster and exact", file=sys.stderr)
  return requested
