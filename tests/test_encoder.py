import contextlib
import json
import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer
from albert_tf.modeling import activations, fused, heads, layers, recompute
from albert_tf.modeling import encoder as encoder_module
from common import GROUPED, SQUARE, TINY, assert_close, encoder_inputs, random_inputs

# Grouped sharing with inner groups at 2 layers (4 sub-blocks): the fused kernels are per
# block, and each block more is compiled and traced again in every dtype these tests run.
SMALL_GROUPED = dict(GROUPED, num_hidden_layers=2)


@pytest.mark.parametrize("preset,count", [
    ("base", 11_683_584), ("large", 17_683_968), ("xlarge", 58_724_864),
    ("xxlarge", 222_595_584)])
def test_released_parameter_counts(preset, count):
  # Built in a graph: the same variables, none of xxlarge's 0.9 GB initialized (9 s).
  with tf.Graph().as_default():
    assert AlbertEncoder(preset).count_params() == count


def test_outputs_and_sharing_structure():
  encoder = AlbertEncoder(GROUPED)
  inputs = random_inputs(GROUPED)
  out = encoder(encoder_inputs(inputs))
  assert out["sequence_output"].shape == (3, 11, 32)
  assert out["pooled_output"].shape == (3, 32)
  # One output per attention+FFN application: L * inner_group_num.
  assert len(out["encoder_outputs"]) == 3 * 2
  np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
  # G * inner distinct blocks, and no more weights than that.
  blocks = [b for group in encoder.groups for b in group]
  assert len(blocks) == 4 and len({id(b) for b in blocks}) == 4
  assert encoder.embedding_projection is not None
  assert AlbertEncoder(SQUARE).embedding_projection is None
  assert encoder.embedding_table.shape == (97, 8)


def test_padding_never_influences_real_tokens():
  encoder = AlbertEncoder(GROUPED)
  inputs = encoder_inputs(random_inputs(GROUPED))
  mask = inputs["input_mask"]
  assert (mask == 0).any()
  changed = dict(inputs)
  rng = np.random.default_rng(5)
  changed["input_word_ids"] = np.where(mask == 1, inputs["input_word_ids"],
                                       rng.integers(0, 97, mask.shape)).astype(np.int32)
  changed["input_type_ids"] = np.where(mask == 1, inputs["input_type_ids"], 1).astype(np.int32)
  a, b = encoder(inputs), encoder(changed)
  real = mask.astype(bool)
  diff = np.abs(a["sequence_output"].numpy() - b["sequence_output"].numpy())
  assert diff[real].max() < 1e-6
  assert diff[~real].max() > 1e-3  # the padded positions did change, so the test can fail
  assert_close(a["pooled_output"], b["pooled_output"], 1e-6)


def _copy_and_compare(model, rebuilt, inputs):
  rebuilt.set_weights(model.get_weights())
  a, b = model(inputs), rebuilt(inputs)
  for key in ("sequence_output", "pooled_output", "sop_logits", "mlm_logits"):
    if key in a:
      np.testing.assert_array_equal(a[key], b[key])


def test_model_config_round_trip():
  inputs = random_inputs(GROUPED)
  encoder = AlbertEncoder(GROUPED, name="enc")
  rebuilt = AlbertEncoder.from_config(encoder.get_config())
  assert rebuilt.config == encoder.config and rebuilt.name == "enc"
  _copy_and_compare(encoder, rebuilt, encoder_inputs(inputs))
  pretrainer = AlbertPretrainer(GROUPED)
  rebuilt = keras.layers.deserialize(json.loads(json.dumps(keras.layers.serialize(pretrainer))))
  assert isinstance(rebuilt, AlbertPretrainer) and rebuilt.config == pretrainer.config
  _copy_and_compare(pretrainer, rebuilt, inputs)


@pytest.mark.parametrize("layer", [
    lambda: layers.AlbertEmbeddings(97, 8, 24, 2, 0.1, 0.02),
    lambda: layers.AlbertTransformerBlock(32, 4, 48, "relu", 0.1, 0.05, 0.03),
    lambda: heads.AlbertMaskedLMHead(97, 8, "swish", 0.03),
    lambda: heads.AlbertSentenceOrderHead(3, 0.04),
    lambda: layers.LayerNorm(epsilon=1e-12, name="LayerNorm"),
])
def test_layer_config_round_trip(layer):
  layer = layer()
  config = layer.get_config()
  again = type(layer).from_config(config)
  assert again.get_config() == config
  restored = keras.layers.deserialize(keras.layers.serialize(layer))
  assert type(restored) is type(layer) and restored.get_config() == config


