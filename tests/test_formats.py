"""The layouts people fetch: tf-models-official's TF-Hub modules, KerasHub presets, and names
(hub handles, Hugging Face repo ids) resolved offline through the real clients' caches.

The modules are built by tf-models-official's own `export_tfhub_lib.export_model`, on a
TF1 checkpoint converted by its own `tf2_albert_encoder_checkpoint_converter`, as Google's
`albert_en_*/3` were; the presets by keras_hub itself. Each is compared with albert_tf's
outputs for the same weights, read from the original TF1 checkpoint.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import (AlbertClassifier, AlbertConfig, AlbertEncoder, AlbertPretrainer,
                       formats, load_checkpoint)
from albert_tf import sources
from albert_tf.commands import convert
import original_albert
from common import (GROUPED, TINY, assert_close, encoder_inputs, export_tf_models_module,
                    random_inputs, run_script)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = dict(TINY, vocab_size=1500)


def _error_line(done):
  """The script's one-line error (TensorFlow's own log lines may come before it)."""
  lines = [line for line in done.stderr.splitlines() if ": error: " in line]
  assert lines, done.stderr[-2000:]
  return lines[0]


_RUN_ALL = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from common import run_script
done = [run_script(*command) for command in json.loads(sys.argv[2])]
print(json.dumps([[d.returncode, d.stdout, d.stderr] for d in done]))
"""


def _run(env, *commands):
  """Scripts (each a list: the script, its flags) in one process of their own, one after
  the other, as common.run_script runs them: huggingface_hub reads HF_HOME and
  HF_HUB_OFFLINE when it is imported, so a test of those variables needs a new process
  (one TensorFlow import for them all). Their subprocess.CompletedProcess."""
  done = subprocess.run([sys.executable, "-c", _RUN_ALL, os.path.dirname(__file__),
                         json.dumps([[str(x) for x in c] for c in commands])],
                        capture_output=True, text=True, timeout=600, cwd=ROOT,
                        env={**os.environ, **env})
  assert done.returncode == 0, done.stderr[-3000:]
  return [subprocess.CompletedProcess(c, code, out, err)
          for c, (code, out, err) in zip(commands, json.loads(done.stdout.splitlines()[-1]))]


def _write_release(root, cfg):
  release = root / "release"
  release.mkdir()
  AlbertConfig.from_dict(cfg).to_json_file(str(release / "albert_config.json"))
  original_albert.write_checkpoint(str(release / "model.ckpt-best"),
                                   original_albert.random_weights(cfg))
  return str(release)


def _bert_export(root, cfg, spm_model):
  """A BERT encoder (fresh weights) exported by tf-models' exporter: not ALBERT."""
  from official.nlp.configs import encoders  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import export_tfhub_lib  # pylint: disable=g-import-not-at-top
  bert = encoders.BertEncoderConfig(
      vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
      num_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
      intermediate_size=cfg["intermediate_size"], max_position_embeddings=cfg["max_position_embeddings"],
      type_vocab_size=cfg["type_vocab_size"])
  encoder_config = encoders.EncoderConfig(type="bert", bert=bert)
  checkpoint = tf.train.Checkpoint(encoder=encoders.build_encoder(encoder_config)).save(
      str(root / "bert" / "ckpt"))
  export_tfhub_lib.export_model(str(root / "bert0"), encoder_config=encoder_config,
                                model_checkpoint_path=checkpoint, with_mlm=False,
                                sp_model_file=spm_model, do_lower_case=True)
  return str(root / "bert0")


@pytest.fixture(scope="module")
def modules(tmp_path_factory, spm_model):
  """{"mlm": module with .mlm, "encoder": without, "bert": a BERT module} + the weights."""
  root = tmp_path_factory.mktemp("tf_models")
  release = _write_release(root, CFG)
  return dict(mlm=export_tf_models_module(release, "model.ckpt-best", spm_model,
                                          str(root / "albert1"), with_mlm=True),
              encoder=export_tf_models_module(release, "model.ckpt-best", spm_model,
                                              str(root / "albert0"), with_mlm=False),
              bert=_bert_export(root, CFG, spm_model), release=release)


def _released(path):
  model = AlbertPretrainer(AlbertConfig.from_json_file(os.path.join(path, "albert_config.json")))
  formats.load_original_checkpoint(model, os.path.join(path, "model.ckpt-best"))
  return model


# ----------------------------------------------------------------------------- tf-models modules


