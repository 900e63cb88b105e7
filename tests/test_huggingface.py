"""Hugging Face ALBERT directories in and out, without torch.

The directories here are written by the tests themselves, as transformers'
`save_pretrained` writes them: safetensors from NumPy under transformers' names
(the table below is written out by hand from `modeling_albert.py`, independent
of albert_tf's), and config.json with transformers' keys. The weights are
`original_albert.random_weights`, so each directory's outputs are compared with
the same weights read from an original TF1 checkpoint.
"""

import json
import os
import sys

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file
import tensorflow as tf

import albert_tf
from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, runs, sources
from albert_tf.formats import huggingface
from albert_tf.commands import convert
from albert_tf.text.huggingface import read_hf_vocabulary
import original_albert
from common import (GROUPED, TINY, assert_close, encoder_inputs, random_inputs, run_script,
                    write_wordpiece_vocab)


# transformers' name for each original one: (name, transposed), by hand from modeling_albert.py.
_BLOCK = {"attention_1/self/query": "attention.query", "attention_1/self/key": "attention.key",
          "attention_1/self/value": "attention.value",
          "attention_1/output/dense": "attention.dense", "LayerNorm": "attention.LayerNorm",
          "ffn_1/intermediate/dense": "ffn", "ffn_1/intermediate/output/dense": "ffn_output",
          "LayerNorm_1": "full_layer_layer_norm"}


def transformers_name(name):
  fixed = {"bert/embeddings/word_embeddings": "albert.embeddings.word_embeddings.weight",
           "bert/embeddings/position_embeddings": "albert.embeddings.position_embeddings.weight",
           "bert/embeddings/token_type_embeddings":
               "albert.embeddings.token_type_embeddings.weight",
           "bert/embeddings/LayerNorm/gamma": "albert.embeddings.LayerNorm.weight",
           "bert/embeddings/LayerNorm/beta": "albert.embeddings.LayerNorm.bias",
           "bert/encoder/embedding_hidden_mapping_in/kernel":
               "albert.encoder.embedding_hidden_mapping_in.weight",
           "bert/encoder/embedding_hidden_mapping_in/bias":
               "albert.encoder.embedding_hidden_mapping_in.bias",
           "bert/pooler/dense/kernel": "albert.pooler.weight",
           "bert/pooler/dense/bias": "albert.pooler.bias",
           "cls/predictions/transform/dense/kernel": "predictions.dense.weight",
           "cls/predictions/transform/dense/bias": "predictions.dense.bias",
           "cls/predictions/transform/LayerNorm/gamma": "predictions.LayerNorm.weight",
           "cls/predictions/transform/LayerNorm/beta": "predictions.LayerNorm.bias",
           "cls/predictions/output_bias": "predictions.bias",
           "cls/seq_relationship/output_weights": "sop_classifier.classifier.weight",
           "cls/seq_relationship/output_bias": "sop_classifier.classifier.bias",
           "output_weights": "classifier.weight", "output_bias": "classifier.bias",
           "cls/squad/output_weights": "qa_outputs.weight",
           "cls/squad/output_bias": "qa_outputs.bias"}
  if name in fixed:
    return fixed[name], name.endswith("/kernel")
  parts = name.split("/")      # bert/encoder/transformer/group_g/inner_group_k/<block>/<leaf>
  g, k = parts[3].split("_")[1], parts[4].split("_")[2]
  leaf = {"kernel": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}[parts[-1]]
  return (f"albert.encoder.albert_layer_groups.{g}.albert_layers.{k}."
          f"{_BLOCK['/'.join(parts[5:-1])]}.{leaf}", parts[-1] == "kernel")


def hf_config(cfg, architecture, hidden_act="gelu_new", **extra):
  """config.json as transformers writes it for `cfg`."""
  out = dict(architectures=[architecture], model_type="albert", hidden_act=hidden_act,
             attention_probs_dropout_prob=0.0, bos_token_id=2, classifier_dropout_prob=0.1,
             dtype="float32", eos_token_id=3, hidden_dropout_prob=0.0, layer_norm_eps=1e-12,
             pad_token_id=0, tie_word_embeddings=True, transformers_version="5.24.0")
  for key in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
              "num_hidden_groups", "num_attention_heads", "intermediate_size", "inner_group_num",
              "max_position_embeddings", "type_vocab_size", "initializer_range"):
    out[key] = cfg[key]
  out.update(extra)
  return out


