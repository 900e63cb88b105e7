"""The transformer block's non-matmul math as fused kernels, forward and backward.

Between its matmuls an ALBERT block computes elementwise chains and row
reductions: bias adds, dropout, the FFN's GELU, residual adds and LayerNorms.
Op by op each is a pass over a [T, H] or [T, I] tensor (and its autodiff
gradient two or three more); under bfloat16 on a CPU with AMX those passes
cost as much as the matmuls. Here a chain is one `tf.custom_gradient` whose
forward and backward are each an XLA-compiled function
(`tf.function(jit_compile=True)`), with float32 math inside whatever the
compute dtype; the matmuls stay plain `tf.matmul`. TensorFlow runs a 2-D matmul
+ BiasAdd as oneDNN's inner product (gemm:jit), not the AMX matmul a plain one
gets (65-90% of its speed in bfloat16 on an Intel Xeon with AMX), so the bias
goes into the kernel after. Where no kernel follows (the Q, K, V projection),
`projection` writes the matmul as a 4-D batch matmul * scalar + bias, which the
remapper makes one AMX matmul with post-ops. `attention_probs` does the same for the
attention scores (`q.k * scale + mask`), takes oneDNN's 16-bit softmax, and computes
the softmax's gradient in one XLA kernel: an ALBERT-base bfloat16 train step 0.63-0.68
-> 0.60-0.61 s (against float32 scores, softmax and gradient with a cast each way).

Measured per kernel on [1024, 768] / [1024, 3072] (b8 s128 of ALBERT-base,
Intel Xeon with AMX, 2 cores), forward+backward against the reference ops:
bias + residual + LayerNorm 2.34 against 3.35 ms in bfloat16 (2.39 against
2.91 in float32); bias + GELU 2.36 against 14.69 ms. The attention's mask +
softmax forward as an XLA kernel was slower than TensorFlow's own ops in float32
(3.63 against 2.28 ms) and no faster in bfloat16: the forward is oneDNN's.

`AlbertTransformerBlock` runs them under 16-bit compute dtypes (mixed_bfloat16,
mixed_float16): in `benchmarks/benchmark_peers.py` an ALBERT-base bfloat16 step
trains about 12% and infers about 25% faster with them. In float32 it keeps its
reference ops (and the training GELU of `activations.gelu_fused`): there the
kernels gained nothing measurable and the float32 equality tests stay on the
same graph.

Conversions between bfloat16 and float32 inside the kernels are integer ops
(`_float32`, `_cast`: `tf.cast`'s bits), because XLA's CPU converts are scalar code: a
bias + GELU backward kernel 1.34 against 1.71 ms. `accumulate` adds one or more
applications' 16-bit gradients of a shared weight to the float32 running sum in one pass
(a Cast and an AddN would be three); both save about 6% of an ALBERT-base bfloat16 train
step.

The backward kernels keep only the inputs (and LayerNorm's row mean and rstd, [R, 1])
and recompute what they need (GELU's tanh): the activation memory of the reference
ops, no float32 copies. Their row sums are variadic XLA reductions (`_row_sums`), which
XLA's CPU compiler leaves whole where it splits a plain one into an unfused
reduce-window; and the bias gradient of bias + GELU is summed from the 16-bit input
gradient by a second kernel (in one kernel XLA wrote the float32 tanh out and read it
twice). Forward + backward in bfloat16: a [1024, 768] LayerNorm 2.3 -> 2.0 ms (12 in
a row in one graph; the forward alone unchanged, 0.8 ms), a [1024, 3072] GELU 3.6 ->
3.0 ms and the attention softmax 3.2 -> 3.0 ms (called one at a time); an ALBERT-base
bfloat16 train step about 4% faster (alternating processes, noisy).

Each function equals its reference ops within 1e-6 in float32, and in bfloat16 is
within bfloat16 precision of the float32 function (`tests/test_fused.py`).
"""

import math

import tensorflow as tf
from tensorflow.compiler.tf2xla.ops import gen_xla_ops  # XLA's variadic reduce

from albert_tf.modeling.tracing import custom_gradient

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _float32(x):
  """x as float32. From bfloat16, its 16 bits shifted into a float32's high half (exact):
  XLA's CPU convert from bfloat16 runs 2-3 times slower than these integer ops."""
  if x.dtype != tf.bfloat16:
    return tf.cast(x, tf.float32)
  bits = tf.cast(tf.bitcast(x, tf.uint16), tf.uint32)
  return tf.bitcast(tf.bitwise.left_shift(bits, 16), tf.float32)