@pytest.mark.parametrize("which", ["mlm", "encoder"])
def test_a_tf_models_module_reads_with_its_config_and_outputs(modules, which):
  path = modules[which]
  found = formats.read_model_directory(path, "--albert_hub_module_handle")
  assert found.layout == "tf_hub" and found.heads == (["mlm"] if which == "mlm" else [])
  want = AlbertConfig.from_dict(CFG)
  for key in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
              "num_attention_heads", "intermediate_size", "max_position_embeddings",
              "type_vocab_size", "num_hidden_groups", "inner_group_num"):
    assert getattr(found.config, key) == getattr(want, key), key
  assert found.config.hidden_act == "gelu"   # tf-models' tanh GELU, read from its metadata
  assert found.spm_model_file.endswith(".model") and found.do_lower_case is True

  model = AlbertPretrainer(found.config)
  report = load_checkpoint(model, path)
  fresh = {n.split(" ")[0] for n in report.freshly_initialized}
  assert {n for n in fresh if n.startswith("cls/predictions")} == (
      set() if which == "mlm" else {n for n in fresh if n.startswith("cls/predictions")})
  assert "cls/seq_relationship/output_weights" in fresh          # the modules have no SOP head
  inputs = random_inputs(CFG, batch=3, seq=13)
  module = tf.saved_model.load(path)
  theirs = module(encoder_inputs(inputs), training=False)
  ours = model.encoder(encoder_inputs(inputs), training=False)
  reference = _released(modules["release"])
  ref = reference.encoder(encoder_inputs(inputs), training=False)
  for key in ("pooled_output", "sequence_output"):
    assert_close(ours[key], theirs[key], 1e-5)
    assert_close(ours[key], ref[key], 1e-5)
  if which == "mlm":
    mlm = module.mlm(dict(inputs), training=False)["mlm_logits"]
    ours_mlm = model(inputs, training=False)["mlm_logits"]
    assert_close(ours_mlm, mlm, 1e-4)


def test_a_tf_models_module_converts_to_hf_and_tf1_without_an_untrained_head(modules, tmp_path):
  for fmt, which in (("hf", "mlm"), ("tf1", "mlm"), ("hf", "encoder")):
    out = tmp_path / f"{fmt}_{which}"
    convert.run(convert.ConvertOptions(model=modules[which], output_format=fmt,
                                       output_dir=str(out)))
    found = formats.read_model_directory(str(out))
    if fmt == "hf":
      config = json.loads((out / "config.json").read_text())
      assert config["architectures"] == [
          "AlbertForMaskedLM" if which == "mlm" else "AlbertModel"]
    from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
    names = (list(load_file(str(out / "model.safetensors"))) if fmt == "hf" else
             list(tf.train.load_checkpoint(str(out / "model.ckpt-best")).get_variable_to_shape_map()))
    assert not [n for n in names if "sop_classifier" in n or "seq_relationship" in n], names
    model = AlbertEncoder(found.config)
    load_checkpoint(model, found.checkpoint)
    inputs = encoder_inputs(random_inputs(CFG))
    assert_close(model(inputs)["pooled_output"],
                 tf.saved_model.load(modules[which])(inputs)["pooled_output"], 1e-5)


def test_a_tf_models_module_exports_to_tf_hub_and_tflite_s_encoder(modules, tmp_path):
  from albert_tf.commands import export_tf_hub as export  # pylint: disable=g-import-not-at-top
  written = export.export_from_sources(str(tmp_path / "enc"), str(tmp_path / "pre"),
                                       albert_directory=modules["mlm"])
  inputs = encoder_inputs(random_inputs(CFG))
  theirs = tf.saved_model.load(modules["mlm"])(inputs)["pooled_output"]
  assert_close(tf.saved_model.load(written["encoder"])(inputs)["pooled_output"], theirs, 1e-5)
  source = sources.read(modules["mlm"], require_vocabulary=True)
  encoder, tokenizer, config = source.encoder, source.tokenizer, source.config
  assert config.num_hidden_layers == CFG["num_hidden_layers"] and tokenizer.do_lower_case
  assert_close(encoder(inputs)["pooled_output"], theirs, 1e-5)


def test_a_module_that_is_not_albert_is_refused_by_name(modules):
  with pytest.raises(ValueError, match=r"is not an ALBERT encoder module.*transformer/layer_0"):
    formats.read_model_directory(modules["bert"], "--albert_hub_module_handle")


