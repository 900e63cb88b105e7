"""TF-Hub export: hub_export/export.py, the encoder and preprocessor SavedModels in Keras."""

import os
import pathlib
import shutil
import types

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from albert_tf import AlbertConfig, AlbertPretrainer, load_original_checkpoint, packing
from albert_tf.formats import tf_hub as loading
from albert_tf.commands import export_tf_hub as command
from albert_tf.export import tf_hub as export
from albert_tf.text.tokenization import FullTokenizer
import original_albert
from common import (BYTES, CORPUS, GROUPED, TINY, assert_close, encoder_inputs, random_inputs,
                    run_script)



def run_export(*flags):
  return run_script("hub_export/export.py", *flags)


def write_released_layout(directory, cfg, spm_model):
  """albert_config.json, 30k-clean.model and model.ckpt-best in the original TF1 names."""
  directory.mkdir()
  AlbertConfig.from_dict(cfg).to_json_file(str(directory / "albert_config.json"))
  shutil.copyfile(spm_model, directory / "30k-clean.model")
  original_albert.write_checkpoint(str(directory / "model.ckpt-best"),
                                   original_albert.random_weights(cfg))


@pytest.fixture(scope="module", params=[GROUPED, TINY], ids=["grouped", "shared"])
def released(request, tmp_path_factory, spm_model):
  """A released-layout model directory exported to an encoder SavedModel, and the in-process model.

  The grouped model goes through the command line, the fully shared one through
  the library call behind it.
  """
  cfg = dict(request.param, vocab_size=1500, hidden_dropout_prob=0.1)
  root = tmp_path_factory.mktemp("released")
  write_released_layout(root / "albert", cfg, spm_model)
  if cfg["num_hidden_groups"] > 1:
    result = run_export(f"--albert_directory={root / 'albert'}",
                        f"--export_path={root / 'encoder'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"encoder SavedModel: {root / 'encoder'}" in result.stdout
  else:
    command.export_from_sources(str(root / "encoder"), albert_directory=str(root / "albert"))
  model = AlbertPretrainer(cfg)
  load_original_checkpoint(model, str(root / "albert" / "model.ckpt-best"))
  return types.SimpleNamespace(cfg=cfg, encoder=str(root / "encoder"), model=model,
                               loaded=hub.load(str(root / "encoder")), spm_model=spm_model)


@pytest.fixture(scope="module")
def preprocess(tmp_path_factory, spm_model):
  """The preprocessor SavedModel of the test vocabulary, default_seq_length=16."""
  path = str(tmp_path_factory.mktemp("preprocess") / "preprocess")
  return command.export_from_sources(export_preprocessing_path=path, spm_model_file=spm_model,
                                    default_seq_length=16)["preprocessor"]


def test_encoder_savedmodel_matches_in_process_model(released):
  cfg, model = released.cfg, released.model
  layer = hub.KerasLayer(released.loaded, trainable=True)
  for seq in (11, cfg["max_position_embeddings"]):
    x = random_inputs(cfg, batch=2, seq=seq)
    got, want = layer(encoder_inputs(x)), model(x)
    assert sorted(got) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    for key in ("sequence_output", "pooled_output"):
      assert_close(got[key].numpy(), want[key].numpy(), 1e-5)
    np.testing.assert_array_equal(got["default"].numpy(), got["pooled_output"].numpy())
    assert len(got["encoder_outputs"]) == cfg["num_hidden_layers"] * cfg["inner_group_num"]
    for g, w in zip(got["encoder_outputs"], want["encoder_outputs"]):
      assert_close(g.numpy(), w.numpy(), 1e-5)
    # int64 ids (what many tokenizers give) are the same ids.
    wide = layer({k: v.astype(np.int64) for k, v in encoder_inputs(x).items()})
    np.testing.assert_array_equal(wide["pooled_output"].numpy(), got["pooled_output"].numpy())

  loaded = released.loaded
  # Called as TF-Hub callers often do, without `training` (or passing on None): the
  # inference outputs; training=True turns dropout (0.1 here) on.
  ids = {k: tf.constant(v) for k, v in encoder_inputs(x).items()}
  for kwargs in ({}, dict(training=None), dict(training=False)):
    plain = loaded(ids, **kwargs)
    assert_close(plain["pooled_output"].numpy(), want["pooled_output"].numpy(), 1e-5,
                 err_msg=str(kwargs))
    for head, extra, key in ((loaded.mlm, dict(masked_lm_positions=x["masked_lm_positions"]),
                              "mlm_logits"), (loaded.sop, {}, "sop_logits")):
      assert_close(head(dict(ids, **extra), **kwargs)[key].numpy(), want[key].numpy(), 1e-5,
                   err_msg=f"{key} {kwargs}")
  dropped = loaded(ids, training=True)["pooled_output"].numpy()
  assert np.abs(dropped - want["pooled_output"].numpy()).max() > 1e-3
  assert_close(loaded.mlm(x)["mlm_logits"].numpy(), want["mlm_logits"].numpy(), 1e-5)
  mlm = hub.KerasLayer(loaded.mlm, signature=None)(x)
  sop = hub.KerasLayer(loaded.sop, signature=None)(encoder_inputs(x))
  assert mlm["mlm_logits"].shape == (2, 4, cfg["vocab_size"])
  assert_close(mlm["mlm_logits"].numpy(), want["mlm_logits"].numpy(), 1e-5)
  assert_close(sop["sop_logits"].numpy(), want["sop_logits"].numpy(), 1e-5)
  served = loaded.signatures["serving_default"](**{k: tf.constant(v)
                                                   for k, v in encoder_inputs(x).items()})
  assert_close(served["pooled_output"].numpy(), want["pooled_output"].numpy(), 1e-5)
  last = len(want["encoder_outputs"]) - 1
  assert_close(served[f"encoder_outputs_{last}"].numpy(), want["sequence_output"].numpy(), 1e-5)


def test_encoder_savedmodel_trains_in_keras(released):
  layer = hub.KerasLayer(released.loaded, trainable=True)
  encoder = released.model.encoder
  # Exactly the encoder's variables are trainable: not the MLM/SOP heads, not do_lower_case.
  assert sorted((w.shape.as_list(), w.dtype) for w in layer.trainable_weights) == \
      sorted((w.shape.as_list(), w.dtype) for w in encoder.trainable_weights)
  x = encoder_inputs(random_inputs(released.cfg))
  with tf.GradientTape() as tape:
    first = layer(x, training=True)["pooled_output"]
    loss = tf.reduce_sum(first ** 2)
  grads = tape.gradient(loss, layer.trainable_weights)
  assert all(g is not None and float(tf.reduce_max(tf.abs(g))) > 0 for g in grads)
  # Dropout is on in training mode (a new mask each step) and off otherwise.
  with tf.GradientTape():
    second = layer(x, training=True)["pooled_output"]
  assert np.abs(first.numpy() - second.numpy()).max() > 1e-4
  np.testing.assert_array_equal(layer(x)["pooled_output"].numpy(),
                                layer(x, training=False)["pooled_output"].numpy())


def test_inference_traces_hold_no_custom_gradients_and_still_differentiate(released):
  """The module's inference traces (`training=False`, `serving_default`) are saved without
  albert_tf's custom gradients (each one's gradient function is saved and loaded again: a
  third of an export), the training traces with them; TensorFlow differentiates the
  inference traces itself, to the in-process model's gradients within 1e-5."""
  loaded = released.loaded
  x = encoder_inputs(random_inputs(released.cfg))
  for key, function in (("default", loaded.__call__), ("mlm", loaded.mlm), ("sop", loaded.sop)):
    specs = {k: tf.TensorSpec([None, None], tf.int32)
             for k in x.keys() | ({"masked_lm_positions"} if key == "mlm" else set())}
    custom = lambda training: [n.name for f in function.get_concrete_function(
        specs, training=training).graph.as_graph_def().library.function
                               for n in f.node_def if "_gradient_op_type" in n.attr]
    assert not custom(False), key
    assert custom(True), key          # (LayerNorm's, the shared weights' sums)
  serving = loaded.signatures["serving_default"].graph.as_graph_def()
  assert not [n.name for f in serving.library.function for n in f.node_def
              if "_gradient_op_type" in n.attr]
  layer = hub.KerasLayer(loaded, trainable=True)
  model = released.model.encoder
  with tf.GradientTape(persistent=True) as tape:
    loss = lambda out: (tf.reduce_sum(out["sequence_output"] ** 2)
                        + tf.reduce_sum(out["pooled_output"] ** 2))
    got, want = loss(layer(x, training=False)), loss(model(x, training=False))
  want_grads = tape.gradient(want, model.trainable_weights)
  got_grads = tape.gradient(got, layer.trainable_weights)   # (the same variables, in order)
  assert [v.shape for v in layer.trainable_weights] == [v.shape for v in model.trainable_weights]
  for v, g, w in zip(model.trainable_weights, got_grads, want_grads):
    assert_close(tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(w).numpy(), 1e-5,
                 err_msg=v.name)


def test_encoder_savedmodel_assets(released):
  loaded = released.loaded
  config = AlbertConfig.from_json_file(loaded.albert_config_file.asset_path.numpy().decode())
  assert config.to_dict() == AlbertConfig.from_dict(released.cfg).to_dict()
  assert loading.config_from_hub(released.encoder).to_dict() == config.to_dict()
  assert bool(loaded.do_lower_case.numpy()) is True
  spm_path, lower = loading.spm_model_from_hub(released.encoder)
  assert lower is True and os.path.basename(spm_path) == "30k-clean.model"
  with open(spm_path, "rb") as a, open(released.spm_model, "rb") as b:
    assert a.read() == b.read()


def test_preprocessor_savedmodel_matches_full_tokenizer(preprocess, spm_model):
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  pre = hub.load(preprocess)
  texts = CORPUS + BYTES
  got = pre.tokenize(tf.constant(texts))
  assert isinstance(got, tf.RaggedTensor) and got.dtype == tf.int32
  for text, ids in zip(texts, got.to_list()):
    assert ids == tokenizer.encode(text), text
  special = {k: int(v) for k, v in pre.tokenize.get_special_tokens_dict().items()}
  assert special == dict(vocab_size=1500, start_of_sequence_id=tokenizer.cls_id,
                         end_of_segment_id=tokenizer.sep_id, padding_id=tokenizer.pad_id,
                         mask_id=tokenizer.mask_id)
  firsts, seconds = CORPUS, CORPUS[::-1]
  root = pre(tf.constant(firsts))  # default_seq_length=16
  pair = pre.bert_pack_inputs([pre.tokenize(tf.constant(firsts)),
                               pre.tokenize(tf.constant(seconds))], seq_length=32)
  for i, (a, b) in enumerate(zip(firsts, seconds)):
    want1 = packing.pack_inputs(tokenizer.encode(a), None, 16, tokenizer.cls_id, tokenizer.sep_id)
    want2 = packing.pack_inputs(tokenizer.encode(a), tokenizer.encode(b), 32, tokenizer.cls_id,
                                tokenizer.sep_id)
    for key in want1:
      assert root[key][i].numpy().tolist() == want1[key], (key, a)
      assert pair[key][i].numpy().tolist() == want2[key], (key, a, b)


def test_preprocessor_and_encoder_chained_on_raw_strings(released, preprocess):
  """The TF-Hub Keras recipe on strings equals FullTokenizer + packer + in-process model."""
  tokenizer, model = FullTokenizer(spm_model_file=released.spm_model), released.model
  seq_length = 20
  firsts = ["The assert statement raises AssertionError.", "Café déjà vu, 1,000 times!", ""]
  seconds = ["Exceptions are raised by the raise statement.", "short", "only the second"]
  preprocessor = hub.load(preprocess)
  a = keras.Input(shape=(), dtype=tf.string)
  b = keras.Input(shape=(), dtype=tf.string)
  tokenize = hub.KerasLayer(preprocessor.tokenize)
  pack = hub.KerasLayer(preprocessor.bert_pack_inputs, arguments=dict(seq_length=seq_length))
  encoder = hub.KerasLayer(released.loaded, trainable=True)
  pair_model = keras.Model([a, b], encoder(pack([tokenize(a), tokenize(b)]))["pooled_output"])
  single_model = keras.Model(a, encoder(hub.KerasLayer(preprocess)(a))["sequence_output"])

  packed = [packing.pack_inputs(tokenizer.encode(x), tokenizer.encode(y), seq_length,
                                tokenizer.cls_id, tokenizer.sep_id) for x, y in zip(firsts, seconds)]
  want = model({k: np.array([p[k] for p in packed], np.int32) for k in packed[0]})
  got = pair_model([tf.constant(firsts), tf.constant(seconds)])
  assert_close(got.numpy(), want["pooled_output"].numpy(), 1e-5)
  packed = [packing.pack_inputs(tokenizer.encode(x), None, 16, tokenizer.cls_id, tokenizer.sep_id)
            for x in firsts]
  want = model({k: np.array([p[k] for p in packed], np.int32) for k in packed[0]})
  got = single_model(tf.constant(firsts))
  assert_close(got.numpy(), want["sequence_output"].numpy(), 1e-5)


@pytest.mark.slow
def test_exported_encoder_fine_tunes_saves_and_reloads(tmp_path):
  model = AlbertPretrainer(TINY)
  path = export.export_encoder(model, str(tmp_path / "hub"))
  ins = {k: keras.Input(shape=(None,), dtype=tf.int32, name=k)
         for k in ("input_word_ids", "input_mask", "input_type_ids")}
  pooled = hub.KerasLayer(path, trainable=True)(ins)["pooled_output"]
  classifier = keras.Model(ins, keras.layers.Dense(2)(pooled))
  # A learnable task: the label is whether token 7 occurs in the sequence.
  rng = np.random.default_rng(0)
  ids = rng.integers(8, 97, (64, 10)).astype(np.int32)
  labels = rng.integers(0, 2, 64)
  ids[labels == 1, rng.integers(1, 10, (labels == 1).sum())] = 7
  x = dict(input_word_ids=ids, input_mask=np.ones_like(ids), input_type_ids=np.zeros_like(ids))
  classifier.compile(keras.optimizers.Adam(3e-3),
                     keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = classifier.fit(x, labels, epochs=15, batch_size=16, verbose=0).history["loss"]
  assert history[-1] < 0.5 * history[0], history
  classifier.save(str(tmp_path / "classifier"), save_format="tf")
  reloaded = keras.models.load_model(str(tmp_path / "classifier"),
                                     custom_objects={"KerasLayer": hub.KerasLayer})
  assert_close(reloaded.predict(x, verbose=0), classifier.predict(x, verbose=0), 1e-5)


def test_export_refuses_to_overwrite_and_replaces_atomically(tmp_path, monkeypatch):
  OTHER = dict(TINY, num_hidden_layers=1)   # noqa: N806  another graph, cheaper to export
  target = tmp_path / "hub"
  target.mkdir()
  (target / "keep.txt").write_text("mine")
  with pytest.raises(FileExistsError, match="--overwrite"):
    export.export_encoder(AlbertPretrainer(TINY), str(target))
  # --overwrite replaces an earlier export only, never a directory of other files.
  with pytest.raises(FileExistsError, match="not a SavedModel export"):
    export.export_encoder(AlbertPretrainer(TINY), str(target), overwrite=True)
  assert sorted(os.listdir(target)) == ["keep.txt"] and (target / "keep.txt").read_text() == "mine"

  earlier = tmp_path / "earlier"
  export.export_encoder(AlbertPretrainer(TINY), str(earlier))
  before = (earlier / "saved_model.pb").read_bytes()

  def broken_save(*args, **kwargs):
    raise RuntimeError("disk full")
  with monkeypatch.context() as m:
    m.setattr(tf.saved_model, "save", broken_save)
    with pytest.raises(RuntimeError, match="disk full"):
      export.export_encoder(AlbertPretrainer(OTHER), str(earlier), overwrite=True)
  assert (earlier / "saved_model.pb").read_bytes() == before
  assert sorted(os.listdir(tmp_path)) == ["earlier", "hub"]

  export.export_encoder(AlbertPretrainer(OTHER), str(earlier), overwrite=True)
  assert (earlier / "saved_model.pb").read_bytes() != before
  assert sorted(os.listdir(tmp_path)) == ["earlier", "hub"]


def test_the_save_reuses_the_export_s_traces(tmp_path):
  """`build_hub_model` traces in the save's context: `tf.saved_model.save` traces none of
  the root's functions again (traced outside that context, it traced each one twice)."""
  options = tf.saved_model.SaveOptions()
  root = export.build_hub_model(AlbertPretrainer(TINY), options)
  functions = dict(call=root.__call__, mlm=root.mlm, sop=root.sop)
  before = {name: f.experimental_get_tracing_count() for name, f in functions.items()}
  assert before == dict(call=6, mlm=3, sop=3)   # training None / True / False; int64 ids too
  tf.saved_model.save(root, str(tmp_path / "saved"), options=options)
  assert {name: f.experimental_get_tracing_count() for name, f in functions.items()} == before


def test_a_killed_exports_temporaries_are_removed_by_the_next(tmp_path):
  """An export killed halfway leaves `.export_<pid>_*` behind; the next export in the same
  place removes it (the process is gone), but not the temporary of a live export."""
  dead = tmp_path / ".export_999999999_abcd"   # above any pid_max: no such process
  (dead / "saved_model").mkdir(parents=True)
  live = tmp_path / f".export_{os.getpid()}_live"
  live.mkdir()
  export.export_encoder(AlbertPretrainer(TINY), str(tmp_path / "hub"))
  assert sorted(os.listdir(tmp_path)) == [live.name, "hub"]


@pytest.mark.parametrize("damage, error, message", [
    ("none", FileExistsError, "is not empty; pass --overwrite"),
    ("checkpoint", ValueError, "cannot read checkpoint .*model.ckpt-best"),
    ("config", ValueError, "albert_config.json: not valid JSON"),
    ("vocab_size", ValueError, "has 1500 pieces but the model.s vocab_size is 1400"),
    ("no_checkpoint", FileNotFoundError, "no checkpoint at"),
    ("no_spm", FileNotFoundError, r"30k-clean.model \(the vocabulary of --albert_directory=.*\) not found; pass --spm"),
    ("native_mismatch", ValueError, "does not match the model"),
])
def test_export_errors_leave_target_untouched(tmp_path, spm_model, damage, error, message):
  source = tmp_path / "albert"
  write_released_layout(source, dict(TINY, vocab_size=1500), spm_model)
  target = tmp_path / "hub"   # an earlier export (what --overwrite may replace)
  target.mkdir()
  (target / "keep.txt").write_text("mine")
  (target / "saved_model.pb").write_bytes(b"earlier")
  kwargs = dict(albert_directory=str(source), overwrite=damage != "none")
  if damage == "checkpoint":
    (source / "model.ckpt-best.index").write_bytes(b"not a checkpoint index")
  elif damage == "config":
    (source / "albert_config.json").write_text('{"vocab_size": 1500,')
  elif damage == "vocab_size":
    AlbertConfig.from_dict(dict(TINY, vocab_size=1400)).to_json_file(
        str(source / "albert_config.json"))
  elif damage == "no_checkpoint":
    kwargs["init_checkpoint"] = str(tmp_path / "missing" / "model.ckpt-1")
  elif damage == "no_spm":
    os.remove(source / "30k-clean.model")
  elif damage == "native_mismatch":  # our own checkpoint, of a model with another hidden size
    other = AlbertPretrainer(dict(TINY, vocab_size=1500, hidden_size=16, num_attention_heads=2))
    kwargs["init_checkpoint"] = tf.train.Checkpoint(**other.checkpoint_items).write(
        str(tmp_path / "native" / "ckpt"))
  with pytest.raises(error, match=message):
    command.export_from_sources(str(target), str(tmp_path / "pre"), **kwargs)
  assert sorted(os.listdir(target)) == ["keep.txt", "saved_model.pb"]
  assert sorted(p for p in os.listdir(tmp_path) if p != "native") == ["albert", "hub"]


def test_export_command_reports_errors_without_traceback(tmp_path, spm_model):
  source = tmp_path / "albert"
  write_released_layout(source, dict(TINY, vocab_size=1500), spm_model)
  (source / "albert_config.json").write_text('{"vocab_size": 1500,')
  result = run_export(f"--albert_directory={source}", f"--export_path={tmp_path / 'hub'}")
  assert result.returncode == 1
  assert "albert_config.json: not valid JSON" in result.stderr and "Traceback" not in result.stderr
  assert sorted(os.listdir(tmp_path)) == ["albert"]


def test_export_from_native_checkpoint(tmp_path, spm_model):
  """Our own object checkpoints export too, and the SavedModel carries their weights."""
  cfg = dict(TINY, vocab_size=1500)
  model = AlbertPretrainer(cfg)
  for w in model.weights:
    w.assign(w + tf.random.normal(w.shape, stddev=0.1))
  prefix = tf.train.Checkpoint(**model.checkpoint_items).write(str(tmp_path / "native" / "ckpt"))
  AlbertConfig.from_dict(cfg).to_json_file(str(tmp_path / "albert_config.json"))
  command.export_from_sources(str(tmp_path / "hub"), albert_config_file=str(tmp_path / "albert_config.json"),
                             init_checkpoint=prefix, spm_model_file=spm_model)
  x = random_inputs(cfg)
  loaded = hub.load(str(tmp_path / "hub"))
  assert_close(loaded.mlm(x)["mlm_logits"].numpy(), model(x)["mlm_logits"].numpy(), 1e-5)


def test_the_preprocessor_packs_no_more_than_the_encoder_takes(tmp_path, spm_model):
  """TINY has 24 positions: the preprocessor's default length follows, a longer one is
  refused, and the encoder SavedModel names the limit when called with too long a batch."""
  write_released_layout(tmp_path / "albert", dict(TINY, vocab_size=1500), spm_model)
  written = command.export_from_sources(str(tmp_path / "encoder"), str(tmp_path / "pre"),
                                       albert_directory=str(tmp_path / "albert"))
  pre = hub.load(written["preprocessor"])
  packed = pre.bert_pack_inputs([pre.tokenize(tf.constant(["a long sentence " * 20]))])
  assert packed["input_word_ids"].shape == (1, 24)
  encoder = hub.KerasLayer(written["encoder"])
  assert encoder(packed)["pooled_output"].shape == (1, TINY["hidden_size"])
  too_long = {k: tf.zeros([1, 25], tf.int32) for k in packed}
  with pytest.raises(tf.errors.InvalidArgumentError, match="longer than max_position_embeddings=24"):
    encoder(too_long)
  with pytest.raises(ValueError, match="--default_seq_length=25 exceeds the model's "
                                       "max_position_embeddings=24"):
    command.export_from_sources(export_preprocessing_path=str(tmp_path / "pre2"),
                               albert_directory=str(tmp_path / "albert"), default_seq_length=25)
  assert not (tmp_path / "pre2").exists()


def test_an_encoder_without_vocabulary_warns_and_from_tf_hub_says_so(tmp_path, spm_model,
                                                                      capsys):
  from albert_tf.tasks.base import ModelOptions, resolve_model_source  # pylint: disable=import-outside-toplevel
  write_released_layout(tmp_path / "albert", dict(TINY, vocab_size=1500), spm_model)
  command.export_from_sources(str(tmp_path / "encoder"),
                             albert_config_file=str(tmp_path / "albert" / "albert_config.json"),
                             init_checkpoint=str(tmp_path / "albert" / "model.ckpt-best"))
  assert "without a vocabulary (no --spm_model_file)" in capsys.readouterr().out
  opts = ModelOptions(albert_hub_module_handle=str(tmp_path / "encoder"),
                      spm_model_file="from_tf_hub")
  with pytest.raises(ValueError, match=rf"^{tmp_path / 'encoder'} holds no vocabulary .*pass "
                                       r"--spm_model_file=PATH"):
    resolve_model_source(opts, 16)


def test_a_bfloat16_encoder_export_computes_in_bfloat16_with_float32_outputs(released, tmp_path):
  """`--dtype=bfloat16`: the same float32 variables (a fine-tuning hub.KerasLayer trains
  float32 weights), float32 outputs, bfloat16 math inside (its outputs differ from the
  float32 export's by bfloat16 rounding: more than 1e-4, within 0.1 of outputs of
  scale ~1), and the global Keras policy is left as it was."""
  target = tmp_path / "encoder_bf16"
  command.export_from_sources(
      str(target), albert_directory=str(pathlib.Path(released.encoder).parent / "albert"),
      dtype="bfloat16")
  bf16 = hub.load(str(target))
  x = encoder_inputs(random_inputs(released.cfg))
  want = released.loaded.signatures["serving_default"](**x)
  got = bf16.signatures["serving_default"](**x)
  for key in ("pooled_output", "sequence_output"):
    assert got[key].dtype == tf.float32
    difference = np.abs(got[key].numpy() - want[key].numpy()).max()
    assert 1e-4 < difference < 0.1, (key, difference)
  assert [v.dtype for v in bf16.variables] == [tf.float32] * len(bf16.variables)
  for a, b in zip(bf16.variables, released.loaded.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  graph = bf16.signatures["serving_default"].graph.as_graph_def()
  matmul_types = [node.attr["T"].type for f in graph.library.function for node in f.node_def
                  if node.op == "MatMul"]
  # (float32 ones are the fused kernels' gradient sums, saved with the training trace)
  assert matmul_types.count(tf.bfloat16.as_datatype_enum) >= 6, matmul_types
  with export.compute_dtype("bfloat16"):
    assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
  assert keras.mixed_precision.global_policy().name == "float32"


# (on the grouped model only: the fully shared one goes through the same recipe in
# tests/test_doors.py, which checks its answers against a run's --do_predict)
@pytest.mark.parametrize("released", [GROUPED], ids=["grouped"], indirect=True)
def test_keras3_recipe_raw_text_to_a_fine_tuned_head(released, preprocess):
  """TensorFlow's own Keras 3: text -> AlbertPreprocessorLayer -> AlbertEncoderLayer ->
  Dense, as the README writes it. The encoder's outputs equal hub.KerasLayer's (tf_keras)
  on the same packed inputs within 1e-6, in a functional model too; a fit step with Adam
  (whose slot names Keras 3 builds from the variables' names) changes every encoder
  weight, the SavedModel's own variables included."""
  import keras  # pylint: disable=import-outside-toplevel
  from albert_tf.export.keras3 import (  # pylint: disable=import-outside-toplevel
      AlbertEncoderLayer, AlbertPreprocessorLayer)
  assert keras.__version__.startswith("3.")
  first = tf.constant(["The cat sat on the mat.", "He left early.", "Is it sunny?"] * 2)
  second = tf.constant(["A cat was on the mat.", "It rained all day.", "The sun is out."] * 2)
  pack = AlbertPreprocessorLayer(preprocess, seq_length=16)
  encoder = AlbertEncoderLayer(released.encoder)
  packed = pack([first, second])
  loaded = hub.load(preprocess)
  want_packed = loaded.bert_pack_inputs([loaded.tokenize(first), loaded.tokenize(second)],
                                        seq_length=16)
  for key in want_packed:
    np.testing.assert_array_equal(packed[key].numpy(), want_packed[key].numpy())
  want = hub.KerasLayer(released.encoder)(dict(want_packed))
  got = encoder(packed)
  for key in ("pooled_output", "sequence_output"):
    assert_close(got[key].numpy(), want[key].numpy(), 1e-6)

  a = keras.Input(shape=(), dtype="string")
  b = keras.Input(shape=(), dtype="string")
  pooled = encoder(pack([a, b]))["pooled_output"]
  model = keras.Model([a, b], keras.layers.Dense(2)(pooled))
  features = keras.Model([a, b], pooled)
  assert_close(features.predict([first, second], verbose=0), want["pooled_output"].numpy(), 1e-6)
  assert len(encoder.trainable_variables) == len(released.loaded.trainable_variables)
  assert all(":" not in v.name for v in encoder.trainable_variables)
  model.compile(keras.optimizers.Adam(1e-3),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  before = [v.numpy().copy() for v in encoder._reloaded_obj.trainable_variables]  # pylint: disable=protected-access
  model.fit([first, second], tf.constant([1, 0, 1] * 2), epochs=1, batch_size=6, verbose=0)
  after = [v.numpy() for v in encoder._reloaded_obj.trainable_variables]  # pylint: disable=protected-access
  assert all(np.abs(x - y).max() > 0 for x, y in zip(before, after))
  assert np.abs(encoder(packed)["pooled_output"].numpy() - got["pooled_output"].numpy()).max() > 1e-5