@pytest.mark.parametrize("shape", [(6, 16), (2, 3, 16)])
def test_layer_norm_matches_keras_in_values_and_gradients(shape):
  """The hand-written gradient against autodiff of Keras' LayerNormalization."""
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(2.0, 3.0, shape), tf.float32)
  dy = tf.constant(rng.normal(size=shape), tf.float32)
  ours, keras_ln = layers.LayerNorm(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
  ours.build(shape), keras_ln.build(shape)
  weights = [rng.normal(1.0, 0.5, 16), rng.normal(0.0, 0.5, 16)]
  for layer in (ours, keras_ln):
    layer.set_weights(weights)

  def value_and_grads(layer):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x)
      loss = tf.reduce_sum(y * dy)
    return [y] + tape.gradient(loss, [x, layer.gamma, layer.beta])

  for got, want, name in zip(value_and_grads(ours), value_and_grads(keras_ln),
                             ["y", "dx", "dgamma", "dbeta"]):
    assert_close(got.numpy(), want.numpy(), 1e-5, err_msg=name)
  # bfloat16 in, bfloat16 out; the statistics stay in float32.
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  mixed = layers.LayerNorm(epsilon=1e-12)
  mixed.build(shape)
  mixed.set_weights(ours.get_weights())
  y = mixed(tf.cast(x, tf.bfloat16))
  assert y.dtype == tf.bfloat16 and mixed.gamma.dtype == tf.float32
  assert_close(tf.cast(y, tf.float32).numpy(), ours(x).numpy(), 0.05)


def test_pretrainer_outputs():
  model = AlbertPretrainer(TINY)
  out = model(random_inputs(TINY, num_masked=5))
  assert out["mlm_logits"].shape == (3, 5, 97) and out["mlm_logits"].dtype == tf.float32
  assert out["sop_logits"].shape == (3, 2)
  no_positions = model(encoder_inputs(random_inputs(TINY)))
  assert "mlm_logits" not in no_positions and "sop_logits" in no_positions
  # The MLM output is tied to the word embeddings: no second [V, E] table.
  tables = [w for w in model.weights if w.shape == (97, 8)]
  assert len(tables) == 1


def test_keras_and_autograph_trace_every_albert_tf_layer_as_written(monkeypatch):
  """Traced in a tf.function with AutoGraph on (as model.fit, functional models and exports
  trace them), no albert_tf code is converted (`tracing.plain_python`), while a user's
  function around it still is: the spy sees conversions."""
  from tensorflow.python.autograph.impl import api  # pylint: disable=import-outside-toplevel
  from albert_tf import (AlbertClassifier, AlbertMultipleChoice,  # pylint: disable=import-outside-toplevel
                         AlbertQuestionAnswerer, AlbertTokenClassifier)
  converted, convert = [], api._convert_actual  # pylint: disable=protected-access

  def spy(entity, program_ctx):
    converted.append(f"{getattr(entity, '__module__', '')}.{entity.__qualname__}")
    return convert(entity, program_ctx)

  monkeypatch.setattr(api, "_convert_actual", spy)
  x = random_inputs(TINY)
  p_mask = np.zeros_like(x["input_word_ids"])
  models = [(AlbertPretrainer(TINY), x), (AlbertClassifier(TINY, num_classes=2), x),
            (AlbertTokenClassifier(TINY, num_labels=3), x),
            (AlbertQuestionAnswerer(TINY, version_2_with_negative=True), dict(x, p_mask=p_mask)),
            (AlbertMultipleChoice(TINY), {k: v[None] for k, v in encoder_inputs(x).items()})]
  for model, inputs in models:
    @tf.function   # AutoGraph on: the user's code, with a branch on a tensor
    def user_step(inputs, model=model):
      out = tf.nest.flatten(model(inputs, training=True))
      if tf.reduce_sum(out[0]) > 0:
        return out[0] + 1.0
      return out[0]
    user_step(inputs)
  assert [c for c in converted if c.endswith("user_step")]
  assert not [c for c in converted if c.startswith("albert_tf")], converted


