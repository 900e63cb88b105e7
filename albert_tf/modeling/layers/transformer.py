"""One ALBERT attention+FFN sub-block (post-LayerNorm), the unit that is shared."""

import math

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling import activations
from albert_tf.modeling import fused
from albert_tf.modeling.recompute import recompute_grad
from albert_tf.modeling.layers.layer_norm import LayerNorm
from albert_tf.modeling.tracing import custom_gradient, plain_python

# Legend for shape comments: B batch, S sequence, H hidden, N heads, D = H / N
# head size, I intermediate size, T = B * S tokens.


@custom_gradient
def dense_of_known_value(inputs, kernel, bias, value):
  """`inputs @ kernel + bias` whose value is known already: returns `value` [R, O], with
  the dense layer's gradients for `inputs` [R, I], `kernel` [I, O] and `bias` [O]."""
  def grad(upstream):                                                        # [R, O]
    return (tf.matmul(upstream, kernel, transpose_b=True),                  # [R, I]
            tf.matmul(inputs, upstream, transpose_a=True),                  # [I, O]
            tf.reduce_sum(upstream, 0),                                     # [O]
            None)
  return tf.identity(value), grad


@custom_gradient
def matmul_of_known_value(inputs, kernel, value):
  """`inputs @ kernel` whose value is known already: returns `value` [R, O], with the
  matmul's gradients for `inputs` [R, I] and `kernel` [I, O]."""
  def grad(upstream):                                                        # [R, O]
    return (tf.matmul(upstream, kernel, transpose_b=True),                  # [R, I]
            tf.matmul(inputs, upstream, transpose_a=True),                  # [I, O]
            None)
  return tf.identity(value), grad