def _cast(x, dtype):
  """float32 x to `dtype`; to bfloat16 rounded to nearest even, as `tf.cast` rounds, by
  integer ops (XLA's CPU convert to bfloat16 is scalar code). NaN stays NaN."""
  if dtype != tf.bfloat16:
    return tf.cast(x, dtype)
  bits = tf.bitcast(x, tf.uint32)
  shift = tf.bitwise.right_shift
  rounded = shift(bits + (tf.bitwise.bitwise_and(shift(bits, 16), 1) + 0x7FFF), 16)
  nan = tf.bitwise.bitwise_and(bits, 0x7FFFFFFF) > 0x7F800000   # quiet, not rounded
  high = tf.where(nan, tf.bitwise.bitwise_or(shift(bits, 16), 0x40), rounded)
  return tf.bitcast(tf.cast(high, tf.uint16), tf.bfloat16)


def _scaled_keep(x, keep, rate):
  """x / (1 - rate) where `keep`, else 0; x itself without a mask. float32."""
  if keep is None:
    return x
  return tf.where(keep, x * (1.0 / (1.0 - rate)), 0.0)


def _sum_rows(x):
  """Sum over every axis but the last: [..., C] -> [C], as a [1, R] x [R, C] matmul (oneDNN; XLA's CPU
  column reductions, rewritten into reduce-windows, took 3-4 times as long)."""
  rows = tf.reshape(x, [-1, tf.shape(x)[-1]])                               # [R, C]
  return tf.matmul(tf.ones([1, tf.shape(rows)[0]], x.dtype), rows)[0]


_GROUP = 8


def _sums_of_groups(rows):
  """[..., C] float32 as R rows -> [ceil(R / 8), C], the sums of groups of 8 rows
  (zero-padded). Inside a kernel, what a bias, gamma or beta gradient (a column sum) is
  then taken from: an eighth of the rows, not a [R, C] tensor written for it and read
  again. (XLA's CPU column sum over all R rows is rewritten into reduce-windows, 3-4 times
  slower than `_sum_rows`.)"""
  rows = tf.reshape(rows, [-1, rows.shape[-1]])                            # [R, C]
  rows = tf.pad(rows, [[0, (-tf.shape(rows)[0]) % _GROUP], [0, 0]])
  return tf.reduce_sum(tf.reshape(rows, [-1, _GROUP, rows.shape[-1]]), 1)


@tf.function(autograph=False)
def _add_pairs(a, b, c, d):
  return a + c, b + d


def _row_sums(u, v=None):
  """Sums over the last axis of float32 [R, C] u and v (default u): ([R, 1], [R, 1]),
  as one variadic XLA reduce. XLA's CPU compiler rewrites a single reduction over more
  than 32 elements into a reduce-window that fuses with nothing (its input written as a
  float32 [R, C] tensor and read again), but leaves variadic ones alone: the bias +
  residual + LayerNorm forward + backward 2.3 against 2.0 ms ([1024, 768], bfloat16,
  12 in a row in one graph)."""
  v = u if v is None else v
  zero = tf.constant(0.0)
  sums = gen_xla_ops.xla_variadic_reduce_v2(
      inputs=[u, v], init_values=[zero, zero], dimensions_to_reduce=[u.shape.rank - 1],
      reducer=_add_pairs.get_concrete_function(zero, zero, zero, zero))
  # The kernels are never differentiated, and this op has no gradient: stop it, so that a
  # tape over a kernel's call does not look for one.
  return tuple(tf.stop_gradient(t[..., tf.newaxis]) for t in sums)


# --- FFN: bias + GELU (tanh approximation) --------------------------------------------