def write_hf(directory, weights, config, prefixed=True, dtype=np.float32, shards=1):
  """`weights` (original names) as a transformers directory."""
  os.makedirs(directory, exist_ok=True)
  tensors = {}
  for name, value in weights.items():
    hf, transposed = transformers_name(name)
    if not prefixed:
      if not hf.startswith("albert."):
        continue
      hf = hf[len("albert."):]
    tensors[hf] = np.ascontiguousarray((value.T if transposed else value).astype(dtype))
  names = sorted(tensors)
  if shards == 1:
    save_file(tensors, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
  else:
    weight_map = {}
    for s in range(shards):
      file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
      part = {n: tensors[n] for n in names[s::shards]}
      save_file(part, os.path.join(directory, file), metadata={"format": "pt"})
      weight_map.update({n: file for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
      json.dump(dict(metadata={}, weight_map=weight_map), f)
  with open(os.path.join(directory, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
  return str(directory)


def tf1_model(cls, cfg, weights, tmp_path, **kwargs):
  """`cls` with `weights` read from an original TF1 checkpoint."""
  prefix = original_albert.write_checkpoint(str(tmp_path / "tf1" / "model.ckpt"), weights)
  model = cls(AlbertConfig.from_dict(cfg), **kwargs)
  albert_tf.load_checkpoint(model, prefix)
  return model


def _rounded(weights, dtype):
  return {k: v.astype(dtype).astype(np.float32) for k, v in weights.items()}


def _outputs(model, x):
  out = model(x)
  return {k: out[k].numpy() for k in ("sequence_output", "pooled_output", "mlm_logits",
                                      "sop_logits") if k in out}


@pytest.mark.parametrize("layout", ["prefixed", "bare", "sharded", "float16", "bfloat16"])
def test_a_transformers_directory_equals_the_original_checkpoint(tmp_path, layout):
  """Grouped sharing (5 layers, 2 groups, 2 inner groups): AlbertForPreTraining's tensors
  (prefixed), AlbertModel's (bare), three shards, 16-bit tensors."""
  weights = original_albert.random_weights(GROUPED, seed=3)
  dtype = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}.get(layout, np.float32)
  weights = _rounded(weights, dtype)
  bare = layout == "bare"
  path = write_hf(tmp_path / "hf", weights, hf_config(
      GROUPED, "AlbertModel" if bare else "AlbertForPreTraining"), prefixed=not bare,
      dtype=dtype, shards=3 if layout == "sharded" else 1)
  model, report = albert_tf.build_hf_model(path)
  assert isinstance(model, AlbertEncoder if bare else AlbertPretrainer)
  assert report.freshly_initialized == [] and report.unused == []
  reference = tf1_model(AlbertEncoder if bare else AlbertPretrainer, GROUPED,
                        {k: v for k, v in weights.items() if k.startswith("bert/") or not bare},
                        tmp_path)
  x = random_inputs(GROUPED)
  got, want = _outputs(model, x), _outputs(reference, x)
  assert set(got) == ({"sequence_output", "pooled_output"} if bare else
                      {"sequence_output", "pooled_output", "mlm_logits", "sop_logits"})
  for key in want:
    assert_close(got[key], want[key], 1e-6, err_msg=key)
  # The whole output is also the original equations' (NumPy, float64).
  ref = original_albert.forward(GROUPED, weights, x["input_word_ids"], x["input_mask"],
                                x["input_type_ids"], x["masked_lm_positions"])
  assert_close(got["sequence_output"], ref["sequence_output"], 1e-5)


def test_hidden_act_means_what_transformers_means(tmp_path):
  """transformers' "gelu" is the erf GELU and "gelu_new" the tanh one (the original's "gelu")."""
  weights = original_albert.random_weights(TINY, seed=4, scale=0.5)
  x = encoder_inputs(random_inputs(TINY))
  outputs = {}
  for act in ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu"):
    path = write_hf(tmp_path / act, weights, hf_config(TINY, "AlbertForPreTraining", act))
    model, _ = albert_tf.build_hf_model(path)
    outputs[act] = model(x)["sequence_output"].numpy()
    ours = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}.get(act, act)
    assert model.config.hidden_act == ours
    reference = tf1_model(AlbertPretrainer, dict(TINY, hidden_act=ours), weights, tmp_path / act)
    assert_close(outputs[act], reference(x)["sequence_output"].numpy(), 1e-6)
  np.testing.assert_array_equal(outputs["gelu_new"], outputs["gelu_pytorch_tanh"])
  assert np.abs(outputs["gelu"] - outputs["gelu_new"]).max() > 1e-4   # the two differ
  assert np.abs(outputs["relu"] - outputs["gelu_new"]).max() > 1e-3
  with pytest.raises(ValueError, match=r"config.json: hidden_act='quick_gelu' is not supported"):
    huggingface.read_hf_config(write_hf(tmp_path / "quick", weights,
                                        hf_config(TINY, "AlbertModel", "quick_gelu")))


@pytest.mark.parametrize("architecture", ["AlbertForSequenceClassification",
                                          "AlbertForMultipleChoice", "AlbertForQuestionAnswering"])
def test_task_heads_load_as_the_original_task_heads(tmp_path, architecture):
  weights = original_albert.random_weights(TINY, heads=False, seed=5)
  rng = np.random.default_rng(0)
  H = TINY["hidden_size"]
  extra = {}
  if architecture == "AlbertForQuestionAnswering":
    weights.update({"cls/squad/output_weights": rng.normal(size=[2, H]).astype(np.float32),
                    "cls/squad/output_bias": rng.normal(size=[2]).astype(np.float32)})
  else:
    classes = 3 if architecture.endswith("Classification") else 1
    weights.update({"output_weights": rng.normal(size=[classes, H]).astype(np.float32),
                    "output_bias": rng.normal(size=[classes]).astype(np.float32)})
    if classes == 3:
      extra = dict(id2label={"0": "contradiction", "1": "entailment", "2": "neutral"},
                   label2id={"contradiction": 0, "entailment": 1, "neutral": 2})
  path = write_hf(tmp_path / "hf", weights, hf_config(TINY, architecture, **extra))
  model, report = albert_tf.build_hf_model(path)
  assert report.freshly_initialized == [] and report.unused == []
  cls, kwargs = {"AlbertForSequenceClassification": (albert_tf.AlbertClassifier,
                                                     dict(num_classes=3)),
                 "AlbertForMultipleChoice": (albert_tf.AlbertMultipleChoice, {}),
                 "AlbertForQuestionAnswering": (albert_tf.AlbertQuestionAnswerer, {})}[architecture]
  assert type(model) is cls
  reference = tf1_model(cls, TINY, weights, tmp_path, **kwargs)
  x = encoder_inputs(random_inputs(TINY))
  if cls is albert_tf.AlbertMultipleChoice:
    x = {k: np.stack([v, v[::-1]], 1) for k, v in x.items()}     # [B, 2 choices, S]
  got, want = model(x), reference(x)
  tf.nest.map_structure(lambda a, b: assert_close(a.numpy(), b.numpy(), 1e-6),
                        got, want)
  if extra:
    assert huggingface.read_hf_config(path)[1].labels == ["contradiction", "entailment", "neutral"]


def test_heads_the_directory_lacks_or_holds_in_another_shape_stay_fresh(tmp_path):
  """albert-base-v2 is an AlbertForMaskedLM: a classifier starts with a fresh head and the
  masked-LM tensors are unused; a classifier of 3 labels gives no head to one of 2."""
  weights = original_albert.random_weights(TINY, seed=6)
  del weights["cls/seq_relationship/output_weights"], weights["cls/seq_relationship/output_bias"]
  path = write_hf(tmp_path / "mlm", weights, hf_config(TINY, "AlbertForMaskedLM"))
  classifier = albert_tf.AlbertClassifier(TINY, 2)
  report = albert_tf.load_checkpoint(classifier, path)
  assert report.freshly_initialized == ["output_bias", "output_weights"]
  assert report.unused == ["predictions.LayerNorm.bias", "predictions.LayerNorm.weight",
                           "predictions.bias", "predictions.dense.bias", "predictions.dense.weight"]
  pretrainer = AlbertPretrainer(TINY)
  report = albert_tf.load_checkpoint(pretrainer, path)
  assert report.freshly_initialized == ["cls/seq_relationship/output_bias",
                                        "cls/seq_relationship/output_weights"]
  np.testing.assert_array_equal(pretrainer.masked_lm.output_bias.numpy(),
                                weights["cls/predictions/output_bias"])
  three = dict(original_albert.random_weights(TINY, heads=False, seed=7),
               output_weights=np.ones([3, TINY["hidden_size"]], np.float32),
               output_bias=np.ones([3], np.float32))
  path = write_hf(tmp_path / "three", three, hf_config(TINY, "AlbertForSequenceClassification"))
  report = albert_tf.load_checkpoint(classifier, path)
  assert report.freshly_initialized == [
      "output_bias (the file's classifier.bias is [3])",
      f"output_weights (the file's classifier.weight is [3, {TINY['hidden_size']}])"]
  assert not np.any(classifier.classifier.output_weights.numpy() == 1.0)


def _snapshot(model):
  return [v.numpy().copy() for v in model.variables]


@pytest.mark.parametrize("damage,message", [
    ("model_type", r"config.json: model_type is 'bert', not 'albert'"),
    ("missing", r"does not match the model \(AlbertPretrainer.*\n  missing \(1\):\n    "
                r"albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"),
    ("shape", r"shape mismatch \(1\):\n    albert.pooler.weight: file \[32, 31\], model \[32, 32\]"),
    ("unexpected", r"unexpected \(1\):\n    albert.encoder.albert_layer_groups.1.albert_layers"
                   r".0.ffn.bias"),
    ("layers", r"num_hidden_layers: .*config.json says 4, the model has %d" % TINY["num_hidden_layers"]),
    ("pytorch_only", r"pytorch_model.bin is a PyTorch pickle and torch is not installed\. "
                     r"Either install torch \(pip install 'albert_tf\[torch\]'\).*or convert"),
    ("no_weights", r"holds no weights: none of model.safetensors"),
])
def test_bad_directories_name_the_problem_and_assign_nothing(tmp_path, monkeypatch, damage,
                                                             message):
  weights = original_albert.random_weights(TINY, seed=8)
  config = hf_config(TINY, "AlbertForPreTraining")
  if damage == "model_type":
    config["model_type"] = "bert"
  elif damage == "missing":
    del weights["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"]
  elif damage == "shape":
    weights["bert/pooler/dense/kernel"] = weights["bert/pooler/dense/kernel"][:31]
  elif damage == "layers":
    config["num_hidden_layers"] = 4
  path = write_hf(tmp_path / "hf", weights, config)
  if damage == "unexpected":
    from safetensors.numpy import load_file  # pylint: disable=import-outside-toplevel
    tensors = load_file(os.path.join(path, "model.safetensors"))
    tensors["albert.encoder.albert_layer_groups.1.albert_layers.0.ffn.bias"] = np.zeros([48],
                                                                                       np.float32)
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
  elif damage == "pytorch_only":
    os.rename(os.path.join(path, "model.safetensors"), os.path.join(path, "pytorch_model.bin"))
    monkeypatch.setitem(sys.modules, "torch", None)    # as where torch is not installed
  elif damage == "no_weights":
    os.remove(os.path.join(path, "model.safetensors"))
  model = AlbertPretrainer(TINY)
  before = _snapshot(model)
  with pytest.raises((ValueError, ImportError, FileNotFoundError), match=message):
    if damage == "no_weights":
      albert_tf.load_hf_weights(model, path)
    else:
      albert_tf.load_checkpoint(model, path)
  for a, b in zip(before, _snapshot(model)):
    np.testing.assert_array_equal(a, b)


def test_the_tokenizer_comes_from_the_same_directory(tmp_path, spm_model):
  """spiece.model (ALBERT's SentencePiece) or vocab.txt (WordPiece) with the settings of
  tokenizer_config.json; settings ALBERT's tokenizer does not have are refused."""
  sp = tmp_path / "sp"
  sp.mkdir()
  os.symlink(spm_model, sp / "spiece.model")
  (sp / "tokenizer_config.json").write_text(json.dumps(dict(
      tokenizer_class="AlbertTokenizer", do_lower_case=True, remove_space=True,
      keep_accents=False, unk_token="<unk>", mask_token={"content": "[MASK]", "lstrip": True})))
  vocabulary = read_hf_vocabulary(str(sp))
  assert vocabulary.spm_model_file == str(sp / "spiece.model") and vocabulary.vocab_file is None
  reference = albert_tf.text.tokenization.FullTokenizer(spm_model_file=spm_model)
  text = "Naïve café, 1,000 ``quotes''"
  assert vocabulary.tokenizer().tokenize(text) == reference.tokenize(text)

  wp = tmp_path / "wp"
  wp.mkdir()
  write_wordpiece_vocab(str(wp / "vocab.txt"), ["Hello World 中文 text"])
  (wp / "tokenizer_config.json").write_text(json.dumps(dict(tokenizer_class="BertTokenizerFast",
                                                            do_lower_case=False)))
  (wp / "special_tokens_map.json").write_text(json.dumps(dict(unk_token="[UNK]",
                                                              pad_token="[PAD]")))
  tokenizer = read_hf_vocabulary(str(wp)).tokenizer()
  assert tokenizer.vocab_file == str(wp / "vocab.txt") and tokenizer.do_lower_case is False
  assert tokenizer.tokenize("Hello 中") == albert_tf.text.tokenization.FullTokenizer(
      str(wp / "vocab.txt"), do_lower_case=False).tokenize("Hello 中")

  for damage, message in ((dict(keep_accents=True), r"keep_accents=true is not what ALBERT"),
                          (dict(unk_token="[UNK]"), r"unk_token is '\[UNK\]'; albert_tf's "
                                                    r"SentencePiece tokenizer uses '<unk>'")):
    (sp / "tokenizer_config.json").write_text(json.dumps(damage))
    with pytest.raises(ValueError, match=message):
      read_hf_vocabulary(str(sp))
  empty = tmp_path / "fast_only"
  empty.mkdir()
  (empty / "tokenizer.json").write_text("{}")
  with pytest.raises(ValueError, match="holds only tokenizer.json"):
    read_hf_vocabulary(str(empty))


def _checkpoint_tensors(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def test_tf1_to_hf_to_tf1_gives_back_the_same_tensors_bit_for_bit(tmp_path, spm_model):
  release = tmp_path / "albert"
  release.mkdir()
  weights = original_albert.random_weights(dict(GROUPED, vocab_size=1500), seed=9)
  original_albert.write_checkpoint(str(release / "model.ckpt-best"), weights)
  AlbertConfig.from_dict(dict(GROUPED, vocab_size=1500)).to_json_file(
      str(release / "albert_config.json"))
  os.symlink(spm_model, release / "30k-clean.model")
  convert.run(convert.ConvertOptions(model=str(release), output_format="hf",
                                     output_dir=str(tmp_path / "hf")))
  assert sorted(os.listdir(tmp_path / "hf")) == ["config.json", "model.safetensors",
                                                 "special_tokens_map.json", "spiece.model",
                                                 "tokenizer.json", "tokenizer_config.json"]
  config = json.loads((tmp_path / "hf" / "config.json").read_text())
  assert config["architectures"] == ["AlbertForPreTraining"] and config["hidden_act"] == "gelu_new"
  convert.run(convert.ConvertOptions(model=str(tmp_path / "hf"), output_format="tf1",
                                     output_dir=str(tmp_path / "back")))
  back = _checkpoint_tensors(str(tmp_path / "back" / "model.ckpt-best"))
  assert sorted(back) == sorted(weights)
  for name, value in weights.items():
    np.testing.assert_array_equal(back[name], value, err_msg=name)
  assert (tmp_path / "back" / "30k-clean.model").read_bytes() == open(spm_model, "rb").read()
  assert AlbertConfig.from_json_file(str(tmp_path / "back" / "albert_config.json")) == \
      AlbertConfig.from_json_file(str(release / "albert_config.json"))
  # An existing output directory is refused, and left as it was.
  (tmp_path / "taken").mkdir()
  (tmp_path / "taken" / "mine.txt").write_text("keep")
  with pytest.raises(FileExistsError, match="taken exists and is not empty"):
    convert.run(convert.ConvertOptions(model=str(release), output_format="hf",
                                       output_dir=str(tmp_path / "taken")))
  assert os.listdir(tmp_path / "taken") == ["mine.txt"]


def test_albert_tf_writes_what_it_reads_for_every_task_model(tmp_path):
  """Encoder, pretrainer, classifier (labels, regression), multiple choice, SQuAD v1.1;
  the SQuAD v2.0 head has no transformers class: its encoder is written, the head named."""
  x = encoder_inputs(random_inputs(TINY))
  cases = [(AlbertEncoder(TINY), "AlbertModel", {}),
           (AlbertPretrainer(TINY), "AlbertForPreTraining", {}),
           (albert_tf.AlbertClassifier(TINY, 3), "AlbertForSequenceClassification",
            dict(labels=["a", "b", "c"])),
           (albert_tf.AlbertClassifier(TINY, 1), "AlbertForSequenceClassification",
            dict(labels=["LABEL_0"], problem_type="regression")),
           (albert_tf.AlbertMultipleChoice(TINY), "AlbertForMultipleChoice", {}),
           (albert_tf.AlbertQuestionAnswerer(TINY), "AlbertForQuestionAnswering", {})]
  for i, (model, architecture, kwargs) in enumerate(cases):
    for v in model.variables:
      v.assign(tf.random.normal(v.shape, stddev=0.3, seed=i))
    path = str(tmp_path / str(i))
    assert albert_tf.save_hf_model(model, path, **kwargs) == []
    config = json.loads(open(os.path.join(path, "config.json")).read())
    assert config["architectures"] == [architecture] and config["model_type"] == "albert"
    if kwargs:
      assert config["id2label"] == {str(j): label for j, label in enumerate(kwargs["labels"])}
      assert config.get("problem_type") == kwargs.get("problem_type")
    back, report = albert_tf.build_hf_model(path)
    assert type(back) is type(model) and report.freshly_initialized == []
    feed = {k: np.stack([v, v], 1) for k, v in x.items()} if architecture.endswith(
        "MultipleChoice") else x
    tf.nest.map_structure(lambda a, b: np.testing.assert_array_equal(a.numpy(), b.numpy()),
                          back(feed), model(feed))
  v2 = albert_tf.AlbertQuestionAnswerer(TINY, version_2_with_negative=True)
  left_out = albert_tf.save_hf_model(v2, str(tmp_path / "v2"))
  assert "start_logits/dense/kernel" in left_out and "answer_class/dense_1/kernel" in left_out
  assert json.loads((tmp_path / "v2" / "config.json").read_text())["architectures"] == [
      "AlbertModel"]


@pytest.mark.slow
@pytest.mark.learning
def test_run_classifier_fine_tunes_from_a_hugging_face_directory(tmp_path, spm_model,
                                                                   learning_seed):
  """One command from an HF directory (config, weights and vocabulary from it), then the run
  written back for transformers users: the classifier's probabilities are the run's."""
  from test_glue import CFG, SEQ, write_keyword_task  # pylint: disable=import-outside-toplevel
  cfg = dict(TINY, **CFG)
  weights = original_albert.random_weights(cfg, seed=10 + learning_seed, scale=0.05)
  hf = write_hf(tmp_path / "albert-tiny", weights, hf_config(cfg, "AlbertForMaskedLM"))
  os.symlink(spm_model, os.path.join(hf, "spiece.model"))
  data = write_keyword_task(str(tmp_path / "MRPC"), sizes=(("train", 600), ("dev", 200)))
  out = tmp_path / "out"
  result = run_script(
      "run_classifier.py", f"--albert_directory={hf}",
      f"--data_dir={data}", f"--output_dir={out}", "--task_name=MRPC", "--do_train",
      "--do_eval", f"--max_seq_length={SEQ}", "--train_batch_size=16", "--learning_rate=2e-3",
      "--train_step=200", "--warmup_step=20", "--save_checkpoints_steps=100",
      f"--seed={learning_seed}", "--noprogress")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Initialized from" in result.stdout and "fresh: output_bias, output_weights" in \
      result.stdout
  with open(out / "eval_results.txt") as f:
    evaluation = {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}
  print("MRPC-format dev from a Hugging Face directory", evaluation)
  assert evaluation["accuracy"] >= 0.9, evaluation
  record = runs.read_record(str(out))
  assert record["spm_model_file"] == os.path.abspath(os.path.join(hf, "spiece.model"))

  result = run_script("convert_checkpoint.py", f"--model={out}", "--output_format=hf",
                      f"--output_dir={tmp_path / 'hf_mrpc'}")
  assert result.returncode == 0, result.stderr[-3000:]
  config = json.loads((tmp_path / "hf_mrpc" / "config.json").read_text())
  assert config["architectures"] == ["AlbertForSequenceClassification"]
  assert config["id2label"] == {"0": "0", "1": "1"}
  run = sources.read(str(out))
  written, _ = albert_tf.build_hf_model(str(tmp_path / "hf_mrpc"))
  x = encoder_inputs(random_inputs(cfg, batch=4, seq=SEQ))
  np.testing.assert_array_equal(written(x).numpy(), run.model(x).numpy())
  # A second conversion into the same directory is refused without a traceback.
  again = run_script("convert_checkpoint.py", f"--model={out}", "--output_format=tf1",
                     f"--output_dir={tmp_path / 'hf_mrpc'}")
  assert again.returncode == 1 and "exists and is not empty" in again.stderr
  assert "Traceback" not in again.stderr


def test_a_run_fine_tuned_from_a_tf_hub_export_converts_too(tmp_path, spm_model):
  """make demo fine-tunes from its TF-Hub export: such a run's weights (under the export's
  variables) go to a Hugging Face directory with the same outputs."""
  import tensorflow_hub as hub  # pylint: disable=import-outside-toplevel
  from albert_tf.export import tf_hub as export  # pylint: disable=import-outside-toplevel
  cfg = dict(TINY, vocab_size=1500)
  pretrainer = AlbertPretrainer(cfg)
  export.export_encoder(pretrainer, str(tmp_path / "hub"), spm_model_file=spm_model)
  model = albert_tf.AlbertClassifier(hub.KerasLayer(str(tmp_path / "hub"), trainable=True), 2)
  for v in model.trainable_variables:    # fine-tuned: every weight moved
    v.assign(v + tf.random.normal(v.shape, stddev=0.05, seed=1))
  run = tmp_path / "run"
  runs.write_run(str(run), dict(task="MRPC", model=cfg, hub=str(tmp_path / "hub"),
                                do_lower_case=True, max_seq_length=16,
                                spm_model_file=spm_model), model)
  convert.run(convert.ConvertOptions(model=str(run), output_format="hf",
                                     output_dir=str(tmp_path / "hf")))
  written, _ = albert_tf.build_hf_model(str(tmp_path / "hf"))
  x = encoder_inputs(random_inputs(cfg))
  assert_close(written(x).numpy(), model(x).numpy(), 1e-6)
  assert np.abs(written(x).numpy() - albert_tf.AlbertClassifier(pretrainer.encoder, 2)(x).numpy()
                ).max() > 1e-3   # the fine-tuned weights, not the export's