def test_run_classifier_reads_a_tf_models_module_and_its_vocabulary(modules):
  from albert_tf.tasks import classification  # pylint: disable=g-import-not-at-top
  from albert_tf.tasks.base import resolve_model_source  # pylint: disable=g-import-not-at-top
  opts = classification.ClassifierOptions(
      task_name="MRPC", data_dir="unused", output_dir="unused", max_seq_length=16,
      albert_hub_module_handle=modules["encoder"], spm_model_file="from_tf_hub")
  source = resolve_model_source(opts, 16)
  assert source.hub_handle is None and source.init_checkpoint == modules["encoder"]
  assert source.config.vocab_size == CFG["vocab_size"] and source.tokenizer.do_lower_case
  model = AlbertClassifier(source.build_encoder(), 2)
  source.initialize(model)
  inputs = encoder_inputs(random_inputs(CFG))
  assert_close(model.encoder(inputs)["pooled_output"],
               tf.saved_model.load(modules["encoder"])(inputs)["pooled_output"], 1e-5)


# ----------------------------------------------------------------------------- KerasHub presets


def test_albert_tf_writes_a_preset_keras_hub_loads(modules, tmp_path, spm_model):
  import keras_hub  # pylint: disable=g-import-not-at-top
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  out = tmp_path / "preset"
  convert.run(convert.ConvertOptions(model=modules["release"], output_format="keras_hub",
                                     output_dir=str(out), spm_model_file=spm_model))
  backbone = keras_hub.models.Backbone.from_preset(str(out))
  assert type(backbone).__name__ == "AlbertBackbone"
  inputs = random_inputs(CFG, batch=2, seq=12)
  theirs = backbone(dict(token_ids=inputs["input_word_ids"], segment_ids=inputs["input_type_ids"],
                         padding_mask=inputs["input_mask"]))
  ours = _released(modules["release"]).encoder(encoder_inputs(inputs))
  for key in ("pooled_output", "sequence_output"):
    assert_close(np.asarray(theirs[key]), ours[key], 1e-5)
  tokenizer = keras_hub.models.AlbertTokenizer.from_preset(str(out))
  text = "the quick brown fox, said python's documentation."
  assert np.asarray(tokenizer(text)).tolist() == \
      FullTokenizer(None, True, spm_model).convert_tokens_to_ids(
          FullTokenizer(None, True, spm_model).tokenize(text))
  back = formats.read_model_directory(str(out))
  assert back.layout == "keras_hub" and back.spm_model_file.endswith("vocabulary.spm")


def test_a_classifier_becomes_an_albert_text_classifier_preset(tmp_path, spm_model):
  import keras_hub  # pylint: disable=g-import-not-at-top
  from common import write_classifier_run  # pylint: disable=g-import-not-at-top
  cfg = dict(GROUPED, num_hidden_layers=4, vocab_size=1500)
  model = AlbertClassifier(cfg, 3)
  inputs = encoder_inputs(random_inputs(cfg, batch=2, seq=12))
  model.classifier.output_weights.assign(tf.random.normal(model.classifier.output_weights.shape))
  logits = model(inputs, training=False).numpy()
  run = tmp_path / "run"
  run.mkdir()
  write_classifier_run(run, model, cfg, 16, task="MNLI", spm_model_file=spm_model)
  out = tmp_path / "preset"
  convert.run(convert.ConvertOptions(model=str(run), output_format="keras_hub",
                                     output_dir=str(out)))
  task = keras_hub.models.AlbertTextClassifier.from_preset(str(out), preprocessor=None)
  theirs = task(dict(token_ids=inputs["input_word_ids"], segment_ids=inputs["input_type_ids"],
                     padding_mask=inputs["input_mask"]), training=False)
  assert_close(np.asarray(theirs), logits, 1e-5)
  found = formats.read_model_directory(str(out))
  assert (found.num_labels, found.config.num_hidden_groups, found.config.inner_group_num) == (3, 2, 2)
  again = AlbertClassifier(found.config, found.num_labels)
  load_checkpoint(again, str(out))
  assert_close(again(inputs, training=False), logits, 1e-5)
  convert.run(convert.ConvertOptions(model=str(out), output_format="hf",   # --input=<preset>
                                     output_dir=str(tmp_path / "hf")))
  hf = formats.read_model_directory(str(tmp_path / "hf"))
  assert hf.heads == ["classifier"] and hf.num_labels == 3 and hf.spm_model_file
  from albert_tf import build_hf_model  # pylint: disable=g-import-not-at-top
  assert_close(build_hf_model(str(tmp_path / "hf"))[0](inputs, training=False), logits, 1e-5)