@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_forward(x, bias):
  z = _float32(x) + _float32(bias)                                         # [R, I]
  return _cast(tf.nn.gelu(z, approximate=True), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_backward(x, bias, upstream):
  """With u = c (z + 0.044715 z^3), t = tanh(u):
  gelu'(z) = 0.5 (1 + t) + 0.5 z (1 - t^2) c (1 + 3 * 0.044715 z^2)."""
  z = _float32(x) + _float32(bias)
  z2 = z * z
  c = _SQRT_2_OVER_PI
  t = tf.math.tanh(z * (c + c * 0.044715 * z2))
  slope = 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * (c + 3.0 * c * 0.044715 * z2)
  return _cast(_float32(upstream) * slope, x.dtype)                        # [R, I]


@tf.function(jit_compile=True, autograph=False)
def _group_sums(x):
  return _sums_of_groups(_float32(x))


@custom_gradient
def bias_gelu(x, bias):
  """gelu(x + bias), the tanh approximation (the original's "gelu"): x [R, I], bias [I]."""
  def grad(upstream):
    dx = _bias_gelu_backward(x, bias, upstream)                              # [R, I]
    return dx, tf.cast(_sum_rows(_group_sums(dx)), bias.dtype)
  return _bias_gelu_forward(x, bias), grad


# --- bias + dropout + residual + LayerNorm ---------------------------------------------

def _sum(x, bias, keep, rate, residual):
  """float32 LayerNorm input s = dropout(x + bias) + residual. [R, H]."""
  s = _scaled_keep(_float32(x) + _float32(bias), keep, rate)
  return s + _float32(residual)


@tf.function(jit_compile=True, autograph=False)
def _add_norm_forward(x, bias, keep, rate, residual, gamma, beta, epsilon):
  """The output, and the rows' mean and rstd ([R, 1] float32) for the backward."""
  s = _sum(x, bias, keep, rate, residual)
  mean = _row_sums(s)[0] / s.shape[-1]
  centered = s - mean
  rstd = tf.math.rsqrt(_row_sums(tf.square(centered))[0] / s.shape[-1] + epsilon)
  return _cast(centered * rstd * gamma + beta, x.dtype), mean, rstd


@tf.function(jit_compile=True, autograph=False)
def _add_norm_backward(x, bias, keep, rate, residual, gamma, mean, rstd, upstream):
  """LayerNorm's closed form, dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma,
  then back through the residual add and the dropout to x and bias."""
  xhat = (_sum(x, bias, keep, rate, residual) - mean) * rstd                 # [R, H]
  dy = _float32(upstream)
  g = dy * gamma
  sum_g, sum_gx = _row_sums(g, g * xhat)                                   # [R, 1] each
  ds = rstd * (g - (sum_g + xhat * sum_gx) / g.shape[-1])                  # [R, H]
  dz = _scaled_keep(ds, keep, rate)
  # dx, d residual (dx itself without dropout), and what d bias, d gamma and d beta are
  # the column sums of
  sums = [_sums_of_groups(r) for r in (dz, dy * xhat, dy)]
  if keep is None:
    return [_cast(dz, x.dtype)] + sums
  return [_cast(dz, x.dtype), _cast(ds, residual.dtype)] + sums


def bias_dropout_add_norm(x, bias, residual, gamma, beta, epsilon, keep=None, rate=0.0):
  """LayerNorm(dropout(x + bias) + residual) * gamma + beta over the last axis.

  Args:
    x: [R, H] a projection's matmul product (compute dtype).
    bias: [H] its bias.
    residual: [R, H] the block's input to add.
    gamma, beta: [H] float32 LayerNorm scale and offset.
    epsilon: LayerNorm's epsilon.
    keep: None, or the [R, H] bool dropout keep mask; rate: its rate.

  Returns [R, H] in x's dtype; the statistics are taken in float32.
  """
  rate, epsilon = float(rate), float(epsilon)

  @custom_gradient
  def add_norm(x, bias, residual, gamma, beta):
    out, mean, rstd = _add_norm_forward(x, bias, keep, rate, residual, gamma, beta, epsilon)

    def grad(upstream):
      grads = _add_norm_backward(x, bias, keep, rate, residual, gamma, mean, rstd, upstream)
      dx = grads[0]
      dresidual = dx if keep is None else grads[1]
      dbias, dgamma, dbeta = (_sum_rows(sums) for sums in grads[-3:])
      return dx, tf.cast(dbias, bias.dtype), dresidual, dgamma, dbeta
    return out, grad

  return add_norm(x, bias, residual, gamma, beta)


# --- matmul * scale + bias, as one oneDNN matmul with post-ops ---------------------------

def _scaled_matmul(a, b, scale):
  """`(a @ b) * scale` on 2-D operands as a 4-D batch matmul [1, 1, R, O]: TensorFlow's
  remapper makes a 4-D BatchMatMul + Mul + Add one oneDNN matmul with post-ops."""
  product = tf.matmul(a[tf.newaxis, tf.newaxis], b[tf.newaxis, tf.newaxis])
  return product * tf.constant(scale, a.dtype)


def projection(x, kernel, bias, scale, scaled_kernel):
  """`(x @ scaled_kernel) * scale + bias` = `x @ kernel + bias`: x [R, I], kernel and
  scaled_kernel = kernel / scale [I, O], bias [O], scale a Python float (a power of two:
  the same values). [R, O]. The gradients are those of `x @ kernel + bias` (for x,
  kernel and bias; none for scaled_kernel). `kernel=None`: the forward alone.

  The forward is one oneDNN AMX matmul with post-ops: TensorFlow runs `tf.nn.bias_add`
  after a 2-D matmul as oneDNN's inner product (gemm:jit) instead, [1024, 768] x
  [768, 2304] in bfloat16 2.9 against 2.3 ms, and its BiasAddGrad is a slow 16-bit
  column sum. The backward is two plain matmuls and a [1, R] x [R, O] column sum."""
  out_size = scaled_kernel.shape[-1]

  def forward(x, bias, scaled_kernel):
    out = _scaled_matmul(x, scaled_kernel, scale) + tf.reshape(bias, [1, 1, 1, out_size])
    return tf.reshape(out, [-1, out_size])                                   # [R, O]

  if kernel is None:   # inference: no gradient, so only the forward's kernel
    return forward(x, bias, scaled_kernel)

  @custom_gradient
  def project(x, kernel, bias, scaled_kernel):
    def grad(upstream):                                                      # [R, O]
      return (tf.matmul(upstream, kernel, transpose_b=True),                # [R, I]
              tf.matmul(x, upstream, transpose_a=True),                     # [I, O]
              _sum_rows(upstream), None)
    return forward(x, bias, scaled_kernel), grad

  return project(x, kernel, bias, scaled_kernel)


# --- attention probabilities: scores with post-ops, 16-bit softmax ----------------------

@tf.function(jit_compile=True, autograph=False)
def _softmax_backward(probs, upstream, scale):
  """d(q.k) of softmax(scale q.k + mask): scale p (g - sum(g p)), float32 inside."""
  p, g = _float32(probs), _float32(upstream)                                 # [B, N, Q, S]
  return _cast(p * (g - _row_sums(g * p)[0]) * scale, probs.dtype)


def attention_probs(q, k, attention_bias, scale):
  """softmax(q k^T * scale + attention_bias) over the last axis, in q's dtype.

  Args:
    q: [B, N, Q, D]; k: [B, N, S, D] (16-bit).
    attention_bias: [B, 1, 1, S] float32 additive mask (0 or -10000).
    scale: a Python float, a power of two (then no value changes with it).

  Returns [B, N, Q, S]. The scores are one oneDNN batch matmul with post-ops
  (`* scale + mask`) and the softmax is oneDNN's 16-bit one (float32 inside): no
  float32 copies of the scores. The backward is one XLA kernel, `_softmax_backward`
  (float32 math, 16-bit in and out), and the two batch matmuls of q and k.
  """
  mask = tf.cast(attention_bias, q.dtype)                                    # [B, 1, 1, S]
  factor = tf.constant(scale, q.dtype)

  @custom_gradient
  def probs_of(q, k):
    probs = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * factor + mask, axis=-1)

    def grad(upstream):                                                      # [B, N, Q, S]
      dscores = _softmax_backward(probs, upstream, scale)                    # d(q.k)
      return tf.matmul(dscores, k), tf.matmul(dscores, q, transpose_a=True)  # [B, N, Q|S, D]
    return probs, grad

  return probs_of(q, k)


# --- the float32 sum of a shared weight's gradients ------------------------------------

@tf.function(jit_compile=True, autograph=False)
def _accumulate(total, *gradients):
  for gradient in gradients:
    total = _float32(gradient) if total is None else total + _float32(gradient)
  return total


def accumulate(total, *gradients):
  """`total + float32(gradient) + ...` in one pass (`total` None: from the first gradient).
  The running float32 sum of a shared weight's 16-bit gradients, one per application: as
  separate Cast and AddN ops, three passes over a weight-sized tensor per gradient; with
  k gradients in one call, 2k + 8 bytes per element instead of 10k."""
  return _accumulate(total, *gradients)


_enabled = [True]


def enabled() -> bool:
  """Whether the transformer block runs these kernels (else the reference ops)."""
  return _enabled[0]


class reference_ops:  # pylint: disable=invalid-name
  """`with fused.reference_ops():` traces the block with the reference ops instead
  (one op per step of the math, no XLA), e.g. for graphs that other runtimes read."""

  def __enter__(self):
    self._before = _enabled[0]
    _enabled[0] = False
    return self

  def __exit__(self, *exc):
    _enabled[0] = self._before
    return False