def test_missing_inputs_are_a_clear_error():
  with pytest.raises(ValueError, match="input_word_ids"):
    AlbertEncoder(TINY)({"ids": np.zeros((1, 3), np.int32)})


@pytest.mark.parametrize("policy,dtype", [("mixed_bfloat16", tf.bfloat16),
                                          ("mixed_float16", tf.float16)])
def test_mixed_precision(policy, dtype):
  inputs = random_inputs(GROUPED)
  reference = AlbertPretrainer(GROUPED)
  expected = reference(inputs)
  keras.mixed_precision.set_global_policy(policy)
  model = AlbertPretrainer(GROUPED)
  model.set_weights(reference.get_weights())
  assert all(w.dtype == tf.float32 for w in model.weights)
  out = model(inputs, training=True)
  out = model(inputs)
  assert out["sequence_output"].dtype == dtype
  assert out["mlm_logits"].dtype == tf.float32 and out["sop_logits"].dtype == tf.float32
  assert model.encoder.groups[0][0].attention_layer_norm.gamma.dtype == tf.float32
  tol = 0.1 if dtype == tf.bfloat16 else 0.02
  for key in ("sequence_output", "mlm_logits", "sop_logits"):
    got = tf.cast(out[key], tf.float32).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected[key].numpy(), atol=tol * max(1, np.abs(got).max()))
  # A training step in mixed precision produces finite float32 gradients.
  with tf.GradientTape() as tape:
    out = model(inputs, training=True)
    loss = tf.reduce_mean(out["mlm_logits"] ** 2) + tf.reduce_mean(out["sop_logits"] ** 2)
  grads = tape.gradient(loss, model.trainable_weights)
  assert all(g is not None and g.dtype == tf.float32 and np.isfinite(tf.convert_to_tensor(g)).all()
             for g in grads)


def test_xla_matches_eager():
  # XLA's compile time grows with every block; what is compared is each op's lowering.
  cfg = dict(SMALL_GROUPED, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  model = AlbertPretrainer(cfg)
  inputs = {k: tf.constant(v) for k, v in random_inputs(cfg).items()}
  eager = model(inputs, training=False)
  xla = tf.function(lambda x: model(x, training=False), jit_compile=True)(inputs)
  for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
    assert_close(xla[key], eager[key], 1e-5)

  @tf.function(jit_compile=True)
  def grad_norm(x):
    with tf.GradientTape() as tape:
      out = model(x, training=True)
      loss = tf.reduce_mean(out["mlm_logits"] ** 2) + tf.reduce_mean(out["sop_logits"] ** 2)
    return tf.linalg.global_norm(tape.gradient(loss, model.trainable_weights))

  assert np.isfinite(grad_norm(inputs).numpy())


def test_builds_and_runs_under_mirrored_strategy():
  devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
  assert len(devices) == 2
  strategy = tf.distribute.MirroredStrategy(devices)
  inputs = random_inputs(TINY, batch=4)
  reference = AlbertPretrainer(TINY)
  with strategy.scope():
    model = AlbertPretrainer(TINY)
  model.set_weights(reference.get_weights())
  assert isinstance(model.encoder.embedding_table, tf.distribute.DistributedValues) or \
      "Mirrored" in type(model.encoder.embedding_table).__name__
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensor_slices(inputs).batch(4))
  batch = next(iter(dataset))
  per_replica = strategy.run(tf.function(lambda x: model(x)["sop_logits"]), args=(batch,))
  got = np.concatenate([t.numpy() for t in strategy.experimental_local_results(per_replica)])
  assert_close(got, reference(inputs)["sop_logits"], 1e-5)