def test_a_preset_written_by_keras_hub_reads_in_albert_tf(tmp_path):
  import keras_hub  # pylint: disable=g-import-not-at-top
  backbone = keras_hub.models.AlbertBackbone(
      vocabulary_size=97, num_layers=4, num_heads=4, embedding_dim=8, hidden_dim=32,
      intermediate_dim=48, num_groups=2, num_inner_repetitions=2, max_sequence_length=24)
  rng = np.random.default_rng(3)
  for weight in backbone.weights:   # not the initializer's zeros and ones: every tensor counts
    weight.assign(rng.normal(0, 0.2, weight.shape).astype(np.float32))
  backbone.save_to_preset(str(tmp_path / "preset"))
  found = formats.read_model_directory(str(tmp_path / "preset"))
  encoder = AlbertEncoder(found.config)
  report = load_checkpoint(encoder, found.checkpoint)
  assert not report.freshly_initialized
  inputs = random_inputs(dict(TINY, num_hidden_layers=4), batch=2, seq=10)
  theirs = backbone(dict(token_ids=inputs["input_word_ids"], segment_ids=inputs["input_type_ids"],
                         padding_mask=inputs["input_mask"]))
  ours = encoder(encoder_inputs(inputs))
  for key in ("pooled_output", "sequence_output"):
    assert_close(ours[key], np.asarray(theirs[key]), 1e-5)


