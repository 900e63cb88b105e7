"""albert_tf.modeling.fused: each kernel against the reference ops, in value and gradient."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling import fused
from common import assert_close

RATE = 0.25


def _grads(function, args, upstream):
  """Value of `function(*args)` and the gradients of <value, upstream> for every arg."""
  with tf.GradientTape() as tape:
    tape.watch(args)
    value = function(*args)
    loss = tf.reduce_sum(tf.cast(value, tf.float64) * tf.cast(upstream, tf.float64))
  return value, tape.gradient(loss, args)


def _reference_add_norm(x, bias, residual, gamma, beta, keep, epsilon=1e-12):
  s = tf.cast(x, tf.float64) + tf.cast(bias, tf.float64)
  if keep is not None:
    s = tf.where(keep, s / (1 - RATE), tf.zeros([], tf.float64))
  s = s + tf.cast(residual, tf.float64)
  mean, var = tf.nn.moments(s, [-1], keepdims=True)
  return (s - mean) * tf.math.rsqrt(var + epsilon) * tf.cast(gamma, tf.float64) \
      + tf.cast(beta, tf.float64)


def _reference_bias_gelu(x, bias):
  return tf.nn.gelu(tf.cast(x, tf.float64) + tf.cast(bias, tf.float64), approximate=True)


def _cases(rng):
  """(fused function, float64 reference, float32 args, the index of x) for each kernel,
  with and without a dropout mask."""
  x, residual = rng.normal(scale=2, size=(2, 6, 16, 24))
  gamma, beta, hbias = rng.normal(size=(3, 24))
  inner = rng.normal(scale=3, size=(16, 40))
  ibias = rng.normal(size=40)
  f32 = lambda a: tf.constant(a, tf.float32)
  for keep_rows in (None, rng.random((16, 24)) >= RATE):
    keep = None if keep_rows is None else tf.constant(keep_rows)
    yield ("bias_dropout_add_norm",
           lambda a, b, r, g, e, k=keep: fused.bias_dropout_add_norm(a, b, r, g, e, 1e-12, k, RATE),
           lambda a, b, r, g, e, k=keep: _reference_add_norm(a, b, r, g, e, k),
           [f32(x), f32(hbias), f32(residual), f32(gamma), f32(beta)])
  yield "bias_gelu", fused.bias_gelu, _reference_bias_gelu, [f32(inner), f32(ibias)]


def test_each_kernel_equals_the_reference_ops_in_float32():
  """Value within 1e-6 and every argument's gradient within 1e-5 (of its scale) of the
  float64 reference ops, with and without dropout; masked positions get no gradient."""
  rng = np.random.default_rng(0)
  seen = set()
  for name, function, reference, args in _cases(rng):
    seen.add(name)
    upstream = rng.normal(size=function(*args).shape)
    got, got_grads = _grads(function, args, upstream)
    want, want_grads = _grads(reference, [tf.cast(a, tf.float64) for a in args], upstream)
    assert got.dtype == tf.float32
    assert_close(got.numpy(), want.numpy(), 1e-6, err_msg=name)
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
      scale = np.abs(w.numpy()).max()
      assert scale > 0.1, (name, i)   # gradients large enough to disagree
      np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5 * scale, err_msg=f"{name} {i}")
  assert seen == {"bias_dropout_add_norm", "bias_gelu"}


def test_each_kernel_in_bfloat16_is_as_close_to_float32_as_the_op_by_op_chain():
  """In bfloat16 (float32 math inside) each kernel's value and x-gradient are the
  float64 function's at the bfloat16 inputs to bfloat16 precision: one rounding of
  the value (2^-8 of the largest), two of the gradient (2^-7)."""
  rng = np.random.default_rng(1)
  for name, function, reference, args in _cases(rng):
    args16 = [tf.cast(a, tf.bfloat16) if i == 0 or name == "bias_gelu" or (
        name == "bias_dropout_add_norm" and i in (1, 2)) else a for i, a in enumerate(args)]
    upstream = rng.normal(size=args[0].shape)
    got, got_grads = _grads(function, args16, tf.cast(upstream, tf.bfloat16))
    assert got.dtype == tf.bfloat16, name
    want, want_grads = _grads(reference, [tf.cast(a, tf.float64) for a in args16],
                              tf.cast(tf.cast(upstream, tf.bfloat16), tf.float64))
    error = np.abs(tf.cast(got, tf.float64).numpy() - want.numpy()).max()
    grad_error = np.abs(tf.cast(got_grads[0], tf.float64).numpy() - want_grads[0].numpy()).max()
    scale = np.abs(want.numpy()).max()
    grad_scale = np.abs(want_grads[0].numpy()).max()
    assert error <= 2 ** -8 * scale, (name, error, scale)
    assert grad_error <= 2 ** -7 * grad_scale, (name, grad_error, grad_scale)


@pytest.mark.parametrize("kernel", ["bias_dropout_add_norm", "bias_gelu"])
def test_each_kernel_is_one_xla_function_each_way(kernel):
  """The gradient graph calls the kernel's forward and backward XLA functions (each
  compiled as one unit) and nothing else of the math."""
  rng = np.random.default_rng(2)
  name, function, _, args = next(c for c in _cases(rng) if c[0] == kernel)

  @tf.function
  def step(*a):
    return _grads(function, list(a), tf.ones_like(function(*a)))[1]

  graph = step.get_concrete_function(*args).graph
  called = {f.signature.name for f in graph.as_graph_def().library.function}
  forward = {"bias_dropout_add_norm": "_add_norm_forward",
             "bias_gelu": "_bias_gelu_forward"}[kernel]
  assert any(forward in f for f in called), called
  assert any(forward.replace("forward", "backward") in f for f in called), called
  top = {op.type for op in graph.get_operations()}
  assert not top & {"Tanh", "Mean", "Rsqrt", "Softmax", "BiasAdd"}, top
  for g, a in zip(step(*args), args):
    assert g.shape == a.shape


def test_reference_ops_switch_restores_itself():
  assert fused.enabled()
  with fused.reference_ops():
    assert not fused.enabled()
    with fused.reference_ops():
      assert not fused.enabled()
    assert not fused.enabled()
  assert fused.enabled()


def test_bfloat16_conversions_by_integer_ops_equal_tf_cast_bit_for_bit():
  """The kernels' float32 <-> bfloat16 conversions (integer ops, in XLA) give `tf.cast`'s
  bits for every finite value, infinity and rounding tie, and NaN stays NaN (also a NaN
  whose rounding would carry out of the exponent)."""
  rng = np.random.default_rng(0)
  bits = np.concatenate([
      rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),   # every kind
      (rng.integers(0, 2**16, 2_000, dtype=np.uint32) << 16) | 0x8000,      # ties
      np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x00000001, 0x80000000,
                0x7FFFFFFF, 0xFFFFFFFF, 0x7F800001, 0x7FC00000], np.uint32)])
  x = tf.bitcast(tf.constant(bits), tf.float32)
  nan = np.isnan(x.numpy())
  assert nan.sum() > 100 and (~nan).sum() > 100_000
  to16 = tf.function(jit_compile=True)(lambda v: fused._cast(v, tf.bfloat16))
  got, want = to16(x), tf.cast(x, tf.bfloat16)
  got_bits, want_bits = (tf.bitcast(t, tf.uint16).numpy() for t in (got, want))
  np.testing.assert_array_equal(got_bits[~nan], want_bits[~nan])
  assert np.isnan(tf.cast(got, tf.float32).numpy()[nan]).all()
  to32 = tf.function(jit_compile=True)(fused._float32)
  np.testing.assert_array_equal(tf.bitcast(to32(want), tf.uint32).numpy()[~nan],
                                tf.bitcast(tf.cast(want, tf.float32), tf.uint32).numpy()[~nan])


def test_accumulate_adds_in_float32():
  """`accumulate`: the running float32 sum of a shared weight's bfloat16 gradients."""
  rng = np.random.default_rng(1)
  total = tf.constant(rng.normal(size=(64, 48)), tf.float32)
  gradient = tf.constant(rng.normal(size=(64, 48)), tf.bfloat16)
  want = total.numpy() + tf.cast(gradient, tf.float32).numpy()
  np.testing.assert_array_equal(fused.accumulate(total, gradient).numpy(), want)
  first = fused.accumulate(None, gradient)
  assert first.dtype == tf.float32
  np.testing.assert_array_equal(first.numpy(), tf.cast(gradient, tf.float32).numpy())
  other = tf.constant(rng.normal(size=(64, 48)), tf.bfloat16)   # several at once, in order
  np.testing.assert_array_equal(fused.accumulate(total, gradient, other).numpy(),
                                want + tf.cast(other, tf.float32).numpy())
  both = tf.cast(gradient, tf.float32) + tf.cast(other, tf.float32)
  np.testing.assert_array_equal(fused.accumulate(None, gradient, other).numpy(), both.numpy())


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_projection_equals_matmul_plus_bias_in_value_and_gradients(dtype):
  """`projection` (a 4-D matmul with post-ops, its own gradient) against float64
  `x @ kernel + bias`, value and gradients of x, kernel and bias."""
  rng = np.random.default_rng(2)
  x, kernel, bias, upstream = (tf.constant(rng.normal(size=shape), dtype)
                               for shape in ((40, 16), (16, 24), (24,), (40, 24)))
  got, got_grads = _grads(lambda a, b, c: fused.projection(a, b, c, 0.5, b * 2.0),
                          [x, kernel, bias], upstream)
  f64 = lambda t: tf.cast(t, tf.float64)
  want, want_grads = _grads(lambda a, b, c: tf.matmul(f64(a), f64(b)) + f64(c),
                            [x, kernel, bias], upstream)
  tol = 1e-5 if dtype == tf.float32 else 2e-2
  assert got.dtype == dtype and got.shape == (40, 24)
  for a, b in zip([got] + got_grads, [want] + want_grads):
    b = b.numpy()
    np.testing.assert_allclose(tf.cast(a, tf.float64).numpy(), b, atol=tol * np.abs(b).max())


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_attention_probs_equal_the_softmax_of_masked_scores_in_value_and_gradients(dtype):
  """`attention_probs` (scores with post-ops, the 16-bit softmax, its own backward kernel)
  against float64 softmax(q k^T * 0.5 + mask), value and gradients of q and k, with
  padding: masked keys get probability 0 and pass no gradient."""
  rng = np.random.default_rng(4)
  q, k = (tf.constant(rng.normal(scale=2, size=shape), dtype)
          for shape in ((2, 3, 5, 8), (2, 3, 7, 8)))
  mask = np.zeros((2, 1, 1, 7), np.float32)
  mask[1, ..., 4:] = -10000.0   # the second example has 3 padding positions
  upstream = tf.constant(rng.normal(size=(2, 3, 5, 7)), dtype)
  got, got_grads = _grads(lambda a, b: fused.attention_probs(a, b, tf.constant(mask), 0.5),
                          [q, k], upstream)
  f64 = lambda t: tf.cast(t, tf.float64)
  want, want_grads = _grads(
      lambda a, b: tf.nn.softmax(tf.matmul(f64(a), f64(b), transpose_b=True) * 0.5 + mask),
      [q, k], upstream)
  tol = 1e-5 if dtype == tf.float32 else 2e-2
  assert got.dtype == dtype and got.shape == (2, 3, 5, 7)
  assert np.all(tf.cast(got, tf.float32).numpy()[1, ..., 4:] == 0)
  assert np.all(got_grads[1].numpy()[1, :, 4:] == 0)
  for a, b in zip([got] + got_grads, [want] + want_grads):
    b = b.numpy()
    assert np.abs(b).max() > 0.1   # large enough to disagree
    np.testing.assert_allclose(tf.cast(a, tf.float64).numpy(), b, atol=tol * np.abs(b).max())


def test_the_kernels_row_reductions_are_not_split_into_reduce_windows():
  """XLA's CPU compiler splits a single reduction over more than 32 elements into a
  reduce-window that fuses with nothing (its input written out in float32 and read
  again); the kernels' row sums (`fused._row_sums`) are variadic reductions, which it
  leaves whole. Checked in each kernel's optimized HLO at ALBERT-base widths."""
  bf16 = lambda *shape: tf.cast(tf.random.normal(shape), tf.bfloat16)
  rows, probs = bf16(16, 768), tf.nn.softmax(bf16(2, 12, 8, 128))
  gamma, stats = tf.ones([768]), tf.ones([16, 1])
  calls = {
      "_add_norm_forward": (rows, bf16(768), None, 0.0, rows, gamma, gamma, 1e-12),
      "_add_norm_backward": (rows, bf16(768), None, 0.0, rows, gamma, stats, stats, rows),
      "_softmax_backward": (probs, probs, 0.125),
  }
  for name, args in calls.items():
    hlo = getattr(fused, name).experimental_get_compiler_ir(*args)(stage="optimized_hlo")
    assert " reduce(" in hlo or "reduce_fusion" in hlo, name     # it still reduces rows
    assert "reduce-window" not in hlo, name