def test_sequence_lengths_outside_the_positions_are_named_and_int64_ids_work():
  encoder = AlbertEncoder(AlbertConfig.from_dict(TINY))
  x = {k: v for k, v in random_inputs(TINY).items() if k != "masked_lm_positions"}
  for seq in (TINY["max_position_embeddings"] + 1, 0):
    with pytest.raises(ValueError, match=rf"sequence length {seq}: the model takes 1 to "
                                         r"max_position_embeddings=24 positions"):
      encoder({k: np.zeros((2, seq), np.int32) for k in x})
  want = encoder(x)["sequence_output"].numpy()
  got = encoder({k: v.astype(np.int64) for k, v in x.items()})["sequence_output"].numpy()
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_recompute_gives_the_same_loss_and_gradients(dtype):
  """AlbertEncoder(recompute=True): grouped sharing with inner groups, dropout on everywhere;
  the recomputed blocks draw the forward pass's masks, so every gradient is the same."""
  cfg = dict(SMALL_GROUPED, hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
  keras.mixed_precision.set_global_policy("mixed_bfloat16" if dtype == "bfloat16" else "float32")
  inputs = encoder_inputs(random_inputs(cfg, batch=3, seq=11))
  target = tf.random.stateless_normal([3, 11, cfg["hidden_size"]], seed=[1, 2])
  results = []
  for recompute in (False, True):
    keras.utils.set_random_seed(0)
    encoder = AlbertEncoder(AlbertConfig.from_dict(cfg), recompute=recompute)
    assert encoder.get_config()["recompute"] == recompute

    @tf.function
    def step(x):
      with tf.GradientTape() as tape:
        out = encoder(x, training=True)
        loss = tf.reduce_mean(tf.cast(out["sequence_output"], tf.float32) * target) \
            + tf.reduce_mean(tf.cast(out["pooled_output"], tf.float32))
      grads = tape.gradient(loss, encoder.trainable_variables)
      return loss, [tf.convert_to_tensor(g) for g in grads]

    loss, grads = step(inputs)
    graph = step.get_concrete_function(inputs).graph.as_graph_def()
    matmuls = sum(node.op in ("MatMul", "BatchMatMulV2") for nodes in
                  [graph.node] + [f.node_def for f in graph.library.function] for node in nodes)
    results.append((float(loss), [g.numpy().astype(np.float32) for g in grads], matmuls))
  (loss_kept, kept, matmuls_kept), (loss_recomputed, recomputed, matmuls_recomputed) = results
  assert matmuls_recomputed > matmuls_kept  # the blocks' forward math again, in the backward
  tolerance = 1e-5 if dtype == "float32" else 1e-2   # bfloat16: 8 bits of mantissa
  assert loss_kept == pytest.approx(loss_recomputed, rel=tolerance)
  assert len(kept) == len(recomputed) == len(encoder.trainable_variables)
  atol = tolerance
  for variable, a, b in zip(encoder.trainable_variables, kept, recomputed):
    assert_close(b, a, atol, err_msg=variable.name)
  assert max(np.abs(a).max() for a in kept) > 10 * atol  # gradients that can differ


def test_recompute_grad_replays_the_block_without_copying_its_weights():
  """recompute.recompute_grad: the gradients of plain autodiff (for the tensor arguments
  and a variable read inside), the block run again in the backward pass but for the
  matmul whose result it keeps, and no weight-shaped copy there (tf.recompute_grad adds
  a zero to every argument)."""
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=(6, 4)), tf.float32)
  kernel = tf.constant(rng.normal(size=(4, 5)), tf.float32)   # the only [4, 5] tensors
  bias = tf.constant(rng.normal(size=(5,)), tf.float32)
  scale = tf.Variable(rng.normal(size=(5,)), dtype=tf.float32)

  def block(h, w, b, kept=None):                                              # [6, 5] each
    if kept is None:
      dense = tf.nn.bias_add(tf.matmul(h, w), b)
    else:
      dense = layers.transformer.dense_of_known_value(h, w, b, kept)
    return tf.math.tanh(dense) * scale, dense

  def gradients(wrap):
    @tf.function
    def step(x, kernel, bias):
      with tf.GradientTape() as tape:
        tape.watch([x, kernel, bias])
        loss = tf.reduce_sum(wrap(block)(x, kernel, bias) ** 2)
      return tape.gradient(loss, [x, kernel, bias, scale])

    ops = step.get_concrete_function(x, kernel, bias).graph.get_operations()
    weight_copies = [op.name for op in ops
                     if op.type in ("Add", "AddV2") and op.outputs[0].shape == kernel.shape]
    counts = {kind: sum(op.type == kind for op in ops) for kind in ("Tanh", "MatMul")}
    return [g.numpy() for g in step(x, kernel, bias)], weight_copies, counts

  want, _, kept = gradients(lambda f: lambda *a: f(*a)[0])
  got, copies, recomputed = gradients(recompute.recompute_grad)
  assert recomputed["Tanh"] == kept["Tanh"] + 1                  # run again in the backward,
  assert recomputed["MatMul"] == kept["MatMul"]                  # but not its kept matmul
  assert not copies
  for a, b in zip(got, want):
    assert_close(a, b, 1e-6)
  assert min(np.abs(g).max() for g in want) > 1e-2
  _, copies, _ = gradients(lambda f: tf.recompute_grad(lambda *a: f(*a)[0]))
  assert copies          # the check sees the copies where they are