def test_presets_keras_hub_cannot_hold_or_albert_tf_cannot_read_are_refused(tmp_path):
  from albert_tf.formats import keras_hub  # pylint: disable=g-import-not-at-top
  other = tmp_path / "bert"
  other.mkdir()
  (other / "config.json").write_text(json.dumps(dict(
      module="keras_hub.src.models.bert.bert_backbone", class_name="BertBackbone",
      config=dict(vocabulary_size=10), registered_name="keras_hub>BertBackbone")))
  with pytest.raises(ValueError, match=r"config.json: a KerasHub 'BertBackbone' preset, not ALBERT"):
    formats.read_model_directory(str(other))
  for field, cfg in (("hidden_act='relu'", dict(TINY, hidden_act="relu")),
                     ("hidden_act='gelu_exact'", dict(TINY, hidden_act="gelu_exact")),
                     ("num_hidden_groups=2 does not divide", GROUPED)):
    with pytest.raises(ValueError, match=field):
      keras_hub.write_preset(AlbertEncoder(cfg), str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


# ----------------------------------------------------------------------------- names, offline


def _hf_cache(cache, repo_id, files_by_ref):
  """A Hugging Face cache as huggingface_hub writes it: blobs by hash, snapshots by commit
  linking them, refs naming the commit of each revision."""
  repo = cache / ("models--" + repo_id.replace("/", "--"))
  for ref, files in files_by_ref.items():
    commit = hashlib.sha1(ref.encode()).hexdigest()
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    for name, source in files.items():
      data = open(source, "rb").read()
      blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
      blob.parent.mkdir(parents=True, exist_ok=True)
      blob.write_bytes(data)
      link = repo / "snapshots" / commit / name
      link.parent.mkdir(parents=True, exist_ok=True)
      if not link.exists():
        link.symlink_to(os.path.relpath(blob, link.parent))


@pytest.fixture(scope="module")
def hf_directories(modules, tmp_path_factory):
  """Two Hugging Face directories of the module's weights: as they are, and with the
  pooler scaled (another revision)."""
  root = tmp_path_factory.mktemp("hf")
  convert.run(convert.ConvertOptions(model=modules["release"], output_format="hf",
                                     output_dir=str(root / "main")))
  model = _released(modules["release"])
  model.encoder.pooler.kernel.assign(model.encoder.pooler.kernel * 2)
  from albert_tf import save_hf_model  # pylint: disable=g-import-not-at-top
  save_hf_model(model, str(root / "v1"))
  return root


def test_names_resolve_through_the_real_clients_offline(modules, hf_directories, tmp_path,
                                                         monkeypatch):
  import huggingface_hub  # pylint: disable=g-import-not-at-top
  from huggingface_hub import constants  # pylint: disable=g-import-not-at-top
  files = lambda d: {n: str(d / n) for n in os.listdir(d)}
  cache = tmp_path / "hf_home" / "hub"
  _hf_cache(cache, "albert-org/tiny-albert", {"main": files(hf_directories / "main"),
                                              "v1": files(hf_directories / "v1")})
  monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
  monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
  calls = []
  real = huggingface_hub.snapshot_download
  monkeypatch.setattr(huggingface_hub, "snapshot_download",
                      lambda *a, **k: calls.append((a, k)) or real(*a, **k))
  main = formats.resolve("albert-org/tiny-albert", "--albert_directory")
  tagged = formats.resolve("albert-org/tiny-albert@v1", "--albert_directory")
  assert [c[0][0] for c in calls] == ["albert-org/tiny-albert"] * 2
  assert "model.safetensors" in calls[0][1]["allow_patterns"]
  assert main != tagged and os.path.realpath(main).startswith(os.path.realpath(cache))
  inputs = encoder_inputs(random_inputs(CFG))
  pooled = {}
  for name, path in (("main", main), ("v1", tagged)):
    found = formats.read_model_directory(path)
    encoder = AlbertEncoder(found.config)
    load_checkpoint(encoder, found.checkpoint)
    pooled[name] = encoder(inputs)["pooled_output"].numpy()
  reference = _released(modules["release"]).encoder(inputs)["pooled_output"].numpy()
  assert_close(pooled["main"], reference, 1e-6)
  assert np.abs(pooled["v1"] - reference).max() > 1e-3   # the tag's own weights

  local = tmp_path / "albert-org" / "tiny-albert"   # a local path spelled like an id wins
  shutil.copytree(hf_directories / "main", local)
  monkeypatch.chdir(tmp_path)
  assert formats.resolve("albert-org/tiny-albert", "--albert_directory") == "albert-org/tiny-albert"
  with pytest.raises(FileNotFoundError) as err:
    formats.resolve("albert-org/not-cached", "--input")
  message = str(err.value)
  assert "--input=albert-org/not-cached" in message and str(cache) in message
  assert "HF_HUB_OFFLINE" in message and "\n" not in message


def test_hub_handles_and_repo_ids_in_the_scripts_offline(modules, hf_directories, tmp_path):
  handle = "https://tfhub.dev/tensorflow/albert_en_base/3"
  hub_cache = tmp_path / "tfhub"
  shutil.copytree(modules["encoder"], hub_cache / hashlib.sha1(handle.encode()).hexdigest())
  (hub_cache / (hashlib.sha1(handle.encode()).hexdigest() + ".descriptor.txt")).write_text(
      f"Module: {handle}\n")
  hf_home = tmp_path / "hf_home"
  _hf_cache(hf_home / "hub", "albert-org/tiny-albert",
            {"main": {n: str(hf_directories / "main" / n)
                      for n in os.listdir(hf_directories / "main")}})
  env = dict(TFHUB_CACHE_DIR=str(hub_cache), HF_HOME=str(hf_home), HF_HUB_OFFLINE="1")
  # tensorflow_hub reads TFHUB_CACHE_DIR at each call: its cases run in this process.
  done = run_script("convert_checkpoint.py", f"--model={handle}", "--output_format=hf",
                    f"--output_dir={tmp_path / 'from_hub'}", env=dict(TFHUB_CACHE_DIR=hub_cache))
  assert done.returncode == 0, done.stderr[-2000:]
  assert "TF-Hub encoder SavedModel" in done.stdout
  # (HF_HOME and HF_HUB_OFFLINE: a process of their own, for these two)
  exported, missing = _run(
      env, ["hub_export/export.py", "--albert_directory=albert-org/tiny-albert",
            f"--export_path={tmp_path / 'exported'}"],
      ["convert_checkpoint.py", "--input=albert-org/missing", "--output_format=hf",
       f"--output_dir={tmp_path / 'never'}"])
  assert exported.returncode == 0, exported.stderr[-2000:]
  inputs = encoder_inputs(random_inputs(CFG))
  assert_close(tf.saved_model.load(str(tmp_path / "exported"))(inputs)["pooled_output"],
               _released(modules["release"]).encoder(inputs)["pooled_output"], 1e-5)
  nothing = run_script("convert_checkpoint.py", "--input=https://tfhub.dev/google/nothing/1",
                       "--output_format=hf", f"--output_dir={tmp_path / 'never'}", env=env)
  for done, name, words in (
      (missing, "albert-org/missing", ("HF_HUB_OFFLINE", "HF_HOME")),
      (nothing, "https://tfhub.dev/google/nothing/1", ("TFHUB_CACHE_DIR", str(hub_cache)))):
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = _error_line(done)
    assert f"--input={name}" in line and all(w in line for w in words), line
    assert not (tmp_path / "never").exists()


# ----------------------------------------------------------------------------- untrusted input


def test_an_absurd_config_is_refused_before_anything_is_built(hf_directories, tmp_path):
  bad = tmp_path / "absurd"
  shutil.copytree(hf_directories / "main", bad)
  config = json.loads((bad / "config.json").read_text())
  (bad / "config.json").write_text(json.dumps(dict(config, num_hidden_layers=100000000)))
  done = run_script("hub_export/export.py", f"--albert_directory={bad}",
                    f"--export_path={tmp_path / 'never'}")
  assert done.returncode == 1 and "Traceback" not in done.stderr
  assert "num_hidden_layers=100000000 exceeds 1024" in _error_line(done)
  with pytest.raises(ValueError, match="parameters, over"):
    AlbertConfig(vocab_size=4000000, embedding_size=2048)


def test_shard_names_must_stay_inside_the_directory(hf_directories, tmp_path):
  bad = tmp_path / "sharded"
  bad.mkdir()
  shutil.copy(hf_directories / "main" / "config.json", bad)
  shutil.copy(hf_directories / "main" / "model.safetensors", tmp_path / "outside.safetensors")
  (bad / "model.safetensors.index.json").write_text(json.dumps(
      dict(weight_map={"albert.pooler.weight": "../outside.safetensors"})))
  with pytest.raises(ValueError, match=r"names shards outside .*\.\./outside.safetensors"):
    load_checkpoint(AlbertEncoder(CFG), str(bad))


def test_the_dispatcher_tells_a_pretraining_output_from_a_release(tmp_path):
  """run_pretraining.py's --output_dir has an albert_config.json, as a release has, but
  albert_tf's own checkpoints: the names decide, not the config file."""
  model = AlbertPretrainer(TINY)
  AlbertConfig.from_dict(TINY).to_json_file(str(tmp_path / "albert_config.json"))
  tf.train.CheckpointManager(tf.train.Checkpoint(**model.checkpoint_items), str(tmp_path), 1).save()
  assert formats.layout_of(str(tmp_path)) is formats.native
  again = AlbertPretrainer(TINY)
  assert not load_checkpoint(again, str(tmp_path)).freshly_initialized
  inputs = encoder_inputs(random_inputs(TINY))
  np.testing.assert_array_equal(again.encoder(inputs)["pooled_output"],
                                model.encoder(inputs)["pooled_output"])
  formats.save_original_checkpoint(model, str(tmp_path / "model.ckpt-best"))
  assert formats.layout_of(str(tmp_path / "model.ckpt-best")) is formats.tf1


def test_the_model_flag_takes_its_old_names_with_one_line(capsys, tmp_path):
  """--model is the one name of "the model to read"; each command's earlier names still
  work, with one line saying so; two at once, or none, is an error naming them."""
  from albert_tf.commands import export_onnx, export_tflite  # pylint: disable=import-outside-toplevel
  for options, old in ((convert.ConvertOptions(input="x", output_format="hf", output_dir="y"),
                        "input"),
                       (export_tflite.TFLiteOptions(hub_module="x", output_file="y"), "hub_module"),
                       (export_onnx.OnnxOptions(export_path="x", output_file="y"), "export_path")):
    aliases = {"input": ("input",), "hub_module": export_tflite.OLD_NAMES,
               "export_path": export_onnx.OLD_NAMES}[old]
    assert sources.model_flag(options, aliases) == ("x", f"--{old}")
    assert capsys.readouterr().out == (f"--{old} is an old name of --model (it still works): "
                                       "the model to read\n")
  new = export_onnx.OnnxOptions(model="x", output_file="y")
  assert sources.model_flag(new, export_onnx.OLD_NAMES) == ("x", "--model")
  assert capsys.readouterr().out == ""
  both = convert.ConvertOptions(model="a", input="b", output_format="hf", output_dir="y")
  with pytest.raises(ValueError, match=r"pass one of --model and its old names \(--input\); "
                                       r"got --model, --input"):
    sources.model_flag(both, ("input",))
  with pytest.raises(ValueError, match="pass --model: The model to read"):
    convert.run(convert.ConvertOptions(output_format="hf", output_dir=str(tmp_path / "out")))
  assert not (tmp_path / "out").exists()