# Entries of `read_weights()` derived from others, which take no gradient of their own.
DERIVED_WEIGHTS = ("qkv_kernel_x2",)


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTransformerBlock(keras.__internal__.layers.BaseRandomLayer):
  """Self-attention + FFN with residuals and post-LayerNorm, as `attention_ffn_block`.

  Weights keep the original layout (2-D kernels [in, out]) and the names of
  `bert/encoder/transformer/group_G/inner_group_K/*`, so checkpoints map one
  to one without transposes. The three attention projections run as a single
  [H, 3H] matmul, the math runs on [B * S, H] matrices (so oneDNN fuses
  matmul + bias + activation), and the softmax is computed in float32.

  Called with `first_token=True` it also returns the first token's output
  [B, H] computed on its own (its attention row, output projection and FFN on
  B rows, with the same dropout masks as the full path), for the pooler: a
  model that uses only the pooled output lets the graph prune the full path's
  attention, projection and FFN, which a classifier otherwise pays for on all
  B * S tokens. (The Q, K, V projection stays one matmul over all tokens, so
  no split copy of its kernel exists: a TFLite file holds it once.)

  Dropout masks come from one seed per application, drawn from the block's own
  tf.random.Generator (checkpointed by the Trainer for exact resume). With
  `recompute`, training keeps only the block's inputs for the backward pass and
  computes the rest again there (`albert_tf.modeling.recompute`), with the same
  seed and so the same masks: the same gradients for much less activation memory.

  Args:
    hidden_size: H.
    num_attention_heads: N; H must be divisible by N.
    intermediate_size: I, FFN inner width.
    hidden_act: activation name of the FFN ("gelu" = tanh approximation).
    hidden_dropout_prob: dropout on the attention and FFN outputs.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    initializer_range: stddev of the truncated-normal kernel initializer.
    recompute: recompute the block in the backward pass instead of keeping its
      activations.
  """

  def __init__(self, hidden_size, num_attention_heads, intermediate_size,
               hidden_act="gelu", hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0, initializer_range=0.02, recompute=False,
               layer_norm_eps=1e-12, **kwargs):
    kwargs["rng_type"] = "stateful"   # get_config records it; it is always this
    super().__init__(**kwargs)
    self.recompute = recompute
    if hidden_size % num_attention_heads:
      raise ValueError(f"hidden_size ({hidden_size}) is not divisible by "
                       f"num_attention_heads ({num_attention_heads})")
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.initializer_range = initializer_range
    self.layer_norm_eps = layer_norm_eps
    self.head_size = hidden_size // num_attention_heads

    # The Dense layers hold the weights (names, initializers, shapes); the math
    # in `call` uses them through `read_weights`.
    def dense(units, name):
      return keras.layers.Dense(
          units, name=name, dtype=self.dtype_policy,
          kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    self.query = dense(hidden_size, "query")
    self.key = dense(hidden_size, "key")
    self.value = dense(hidden_size, "value")
    self.attention_output = dense(hidden_size, "attention_output")
    self.attention_layer_norm = LayerNorm(
        epsilon=layer_norm_eps, name="LayerNorm", dtype=self.dtype_policy)
    self._activation = activations.get(hidden_act)
    self.intermediate = dense(intermediate_size, "intermediate")
    self.output_dense = dense(hidden_size, "output")
    self.output_layer_norm = LayerNorm(
        epsilon=layer_norm_eps, name="LayerNorm_1", dtype=self.dtype_policy)

  def build(self, input_shape=None):
    h, i = self.hidden_size, self.intermediate_size
    for layer in (self.query, self.key, self.value, self.attention_output, self.intermediate):
      layer.build([None, h])
    self.output_dense.build([None, i])
    self.attention_layer_norm.build([None, h])
    self.output_layer_norm.build([None, h])
    super().build(input_shape)  # and the generator

  def uses_post_op_projection(self) -> bool:
    """Whether the Q, K, V projection is `fused.projection` (a matmul with post-ops): under
    bfloat16 compute with the fused kernels on (`fused.enabled()`). (float16 keeps the
    float32 softmax: TensorFlow's CPU softmax computes float16 in float16.)"""
    return fused.enabled() and tf.as_dtype(self.compute_dtype) == tf.bfloat16

  def read_weights(self, dtype=None, training=False):
    """This block's weights as compute-dtype tensors, ready for `call(weights=...)`.

    With cross-layer sharing the same block runs L times per forward pass;
    reading (and under mixed precision casting) its weights once and passing
    them to every application saves L - 1 reads, casts and concatenations.
    The 1/sqrt(D) logit scale is folded into the query projection (exact for
    D = 64, a power of two), and Q, K, V are concatenated for one matmul.
    `dtype=tf.float32` reads the float32 variables themselves under mixed
    precision (the encoder's master copies). Where `uses_post_op_projection()`, q at
    twice its scale and also `qkv_kernel_x2`, twice the Q, K, V kernel, a value without
    gradient (one of `DERIVED_WEIGHTS`; in inference the only kernel).
    """
    if dtype == tf.float32:   # the variable under Keras' AutoCastVariable, not its cast
      read = lambda v: tf.convert_to_tensor(getattr(v, "_variable", v))
    else:
      read = tf.convert_to_tensor
    scale = 1.0 / math.sqrt(float(self.head_size))
    # With post-ops, q at twice its scale: the scores' `* 0.5 + mask` in `_attend` then
    # give scale q.k + mask. Factors of two keep the values.
    post_op = self.uses_post_op_projection()
    inference_post_op = post_op and not training
    q_scale = 2.0 * scale if post_op else scale
    qkv = dict(qkv_bias=tf.concat([read(self.query.bias) * q_scale, read(self.key.bias),
                                   read(self.value.bias)], 0))
    if inference_post_op:   # no gradient: only the kernel of the forward
      qkv["qkv_kernel_x2"] = tf.concat([read(self.query.kernel) * (2.0 * q_scale),
                                        read(self.key.kernel) * 2.0,
                                        read(self.value.kernel) * 2.0], 1)
    else:
      qkv["qkv_kernel"] = tf.concat([read(self.query.kernel) * q_scale, read(self.key.kernel),
                                     read(self.value.kernel)], 1)
      if post_op:   # for `fused.projection`'s forward, without gradient
        qkv["qkv_kernel_x2"] = tf.stop_gradient(qkv["qkv_kernel"] * 2.0)
    return dict(
        **qkv,
        attention_kernel=read(self.attention_output.kernel),
        attention_bias=read(self.attention_output.bias),
        intermediate_kernel=read(self.intermediate.kernel),
        intermediate_bias=read(self.intermediate.bias),
        output_kernel=read(self.output_dense.kernel),
        output_bias=read(self.output_dense.bias))

  @plain_python
  def call(self, inputs, attention_bias, training=None, weights=None, first_token=False):
    """Applies the block.

    Args:
      inputs: [B, S, H] hidden states.
      attention_bias: [B, 1, 1, S] float32, 0 where attending is allowed and
        -10000 at padding (the original's additive mask).
      training: enables dropout (and recomputation, with `recompute`).
      weights: the result of `read_weights()`, to reuse across applications;
        read here when not given.
      first_token: also return the first token's output computed on its own.

    Returns:
      [B, S, H] hidden states; with `first_token`, also [B, H], the first
      token's row of them from a path that attends with the first query only
      and runs the output projection and FFN on that row only. A caller that
      uses only the second output (a pooled classifier) leaves the first
      unused, and a tf.function prunes it: the last block then costs its
      Q, K, V projection and the first token's attention only.
    """
    w = weights if weights is not None else self.read_weights(training=bool(training))
    seed = None
    if training and (self.hidden_dropout_prob or self.attention_probs_dropout_prob):
      seed = self._random_generator.make_seed_for_stateless_op()              # [2]
    # The application with `first_token` (the last) keeps its activations: its backward
    # runs first, so they are gone before any replay and the peak stays one block's;
    # and a pooled classifier's graph can still prune its unused full path, which a
    # replay would compute twice more (forward again, then backward on zeros).
    if not (training and self.recompute) or first_token:
      return self._apply(inputs, attention_bias, w, seed, first_token, bool(training))
    keys = sorted(w)
    # The seed is captured, not an argument: the recomputation reuses its value. The
    # FFN output projection's result is kept: the replay takes it instead of the
    # [T, I] x [I, H] matmul (a third of the block's matmuls) for one [T, H] tensor.
    def block(x, bias, *values, kept=None):
      return self._apply(x, bias, dict(zip(keys, values)), seed, training=True, ffn=kept,
                         return_ffn=True)
    return recompute_grad(block)(inputs, attention_bias, *[w[k] for k in keys])

  def _keep_masks(self, seed, batch, seq, dtype):
    """The three dropout keep masks of one application (None where there is no dropout).

    Each is the `index`-th draw of `seed` over the whole [B, N, S, S] attention
    probabilities or [T, H] outputs, as `tf.nn.experimental.stateless_dropout`
    draws it, so the first-token path can take its rows of the same masks.
    """
    n, h = self.num_attention_heads, self.hidden_size
    shapes = ([batch, n, seq, seq], [batch * seq, h], [batch * seq, h])
    rates = (self.attention_probs_dropout_prob, self.hidden_dropout_prob, self.hidden_dropout_prob)
    masks = []
    for index, (shape, rate) in enumerate(zip(shapes, rates)):
      if seed is None or not rate:
        masks.append(None)
        continue
      uniform = tf.random.stateless_uniform(
          shape, tf.random.experimental.stateless_fold_in(seed, index), dtype=dtype)
      masks.append(uniform >= rate)
    return masks

  @staticmethod
  def _dropout(x, keep, rate):
    """x / (1 - rate) where `keep`, else 0 (the arithmetic of stateless_dropout)."""
    if keep is None:
      return x
    return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros([], x.dtype))

  def _attend(self, q, k, v, attention_bias, keep, post_op=False):
    """Scaled dot-product attention: q [B, N, Q, D], k, v [B, N, S, D] -> [B, N, Q, D].

    With `post_op` (bfloat16, q at twice its scale), `fused.attention_probs`: the scores
    are `q.k * 0.5 + mask` in the compute dtype, one oneDNN batch matmul with post-ops,
    the softmax is oneDNN's 16-bit one (float32 inside), and its backward one XLA kernel:
    no float32 copies of the [B, N, Q, S] scores either way."""
    if post_op:
      probs = fused.attention_probs(q, k, attention_bias, 0.5)               # [B, N, Q, S]
      probs = self._dropout(probs, keep, self.attention_probs_dropout_prob)
      return tf.matmul(probs, v)                                             # [B, N, Q, D]
    scores = tf.matmul(q, k, transpose_b=True)                               # [B, N, Q, S]
    scores = tf.cast(scores, tf.float32) + attention_bias
    probs = tf.cast(tf.nn.softmax(scores, axis=-1), q.dtype)
    probs = self._dropout(probs, keep, self.attention_probs_dropout_prob)
    return tf.matmul(probs, v)                                               # [B, N, Q, D]

  def _project_and_feed_forward(self, context, x, w, keeps, training=False, ffn=None):
    """Attention output projection, FFN, residuals and LayerNorms on rows: [R, H] -> [R, H],
    and the FFN output projection's [R, H] result (`ffn` when given: its known value)."""
    if fused.enabled() and context.dtype != tf.float32:
      return self._project_and_feed_forward_fused(context, x, w, keeps, training, ffn)
    attention = tf.nn.bias_add(tf.matmul(context, w["attention_kernel"]), w["attention_bias"])
    attention = self._dropout(attention, keeps[0], self.hidden_dropout_prob)
    attention = self.attention_layer_norm(attention + x)                     # [R, H]
    inner = tf.nn.bias_add(tf.matmul(attention, w["intermediate_kernel"]), w["intermediate_bias"])
    # In training: one fused kernel each way.
    activation = activations.for_training(self._activation) if training else self._activation
    inner = activation(inner)                                                # [R, I]
    if ffn is None:
      ffn = tf.nn.bias_add(tf.matmul(inner, w["output_kernel"]), w["output_bias"])  # [R, H]
    else:
      ffn = dense_of_known_value(inner, w["output_kernel"], w["output_bias"], ffn)  # [R, H]
    dropped = self._dropout(ffn, keeps[1], self.hidden_dropout_prob)
    return self.output_layer_norm(dropped + attention), ffn                  # [R, H] each

  def _project_and_feed_forward_fused(self, context, x, w, keeps, training=False, ffn=None):
    """`_project_and_feed_forward` with `albert_tf.modeling.fused` kernels: each
    projection's bias, dropout, residual and LayerNorm in one (after a plain matmul,
    which oneDNN runs faster than one with a bias epilogue), and the FFN's bias + GELU
    (oneDNN's matmul + bias + GELU is an inner product, slower than its plain matmul and
    the XLA kernel after it). `ffn` is the FFN output projection's product without its
    bias."""
    norms = (self.attention_layer_norm, self.output_layer_norm)
    gamma, beta = [[tf.convert_to_tensor(getattr(n, a), tf.float32) for n in norms]
                   for a in ("gamma", "beta")]
    rate = self.hidden_dropout_prob
    attention = tf.matmul(context, w["attention_kernel"])                    # [R, H]
    attention = fused.bias_dropout_add_norm(
        attention, w["attention_bias"], x, gamma[0], beta[0], norms[0].epsilon, keeps[0], rate)
    inner = tf.matmul(attention, w["intermediate_kernel"])                   # [R, I]
    if self._activation is activations.gelu:
      inner = fused.bias_gelu(inner, w["intermediate_bias"])
    else:
      inner = self._activation(tf.nn.bias_add(inner, w["intermediate_bias"]))
    if ffn is None:
      ffn = tf.matmul(inner, w["output_kernel"])                             # [R, H]
    else:
      ffn = matmul_of_known_value(inner, w["output_kernel"], ffn)            # [R, H]
    out = fused.bias_dropout_add_norm(
        ffn, w["output_bias"], attention, gamma[1], beta[1], norms[1].epsilon, keeps[1], rate)
    return out, ffn

  def _apply(self, inputs, attention_bias, w, seed, first_token=False, training=False, ffn=None,
             return_ffn=False):
    """The block's math: [B, S, H] -> [B, S, H] (and [B, H] for the first token).

    `return_ffn` also returns the FFN output projection's [T, H] result, and `ffn`
    gives it (so the replay of a recomputed block skips that matmul)."""
    batch, seq = tf.shape(inputs)[0], tf.shape(inputs)[1]
    n, d, h = self.num_attention_heads, self.head_size, self.hidden_size
    x = tf.reshape(inputs, [-1, h])                                          # [T, H]
    keeps = self._keep_masks(seed, batch, seq, x.dtype)

    if "qkv_kernel_x2" in w:
      qkv = fused.projection(x, w.get("qkv_kernel"), w["qkv_bias"], 0.5,
                             w["qkv_kernel_x2"])                            # [T, 3H]
    else:
      qkv = tf.nn.bias_add(tf.matmul(x, w["qkv_kernel"]), w["qkv_bias"])     # [T, 3H]
    qkv = tf.transpose(tf.reshape(qkv, [batch, seq, 3, n, d]), [2, 0, 3, 1, 4])  # [3, B, N, S, D]
    # unstack, not qkv[i]: the gradient of an index is a zero-filled [3, B, N, S, D] each.
    q, k, v = tf.unstack(qkv)                                                # [B, N, S, D]
    post_op = "qkv_kernel_x2" in w   # q at twice its scale
    context = self._attend(q, k, v, attention_bias, keeps[0], post_op)       # [B, N, S, D]
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, h])       # [T, H]
    out, ffn = self._project_and_feed_forward(context, x, w, keeps[1:], training, ffn)
    out = tf.reshape(out, [batch, seq, h])                                   # [B, S, H]
    if return_ffn:
      return out, ffn
    if not first_token:
      return out

    # The same math for the first row only, with the first rows of the same masks.
    first_row = lambda keep: None if keep is None else tf.reshape(keep, [batch, seq, h])[:, 0]
    x0 = inputs[:, 0]                                                        # [B, H]
    q0 = q[:, :, :1]                                                         # [B, N, 1, D]
    keep0 = None if keeps[0] is None else keeps[0][:, :, :1]                 # [B, N, 1, S]
    context0 = tf.reshape(self._attend(q0, k, v, attention_bias, keep0, post_op), [-1, h])  # [B, H]
    first, _ = self._project_and_feed_forward(
        context0, x0, w, [first_row(keep) for keep in keeps[1:]], training)  # [B, H]
    return out, first

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                  hidden_dropout_prob=self.hidden_dropout_prob,
                  attention_probs_dropout_prob=self.attention_probs_dropout_prob,
                  initializer_range=self.initializer_range, recompute=self.recompute,
                  layer_norm_eps=self.layer_norm_eps)
    return config