def _optimized_graph_nodes(concrete_function):
  """Every node of `concrete_function` after Grappler's default rewrites (as at run time)."""
  from tensorflow.core.protobuf import config_pb2  # pylint: disable=g-import-not-at-top
  from tensorflow.python.grappler import tf_optimizer  # pylint: disable=g-import-not-at-top
  graph = concrete_function.graph
  meta_graph = tf.compat.v1.train.export_meta_graph(graph_def=graph.as_graph_def(), graph=graph)
  fetch = meta_graph.collection_def["train_op"].node_list.value
  for tensor in concrete_function.outputs:
    fetch.append(tensor.op.name)
  optimized = tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), meta_graph)
  return [list(optimized.node)] + [list(f.node_def) for f in optimized.library.function]


def test_shared_weight_gradients_are_summed_as_they_come(monkeypatch):
  """Six applications of one block: the optimized gradient graph never adds all six kernel
  (or bias) gradients in one AddN, which would hold them all at once (9.6 GB for
  ALBERT-xxlarge); and the gradients are those of the plain graph."""
  # Training's fused GELU differs from inference's in the last bits; this test is about
  # the sums, so both modes run the same activation.
  monkeypatch.setattr(activations, "for_training", lambda activation: activation)
  cfg = dict(TINY, num_hidden_layers=6, num_hidden_groups=1, inner_group_num=1,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  encoder = AlbertEncoder(AlbertConfig.from_dict(cfg))
  inputs = encoder_inputs(random_inputs(cfg, batch=2, seq=9))

  @tf.function
  def gradients(x, training):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(encoder(x, training=training)["pooled_output"])
    return [tf.convert_to_tensor(g) for g in tape.gradient(loss, encoder.trainable_variables)]

  # training=False has no dropout here and no in-order sums: the plain graph's gradients.
  for a, b, variable in zip(gradients(inputs, True), gradients(inputs, False),
                            encoder.trainable_variables):
    assert_close(a.numpy(), b.numpy(), 1e-6, err_msg=variable.name)

  for training in (True, False):
    # AddN nodes summing all six applications' matmul/bias gradients.
    wide = []
    for nodes in _optimized_graph_nodes(gradients.get_concrete_function(inputs, training)):
      ops = {node.name: node.op for node in nodes}
      for node in nodes:
        sources = [ops.get(name.lstrip("^").split(":")[0], "") for name in node.input]
        if node.op == "AddN" and sum("MatMul" in s or s == "BiasAddGrad" for s in sources) >= 6:
          wide.append(node.name)
    if training:
      assert not wide, wide
    else:
      assert len(wide) >= 8, wide   # the check sees them where they are: 4 kernels, 4 biases


def test_pooled_output_comes_from_a_first_token_path_with_the_same_values_and_gradients():
  """The last block computes the first token on its own for the pooler, with the rows of
  the same dropout masks: pooled_output and its gradients equal those through
  sequence_output[:, 0] (grouped sharing, inner groups, dropout 0.2 everywhere)."""
  cfg = dict(GROUPED, hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
  encoder = AlbertEncoder(AlbertConfig.from_dict(cfg))
  inputs = encoder_inputs(random_inputs(cfg))
  weights = tf.random.stateless_normal([3, 32], seed=[1, 2])
  with tf.GradientTape(persistent=True) as tape:
    out = encoder(inputs, training=True)
    through_sequence = encoder.pooler(out["sequence_output"][:, 0])
    losses = [tf.reduce_sum(p * weights) for p in (out["pooled_output"], through_sequence)]
  assert_close(out["pooled_output"], through_sequence, 1e-6)
  first, full = (tape.gradient(loss, encoder.trainable_variables) for loss in losses)
  for variable, a, b in zip(encoder.trainable_variables, first, full):
    assert_close(tf.convert_to_tensor(a), tf.convert_to_tensor(b), 1e-5, err_msg=variable.name)
  # The dropout masks are in use (so the test can fail): without dropout the pooled
  # output differs.
  assert np.abs(out["pooled_output"] - encoder(inputs)["pooled_output"]).max() > 1e-3


def _dot_row_counts(fn, inputs, width):
  """{rows: count} of the matmuls producing `width` columns in fn's XLA HLO, after XLA has
  removed what the outputs do not use."""
  hlo = tf.function(fn, jit_compile=True).experimental_get_compiler_ir(inputs)("optimized_hlo")
  counts = {}
  for rows in re.findall(r"f32\[(\d+),%d\]\{1,0\} (?:dot|custom-call)\(" % width, hlo):
    counts[int(rows)] = counts.get(int(rows), 0) + 1
  return counts


def test_a_model_of_the_pooled_output_alone_runs_the_last_ffn_on_the_first_tokens_only():
  """What a classifier costs: with only pooled_output used, the last block's FFN runs on
  B rows instead of B * S; with sequence_output used, on all."""
  cfg = dict(TINY, num_hidden_layers=3, intermediate_size=48)
  encoder = AlbertEncoder(AlbertConfig.from_dict(cfg))
  inputs = encoder_inputs(random_inputs(cfg, batch=2, seq=8))
  pooled = _dot_row_counts(lambda x: encoder(x)["pooled_output"], inputs, 48)
  sequence = _dot_row_counts(lambda x: encoder(x)["sequence_output"], inputs, 48)
  assert sequence == {16: 3}, sequence
  assert pooled == {16: 2, 2: 1}, pooled


def test_a_caller_of_both_outputs_pools_the_full_last_layer_without_a_second_path():
  """Serving signatures return sequence_output and pooled_output: by default the last
  block's FFN also runs on the first tokens alone (B rows more); with
  `uses_sequence_output` it does not, and the outputs are the same."""
  cfg = dict(TINY, num_hidden_layers=3, intermediate_size=48)
  encoder = AlbertEncoder(AlbertConfig.from_dict(cfg))
  inputs = encoder_inputs(random_inputs(cfg, batch=2, seq=8))
  both = lambda **kw: lambda x: {k: v for k, v in encoder(x, **kw).items()
                                 if k in ("pooled_output", "sequence_output")}
  assert _dot_row_counts(both(), inputs, 48) == {16: 3, 2: 1}
  assert _dot_row_counts(both(uses_sequence_output=True), inputs, 48) == {16: 3}
  default, single = encoder(inputs), encoder(inputs, uses_sequence_output=True)
  for key in ("pooled_output", "sequence_output"):
    assert_close(single[key], default[key], 1e-6)


def _function_names(concrete_function):
  graph = concrete_function.graph.as_graph_def()
  return {f.signature.name for f in graph.library.function}


def _fused_gelu_gradients(policy, strategy=None):
  """Gradients of a SMALL_GROUPED encoder's training step under `policy` (FFN inputs of
  standard deviation ~3), and the names of the step's functions."""
  inputs = encoder_inputs(random_inputs(SMALL_GROUPED, batch=4, seq=11))
  target = tf.random.stateless_normal([4, 11, 32], seed=[3, 4])
  keras.mixed_precision.set_global_policy(policy)
  keras.utils.set_random_seed(0)
  with strategy.scope() if strategy else contextlib.nullcontext():
    encoder = AlbertEncoder(SMALL_GROUPED)
  for i, block in enumerate(b for group in encoder.groups for b in group):
    # FFN inputs of standard deviation ~3 (initial weights keep them near 0, where
    # GELU is about x / 2 and a wrong gradient would pass).
    block.intermediate.kernel.assign(tf.random.stateless_normal([32, 48], seed=[5, i]) * 0.5)

  def loss_and_grads(x, y):
    with tf.GradientTape() as tape:
      out = encoder(x, training=True)
      loss = tf.reduce_sum(tf.cast(out["sequence_output"], tf.float32) * y) \
          + tf.reduce_sum(tf.cast(out["pooled_output"], tf.float32))
    return [tf.convert_to_tensor(g) for g in tape.gradient(loss, encoder.trainable_variables)]

  step = tf.function(loss_and_grads)
  names = _function_names(step.get_concrete_function(inputs, target))
  if strategy is None:
    return [g.numpy() for g in step(inputs, target)], names
  halves = [{k: v[2 * i:2 * i + 2] for k, v in inputs.items()} for i in range(2)]
  per_replica = strategy.run(step, args=(
      strategy.experimental_distribute_values_from_function(
          lambda context: halves[context.replica_id_in_sync_group]),
      strategy.experimental_distribute_values_from_function(
          lambda context: target[2 * context.replica_id_in_sync_group:][:2])))
  return [strategy.reduce("SUM", g, axis=None).numpy() for g in per_replica], names


def _fused_gelu_names(names):
  return {n for n in names if "gelu_" in n and "fused" in n}


def test_float32_training_runs_the_fused_gelu_with_the_reference_gradients(monkeypatch):
  """In a float32 training step the FFN's GELU is the fused XLA kernel both ways, and the
  step's gradients equal those of the reference ops (autodiff of tf.nn.gelu) at 1e-5."""
  got, names = _fused_gelu_gradients("float32")
  # forward and backward kernels (one per shape: all tokens, first tokens)
  assert {n.split("_fused")[0] for n in _fused_gelu_names(names)} == {
      "__inference__gelu_forward", "__inference__gelu_backward"}, names
  monkeypatch.setattr(activations, "for_training", lambda activation: activation)
  want, names = _fused_gelu_gradients("float32")
  assert not _fused_gelu_names(names)
  scale = max(np.abs(g).max() for g in want)
  assert scale > 1.0   # gradients large enough to disagree
  for a, b in zip(want, got):
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5 * scale)


_KERNELS16 = {"_bias_gelu_forward", "_bias_gelu_backward", "_add_norm_forward",
              "_add_norm_backward", "_softmax_backward"}


def _fused_kernel_names(names):
  """The `albert_tf.modeling.fused` XLA kernels among a graph's function names."""
  return {kernel for kernel in _KERNELS16 for n in names
          if n.startswith(f"__inference_{kernel}")}


def test_bfloat16_training_runs_the_fused_kernels_and_agrees_with_float32():
  """In a mixed_bfloat16 training step the FFN's bias + GELU and each projection's bias +
  residual + LayerNorm are `albert_tf.modeling.fused` XLA kernels both ways (in inference
  their forwards); the step's gradients are float32's to bfloat16 precision, also under
  MirroredStrategy (two CPU replicas, gradients summed), and so are they with the
  reference ops instead."""
  inputs = encoder_inputs(random_inputs(SMALL_GROUPED, batch=4, seq=11))
  want, _ = _fused_gelu_gradients("float32")
  got, names16 = _fused_gelu_gradients("mixed_bfloat16")
  assert _fused_kernel_names(names16) == _KERNELS16, names16
  assert not _fused_gelu_names(names16)
  with fused.reference_ops():
    reference, names = _fused_gelu_gradients("mixed_bfloat16")
  assert not _fused_kernel_names(names)
  scale = max(np.abs(g).max() for g in want)
  for a, b, c in zip(want, got, reference):
    np.testing.assert_allclose(b, a, atol=0.03 * scale)
    np.testing.assert_allclose(c, a, atol=0.03 * scale)
  assert scale > 1.0   # gradients large enough to disagree

  devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
  mirrored, _ = _fused_gelu_gradients("mixed_bfloat16", tf.distribute.MirroredStrategy(devices))
  for a, b in zip(want, mirrored):
    np.testing.assert_allclose(b, a, atol=0.03 * scale)

  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  encoder = AlbertEncoder(SMALL_GROUPED)
  infer = tf.function(lambda x: encoder(x)["sequence_output"]).get_concrete_function(inputs)
  names = _function_names(infer)
  assert not _fused_gelu_names(names)
  assert _fused_kernel_names(names) == {"_add_norm_forward", "_bias_gelu_forward"}, names


@pytest.mark.parametrize("recompute,per_sum", [(False, 1), (False, 4), (True, 4), (False, 6)])
def test_bfloat16_training_sums_the_shared_gradients_in_float32(monkeypatch, recompute, per_sum):
  """Under mixed_bfloat16 each application of a shared block has its own bfloat16
  gradient; the variable's gradient is their sum taken in float32 (as a float64 sum of
  the recorded per-application gradients gives it), not rounded to bfloat16 at each of
  the L - 1 additions, `per_sum` applications' gradients added at a time."""
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  cfg = dict(TINY, num_hidden_layers=6, intermediate_size=64)
  recorded, calls = [], []
  accumulate = fused.accumulate

  def recording(total, *gradients):
    recorded.extend(gradients)
    calls.append((total is None, len(gradients), gradients[0].shape))
    return accumulate(total, *gradients)

  monkeypatch.setattr(fused, "accumulate", recording)
  monkeypatch.setattr(encoder_module, "applications_per_sum", lambda config: per_sum)
  model = AlbertEncoder(cfg, recompute=recompute)
  inputs = encoder_inputs(random_inputs(cfg))
  model(inputs)
  dy = tf.random.stateless_normal([3, 11, 32], [1, 2])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.cast(model(inputs, training=True)["sequence_output"], tf.float32)
                         * dy)
  kernel = model.groups[0][0].intermediate.kernel
  got = tape.gradient(loss, kernel)
  assert got.dtype == tf.float32
  applications = [u for u in recorded if u.shape == (32, 64)]
  assert len(applications) == 6 and applications[0].dtype == tf.bfloat16
  # One call per `per_sum` applications, the last ones' first (they start the sum).
  chunks = [min(per_sum, 6 - j) for j in range(0, 6, per_sum)]
  assert [(first, n) for first, n, shape in calls if shape == (32, 64)] == [
      (i == 0, n) for i, n in enumerate(chunks[::-1])]
  exact = np.sum([u.numpy().astype(np.float64) for u in applications], 0)
  scale = np.abs(exact).max()
  error = np.abs(got.numpy() - exact).max() / scale
  in_bfloat16 = applications[0]
  for u in applications[1:]:
    in_bfloat16 = in_bfloat16 + u     # what summing in the compute dtype gives
  rounded = np.abs(tf.cast(in_bfloat16, tf.float32).numpy() - exact).max() / scale
  assert error < 1e-6, error
  assert rounded > 100 * error, (rounded, error)


def test_bfloat16_inference_attention_in_bfloat16_is_as_close_to_float32_as_the_reference_ops():
  """bfloat16 inference runs its Q, K, V projection and attention scores as matmuls with
  post-ops (`* 0.5 + bias`, `* 0.5 + mask`) and oneDNN's 16-bit softmax: its outputs,
  padding included, are as close to float32's as those of the reference ops (float32
  scores and softmax), with weights large enough for the attention to matter."""
  inputs = encoder_inputs(random_inputs(GROUPED, batch=4, seq=11))
  reference = AlbertEncoder(GROUPED)
  reference(inputs)
  rng = np.random.default_rng(3)
  reference.set_weights([w if w.ndim < 2 else rng.normal(0, 0.4, w.shape).astype(np.float32)
                         for w in reference.get_weights()])
  want = tf.function(reference)(inputs)
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  encoder = AlbertEncoder(GROUPED)
  encoder(inputs)
  encoder.set_weights(reference.get_weights())
  block = encoder.groups[0][0]
  assert block.uses_post_op_projection()
  assert "qkv_kernel_x2" in block.read_weights(training=True)
  got = tf.function(lambda x: encoder(x))(inputs)
  with fused.reference_ops():
    assert not block.uses_post_op_projection()
    ops = tf.function(lambda x: encoder(x))(inputs)
  for key in ("sequence_output", "pooled_output"):
    a, b, c = (tf.cast(out[key], tf.float32).numpy() for out in (want, got, ops))
    scale = np.abs(a).max()
    assert scale > 0.5
    assert np.abs(b - a).max() <= max(2 * np.abs(c - a).max(), 0.02 * scale), key
  # a training read of the weights (with the kernel the gradients flow to) in inference
  # gives the same outputs to bfloat16 precision
  x = tf.cast(tf.random.stateless_normal([2, 11, 32], [7, 8]), tf.bfloat16)
  bias = tf.zeros([2, 1, 1, 11])
  read = lambda training: {k: tf.cast(v, tf.bfloat16)   # read outside a call: float32
                           for k, v in block.read_weights(training=training).items()}
  a = block(x, bias, weights=read(False))
  b = block(x, bias, weights=read(True))
  assert_close(tf.cast(a, tf.float32), tf.cast(b, tf.float32), 0.05)
  # the first-token path (pooled) and the full path agree on the first row
  first = encoder.pooler(got["sequence_output"][:, 0])
  assert_close(tf.cast(first, tf.float32), tf.cast(got["pooled_output"], tf.float32), 0.02)
