"""albert_tf against the peers themselves: transformers on torch, both ways, on every model
kind and on a trained run; tf-models-official's TF-Hub module converted for transformers;
run_ner.py's fine-tuning against transformers' from the same start.

They need the [bench] extra (torch, transformers), which `make test`'s install never
carries: there they are skipped with one line, and `make test-peers` runs them in a
virtualenv of their own, printing the figures docs/fidelity.md quotes (`-s`).
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the [bench] extra (torch, transformers): "
                            "make test-peers")
transformers = pytest.importorskip("transformers", reason="needs the [bench] extra (torch, "
                                   "transformers): make test-peers")

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tf_keras as keras  # pylint: disable=g-import-not-at-top,wrong-import-position

import albert_tf  # pylint: disable=g-import-not-at-top,wrong-import-position
from test_doors import start  # noqa: F401  pylint: disable=unused-import  (a fixture)
from common import (GROUPED, NER_CFG, TINY, assert_close, export_tf_models_module,  # pylint: disable=g-import-not-at-top,wrong-import-position
                    random_inputs, run_script, write_classifier_run, write_conll, write_release)

pytestmark = pytest.mark.peers
TOLERANCE = 1e-5   # relative to the magnitude of the outputs compared (common.assert_close)


@pytest.fixture(scope="module", autouse=True)
def _quiet():
  transformers.logging.set_verbosity_error()
  transformers.utils.logging.disable_progress_bar()
  torch.set_num_threads(1)
  print(f"\ntorch {torch.__version__}, transformers {transformers.__version__}, "
        f"TensorFlow {tf.__version__}")


def _hf_config(hidden_act, num_labels=2):
  c = GROUPED
  return transformers.AlbertConfig(
      vocab_size=c["vocab_size"], embedding_size=c["embedding_size"],
      hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
      num_hidden_groups=c["num_hidden_groups"], inner_group_num=c["inner_group_num"],
      num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
      max_position_embeddings=c["max_position_embeddings"], hidden_act=hidden_act,
      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=num_labels,
      classifier_dropout_prob=0.0)


def _torch_inputs(x):
  return dict(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
              attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
              token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long))


def _hf_outputs(model, x):
  """transformers' outputs as NumPy, named as albert_tf names them."""
  with torch.no_grad():
    out = model(**_torch_inputs(x), output_hidden_states=True)
  if hasattr(out, "prediction_logits"):
    got = dict(mlm_logits=out.prediction_logits, sop_logits=out.sop_logits,
               sequence_output=out.hidden_states[-1])
  elif hasattr(out, "last_hidden_state"):
    got = dict(sequence_output=out.last_hidden_state, pooled_output=out.pooler_output)
  else:
    got = dict(logits=out.logits)
  return {k: v.numpy() for k, v in got.items()}


def _albert_tf_outputs(model, x):
  """albert_tf's outputs; the masked-LM logits at every position, as transformers gives them."""
  batch, seq = x["input_word_ids"].shape
  inputs = {k: tf.constant(v) for k, v in x.items() if k != "masked_lm_positions"}
  if isinstance(model, (albert_tf.AlbertClassifier, albert_tf.AlbertTokenClassifier)):
    return dict(logits=model(inputs).numpy())
  if isinstance(model, albert_tf.AlbertPretrainer):
    inputs["masked_lm_positions"] = tf.tile(tf.range(seq)[tf.newaxis], [batch, 1])
  out = model(inputs)
  return {k: out[k].numpy() for k in ("sequence_output", "pooled_output", "mlm_logits",
                                      "sop_logits") if k in out}


def _compare(got, want, what):
  """Asserts each output within TOLERANCE of the peer's and prints the largest differences."""
  for key in want:
    assert_close(got[key], want[key], TOLERANCE, err_msg=f"{what}: {key}")
  print(f"  {what:60s} " + "  ".join(
      f"{k} {float(np.abs(np.asarray(got[k], np.float64) - want[k]).max()):.1e}" for k in want))


HF_CLASSES = ("AlbertModel", "AlbertForPreTraining", "AlbertForSequenceClassification",
              "AlbertForTokenClassification")


@pytest.mark.parametrize("hidden_act", ["gelu_new", "gelu", "relu"])
@pytest.mark.parametrize("hf_class", HF_CLASSES)
def test_transformers_models_read_in_albert_tf(tmp_path, hidden_act, hf_class):
  """save_pretrained (safetensors) -> albert_tf.build_hf_model: grouped sharing (L=3, G=2,
  two inner groups) with every parameter random, LayerNorms included, so each tensor counts."""
  torch.manual_seed(0)
  hf_model = getattr(transformers, hf_class)(_hf_config(hidden_act)).eval()
  generator = torch.Generator().manual_seed(len(hidden_act))
  with torch.no_grad():
    for name, p in sorted(hf_model.named_parameters()):
      p.copy_(torch.randn(p.shape, generator=generator) * 0.2
              + (1.0 if p.dim() == 1 and "LayerNorm.weight" in name else 0.0))
  hf_model.save_pretrained(str(tmp_path), safe_serialization=True)
  model, report = albert_tf.build_hf_model(str(tmp_path))
  # transformers' token classifier has no pooler; albert_tf's encoder keeps an unused one.
  unused = {"bert/pooler/dense/bias", "bert/pooler/dense/kernel"} if "Token" in hf_class else set()
  assert set(report.freshly_initialized) == unused, report.freshly_initialized
  x = random_inputs(GROUPED, batch=3, seq=16)
  _compare(_albert_tf_outputs(model, x), _hf_outputs(hf_model, x),
           f"{hidden_act} {hf_class} -> {type(model).__name__}")


ALBERT_TF_KINDS = {
    "AlbertEncoder": ("AlbertModel", lambda c: albert_tf.AlbertEncoder(c)),
    "AlbertPretrainer": ("AlbertForPreTraining", lambda c: albert_tf.AlbertPretrainer(c)),
    "AlbertClassifier": ("AlbertForSequenceClassification",
                         lambda c: albert_tf.AlbertClassifier(albert_tf.AlbertEncoder(c), 3)),
    "AlbertTokenClassifier": ("AlbertForTokenClassification",
                              lambda c: albert_tf.AlbertTokenClassifier(albert_tf.AlbertEncoder(c), 3)),
}


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact", "relu"])
@pytest.mark.parametrize("kind", sorted(ALBERT_TF_KINDS))
def test_albert_tf_models_read_in_transformers(tmp_path, hidden_act, kind):
  """albert_tf.save_hf_model -> transformers' from_pretrained, every variable random."""
  hf_class, build = ALBERT_TF_KINDS[kind]
  keras.utils.set_random_seed(1)
  model = build(albert_tf.AlbertConfig.from_dict(dict(GROUPED, hidden_act=hidden_act)))
  x = random_inputs(GROUPED, batch=3, seq=16)
  _albert_tf_outputs(model, x)   # built
  for v in model.variables:
    v.assign(tf.random.normal(v.shape, stddev=0.2) + (1.0 if "gamma" in v.name else 0.0))
  albert_tf.save_hf_model(model, str(tmp_path), labels=["a", "b", "c"] if "Classifier" in kind
                          else None)
  hf_model = getattr(transformers, hf_class).from_pretrained(str(tmp_path)).eval()
  _compare(_albert_tf_outputs(model, x), _hf_outputs(hf_model, x),
           f"{hidden_act} {kind} -> {hf_class}")


def test_a_classifier_run_converted_by_the_script_reads_in_transformers(tmp_path, spm_model):
  """A run_classifier.py --output_dir, through convert_checkpoint.py --output_format=hf, into
  AlbertForSequenceClassification with its AlbertTokenizer: the class probabilities of the
  same ids, and how often transformers' own tokenizer gives albert_tf's ids."""
  from albert_tf import sources  # pylint: disable=g-import-not-at-top
  from albert_tf.text.packing import pack_inputs  # pylint: disable=g-import-not-at-top
  from common import CORPUS  # pylint: disable=g-import-not-at-top
  cfg = dict(NER_CFG)
  keras.utils.set_random_seed(2)
  model = albert_tf.AlbertClassifier(albert_tf.AlbertEncoder(albert_tf.AlbertConfig.from_dict(cfg)), 2)
  seq = 48
  _albert_tf_outputs(model, random_inputs(cfg, batch=1, seq=seq))
  write_classifier_run(tmp_path / "run", model, cfg, seq, spm_model_file=spm_model)
  done = run_script("convert_checkpoint.py", f"--model={tmp_path / 'run'}",
                    "--output_format=hf", f"--output_dir={tmp_path / 'hf'}")
  assert done.returncode == 0, done.stderr[-3000:]
  source = sources.read(str(tmp_path / "run"))
  tok = source.tokenizer
  packed = [pack_inputs(tok.encode(a), tok.encode(b), seq, tok.cls_id, tok.sep_id, tok.pad_id)
            for a, b in zip(CORPUS, CORPUS[1:] + CORPUS[:1])]
  x = {name: np.array([p[name] for p in packed], np.int32)
       for name in ("input_word_ids", "input_mask", "input_type_ids")}
  hf_model = transformers.AlbertForSequenceClassification.from_pretrained(
      str(tmp_path / "hf")).eval()
  want = torch.softmax(torch.tensor(_hf_outputs(hf_model, x)["logits"]), -1).numpy()
  got = tf.nn.softmax(source.model({k: tf.constant(v) for k, v in x.items()}), -1).numpy()
  _compare(dict(probabilities=got), dict(probabilities=want),
           f"run -> convert_checkpoint.py -> {type(hf_model).__name__}")
  # transformers' default tokenizer (AutoTokenizer: the fast one, which reads the export's
  # tokenizer.json) gives albert_tf's ids for every text, and packs every pair as albert_tf
  # does but two ways of transformers' own: an empty second text is no pair to it, and
  # truncating a pair to an odd budget it gives the spare piece to the longer text (the
  # original, to the first; tests/test_tokenizer_files.py, docs/huggingface.md).
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
  for text in CORPUS:
    assert tokenizer(text, add_special_tokens=False)["input_ids"] == tok.encode(text), text
  firsts, seconds = CORPUS, CORPUS[1:] + CORPUS[:1]
  theirs = tokenizer(firsts, seconds, padding="max_length", truncation="longest_first",
                     max_length=seq, return_token_type_ids=True)
  packing = 0
  for i, (a, b) in enumerate(zip(firsts, seconds)):
    same = all(np.array_equal(np.array(theirs[k][i]), x[key][i]) for k, key in (
        ("input_ids", "input_word_ids"), ("token_type_ids", "input_type_ids"),
        ("attention_mask", "input_mask")))
    la, lb = len(tok.encode(a)), len(tok.encode(b))
    known = b == "" or (la + lb > seq - 3 and lb >= la and (seq - 3) % 2 == 1)
    assert same or known, (a[:40], b[:40])
    packing += not same
  # And on every paragraph of the pydoc topics (a vocabulary of create_vocab.py, whose
  # rounded scores tie alike in SentencePiece and tokenizers): the same ids.
  from test_tokenizer_files import pydoc_paragraphs  # pylint: disable=g-import-not-at-top
  paragraphs = pydoc_paragraphs()
  ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]
  differ = [t for t in paragraphs if ids(t) != tok.encode(t)]
  print(f"  transformers' {type(tokenizer).__name__} gives albert_tf's ids for all "
        f"{len(CORPUS)} texts and {1 - len(differ) / len(paragraphs):.4f} of "
        f"{len(paragraphs)} pydoc paragraphs; packs {len(firsts) - packing} of "
        f"{len(firsts)} pairs as albert_tf (the rest: its own truncation and empty second "
        "texts)")
  assert differ == [], [t[:80] for t in differ[:3]]


def test_a_tf_models_module_converted_reads_in_transformers(tmp_path, spm_model):
  """tf-models-official's TF-Hub module (as Google's albert_en_*/3 were written) through
  convert_checkpoint.py --output_format=hf into AlbertForMaskedLM: the sequence output
  and the masked-LM logits of the module's own signatures."""
  release, cfg = str(tmp_path / "release"), dict(TINY, vocab_size=1500)   # the vocabulary's
  write_release(release, cfg, spm_model)
  module_dir = export_tf_models_module(release, "model.ckpt-best", spm_model,
                                       str(tmp_path / "module"), with_mlm=True)
  done = run_script("convert_checkpoint.py", f"--model={module_dir}", "--output_format=hf",
                    f"--output_dir={tmp_path / 'hf'}")
  assert done.returncode == 0, done.stderr[-3000:]
  module = tf.saved_model.load(module_dir)
  hf_model = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path / "hf")).eval()
  x = random_inputs(cfg, batch=3, seq=16)
  inputs = {k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
  ours = module(inputs, training=False)
  positions = np.tile(np.arange(4, dtype=np.int32), (3, 1))
  mlm = module.mlm(dict(inputs, masked_lm_positions=positions), training=False)["mlm_logits"]
  with torch.no_grad():
    out = hf_model(**_torch_inputs(x), output_hidden_states=True)
  keep = x["input_mask"].astype(bool)
  _compare(dict(sequence_output=ours["sequence_output"].numpy()[keep],
                mlm_logits=mlm.numpy()),
           dict(sequence_output=out.hidden_states[-1].numpy()[keep],
                mlm_logits=out.logits.numpy()[:, :4]),
           "tf-models module -> convert_checkpoint.py -> AlbertForMaskedLM")


def _agree(results, what, steps, learned):
  """Prints each side's figure at every seed and asserts that both learned (every run over
  `learned`) and that their means agree within the larger of 0.05 and one side's spread."""
  for side, values in results.items():
    print(f"  {what}, {side:12s} {np.mean(values):.4f} (seeds 0-{len(values) - 1}: "
          + ", ".join(f"{v:.4f}" for v in values) + f"; {steps} steps)")
  assert min(min(v) for v in results.values()) > learned
  spread = max(np.ptp(v) for v in results.values())
  assert abs(np.mean(results["albert_tf"]) - np.mean(results["transformers"])) <= max(0.05, spread)


NER_STEPS, NER_BATCH, NER_SEQ, NER_LR, NER_WARMUP = 300, 16, 32, 3e-3, 30


def _torch_fine_tune(model, train, seed, steps, batch, learning_rate, warmup):
  """Trains a transformers model in place as albert_tf's fine-tuning does: AdamW with
  weight decay 0.01 but on LayerNorms and biases, epsilon 1e-6, linear warmup and decay,
  gradients clipped to norm 1, the rows of `train` (tensors by argument name, labels
  included) in a seeded order."""
  torch.manual_seed(seed)
  plain = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
  decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
  optimizer = torch.optim.AdamW([dict(params=decay, weight_decay=0.01),
                                 dict(params=plain, weight_decay=0.0)], lr=learning_rate,
                                eps=1e-6)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, warmup, steps)
  count = len(train["labels"])
  rng = np.random.default_rng(seed)
  order = np.concatenate([rng.permutation(count) for _ in range(steps * batch // count + 1)])
  model.train()
  for step in range(steps):
    rows = torch.tensor(order[step * batch:(step + 1) * batch])
    model(**{k: v[rows] for k, v in train.items()}).loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
  return model.eval()


def _transformers_ner_f1(init_dir, run, seed):
  """AlbertForTokenClassification fine-tuned on `run`'s own training windows (ignored
  positions -100) as run_ner.py trains; dev entity F1 of the predictions merged to one
  tag per word."""
  from albert_tf.data import ner  # pylint: disable=g-import-not-at-top
  from albert_tf.tasks import token_classification  # pylint: disable=g-import-not-at-top

  def tensors(windows):
    return {k: torch.tensor(np.array([getattr(w, a) for w in windows], np.int64)) for k, a in (
        ("input_ids", "input_ids"), ("attention_mask", "input_mask"),
        ("token_type_ids", "segment_ids"), ("labels", "label_ids"))}

  train = tensors(run.windows["train"])
  train["labels"][train["labels"] < 0] = -100
  model = _torch_fine_tune(transformers.AlbertForTokenClassification.from_pretrained(init_dir),
                           train, seed, NER_STEPS, NER_BATCH, NER_LR, NER_WARMUP)
  dev = {k: v for k, v in tensors(run.windows["dev"]).items() if k != "labels"}
  with torch.no_grad():
    predicted = model(**dev).logits.argmax(-1).numpy()
  tags = ner.merge_predictions(run.sentences["dev"], run.windows["dev"], predicted, run.labels)
  return token_classification.entity_metrics([s.tags for s in run.sentences["dev"]], tags)["f1"]


@pytest.mark.slow
def test_ner_fine_tuning_learns_as_transformers_does_from_the_same_start(tmp_path, spm_model):
  """run_ner.py's task and transformers' AlbertForTokenClassification, each fine-tuned from
  the same random start (a Hugging Face directory) on the same windows for the same steps,
  at two seeds: both learn the generated set (names by context), and their mean dev F1
  agree within what two seeds of one side differ by."""
  from albert_tf.data import ner  # pylint: disable=g-import-not-at-top
  from albert_tf.tasks import token_classification  # pylint: disable=g-import-not-at-top
  data = write_conll(str(tmp_path / "conll"))
  labels = ner.label_list(ner.read_sentences(os.path.join(data, "train.txt")))
  results = {"albert_tf": [], "transformers": []}
  for seed in (0, 1):
    keras.utils.set_random_seed(seed)
    init = str(tmp_path / f"init{seed}")
    model = albert_tf.AlbertTokenClassifier(
        albert_tf.AlbertEncoder(albert_tf.AlbertConfig.from_dict(NER_CFG)), len(labels))
    _albert_tf_outputs(model, random_inputs(NER_CFG, batch=1, seq=8))
    albert_tf.save_hf_model(model, init, labels=labels)
    run = token_classification.NerRun(token_classification.NerOptions(
        data_dir=data, output_dir=str(tmp_path / f"run{seed}"), albert_directory=init,
        spm_model_file=spm_model, max_seq_length=NER_SEQ, train_batch_size=NER_BATCH,
        learning_rate=NER_LR, train_step=NER_STEPS, warmup_step=NER_WARMUP,
        save_checkpoints_steps=NER_STEPS, do_train=True, do_eval=True, progress=False,
        seed=seed, dropout_prob=0.1))
    results["albert_tf"].append(run.run()["eval"]["f1"])
    results["transformers"].append(_transformers_ner_f1(init, run, seed))
  _agree(results, "NER dev entity F1", NER_STEPS, learned=0.5)


KEYS = ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")


def test_the_fidelity_figures(tmp_path):
  """docs/fidelity.md's table: albert_tf against the float64 NumPy implementation of the
  original equations (fed an original-format TF1 checkpoint), tf-models-official's
  AlbertEncoder restored by its own converter, XLA, and the TF-Hub SavedModel through
  hub.KerasLayer (ALBERT-base included). `make test` asserts each; here they are printed."""
  import original_albert  # pylint: disable=g-import-not-at-top
  from common import SQUARE, encoder_inputs  # pylint: disable=g-import-not-at-top
  print("  albert_tf (float32) vs the NumPy reference of the original (float64):")
  for name, cfg in (("grouped: L=3, G=2, inner=2", GROUPED), ("full sharing", TINY),
                    ("E == H (no projection)", SQUARE)):
    weights = original_albert.random_weights(cfg)
    prefix = original_albert.write_checkpoint(str(tmp_path / name.split(":")[0].split()[0]),
                                              weights)
    x = random_inputs(cfg)
    want = original_albert.forward(cfg, weights, x["input_word_ids"], x["input_mask"],
                                   x["input_type_ids"], x["masked_lm_positions"])
    model = albert_tf.AlbertPretrainer(cfg)
    albert_tf.load_original_checkpoint(model, prefix)
    got = model(x)
    _compare({k: got[k].numpy() for k in KEYS}, {k: want[k] for k in KEYS}, name)

  from official.legacy.albert import configs as tfm_configs  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter  # pylint: disable=g-import-not-at-top
  weights = original_albert.random_weights(TINY, heads=False, seed=11)
  (tmp_path / "v1").mkdir()
  (tmp_path / "v2").mkdir()
  v1 = original_albert.write_checkpoint(str(tmp_path / "v1" / "model.ckpt"), weights)
  tfm_config = tfm_configs.AlbertConfig.from_dict(TINY)
  converter.convert_checkpoint(tfm_config, str(tmp_path / "v2" / "ckpt"), v1, "encoder")
  theirs = converter._create_albert_model(tfm_config)  # pylint: disable=protected-access
  tf.train.Checkpoint(encoder=theirs).read(tf.train.latest_checkpoint(str(tmp_path / "v2")))
  ours = albert_tf.AlbertEncoder(TINY)
  albert_tf.load_original_checkpoint(ours, v1)
  x = encoder_inputs(random_inputs(TINY, batch=4, seq=16))
  sequence, pooled = theirs([x["input_word_ids"], x["input_mask"], x["input_type_ids"]])
  out = ours(x)
  _compare(dict(sequence_output=out["sequence_output"].numpy(),
                pooled_output=out["pooled_output"].numpy()),
           dict(sequence_output=sequence.numpy(), pooled_output=pooled.numpy()),
           "tf-models-official AlbertEncoder, same TF1 checkpoint")

  model = albert_tf.AlbertPretrainer(GROUPED)
  x = {k: tf.constant(v) for k, v in random_inputs(GROUPED).items()}
  eager = model(x)
  xla = tf.function(lambda inputs: model(inputs), jit_compile=True)(x)  # pylint: disable=unnecessary-lambda
  _compare({k: xla[k].numpy() for k in KEYS}, {k: eager[k].numpy() for k in KEYS},
           "XLA (jit_compile=True) vs eager")

  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
  from albert_tf.export import tf_hub  # pylint: disable=g-import-not-at-top
  for i, (name, cfg, batch, seq) in enumerate((
      ("grouped", GROUPED, 3, 11), ("full sharing", TINY, 3, 11),
      ("ALBERT-base (random weights)", albert_tf.PRESETS["base_v2"], 2, 128))):
    model = albert_tf.AlbertPretrainer(cfg)
    path = str(tmp_path / "hub" / str(i))
    tf_hub.export_encoder(model, path)
    x = random_inputs(dict(model.config.to_dict()), batch=batch, seq=seq)
    want = model(x)
    got = dict(hub.KerasLayer(path, trainable=True)(encoder_inputs(x)))
    loaded = hub.load(path)
    got["mlm_logits"] = loaded.mlm(x)["mlm_logits"]
    got["sop_logits"] = loaded.sop(encoder_inputs(x))["sop_logits"]
    _compare({k: got[k].numpy() for k in KEYS}, {k: want[k].numpy() for k in KEYS},
             f"TF-Hub SavedModel via hub.KerasLayer, {name}")


TOPIC_STEPS, TOPIC_BATCH, TOPIC_SEQ, TOPIC_LR, TOPIC_WARMUP = 800, 32, 32, 5e-3, 80


def _topic_encodings(tokenizer, rows):
  """transformers' own tokenizer on the rows' texts, as a transformers user feeds them (one
  segment: no token_type_ids, which are all 0)."""
  return {k: torch.tensor(v) for k, v in tokenizer(
      [r["text"] for r in rows], padding="max_length", truncation=True,
      max_length=TOPIC_SEQ).items()}


@pytest.mark.slow
def test_multi_label_fine_tuning_learns_as_transformers_does_and_its_export_reads_there(
    tmp_path, spm_model):
  """run_classifier.py on a multi-label JSON Lines file against transformers'
  AlbertForSequenceClassification(problem_type="multi_label_classification"), each
  fine-tuned from the same start (a Hugging Face directory) with the same steps, batch and
  schedule, at three seeds: the mean dev micro-F1 agree within what the seeds spread.
  Then the first run, converted by convert_checkpoint.py --output_format=hf: transformers'
  logits within 1e-5 of the run's, and its pipeline("text-classification", top_k=None)
  (with its default tokenizer) gives the label sets of test_predictions.jsonl on the whole
  test file, whose texts are as real ones are written."""
  import json  # pylint: disable=g-import-not-at-top
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  from albert_tf.tasks import classification  # pylint: disable=g-import-not-at-top
  from albert_tf.text.huggingface import save_hf_tokenizer  # pylint: disable=g-import-not-at-top
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  from albert_tf.training import metrics  # pylint: disable=g-import-not-at-top
  from test_glue import CFG  # pylint: disable=g-import-not-at-top
  from test_own_data import TOPICS, jsonl, topic_rows  # pylint: disable=g-import-not-at-top
  labels = sorted(TOPICS)
  rng = np.random.default_rng(0)
  rows = {split: topic_rows(n, rng) for split, n in (("train", 800), ("dev", 200), ("test", 60))}
  # The test file as real files are: capitals, hyphens, parentheses, quotes, decimals,
  # digit commas, accents (the labels the run predicts for them are what counts).
  decorations = ["{} (v{}.5)", "``{}'' – {} units", "{}: 1,2{} pieces, ÉLAN-made",
                 "NEW! {} — café edition {}", "{}; naïve (re)design, ''v{}''"]
  for i, r in enumerate(rows["test"]):
    r["text"] = decorations[i % 5].format(r["text"].upper() if i % 3 == 0 else
                                          r["text"].capitalize(), i % 10)
  files = {split: jsonl(tmp_path / f"{split}.jsonl", r) for split, r in rows.items()}
  truth = np.array([[t in r["label"] for t in labels] for r in rows["dev"]])
  results = {"albert_tf": [], "transformers": []}
  for seed in (0, 1, 2):
    keras.utils.set_random_seed(seed)
    init = str(tmp_path / f"init{seed}")
    model = albert_tf.AlbertClassifier(albert_tf.AlbertEncoder(albert_tf.AlbertConfig.from_dict(CFG)),
                                       len(labels))
    _albert_tf_outputs(model, random_inputs(CFG, batch=1, seq=8))
    albert_tf.save_hf_model(model, init, labels=labels, problem_type="multi_label_classification")
    save_hf_tokenizer(FullTokenizer(spm_model_file=spm_model), init)
    out = tmp_path / f"run{seed}"
    result = classification.run(classification.ClassifierOptions(
        train_file=files["train"], dev_file=files["dev"], test_file=files["test"],
        id_column="id", output_dir=str(out), albert_directory=init, max_seq_length=TOPIC_SEQ,
        train_batch_size=TOPIC_BATCH, learning_rate=TOPIC_LR, train_step=TOPIC_STEPS,
        warmup_step=TOPIC_WARMUP, save_checkpoints_steps=TOPIC_STEPS, do_train=True,
        do_eval=True, do_predict=seed == 0, progress=False, seed=seed))
    results["albert_tf"].append(result["eval"]["micro_f1"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(init)
    train = _topic_encodings(tokenizer, rows["train"])
    train["labels"] = torch.tensor([[float(t in r["label"]) for t in labels]
                                    for r in rows["train"]])
    hf_model = transformers.AlbertForSequenceClassification.from_pretrained(init)
    assert hf_model.config.problem_type == "multi_label_classification"
    _torch_fine_tune(hf_model, train, seed, TOPIC_STEPS, TOPIC_BATCH, TOPIC_LR, TOPIC_WARMUP)
    with torch.no_grad():
      chosen = torch.sigmoid(hf_model(**_topic_encodings(tokenizer, rows["dev"])).logits) > 0.5
    results["transformers"].append(
        metrics.multi_label_metrics(truth, chosen.numpy())["micro_f1"])
  _agree(results, "multi-label dev micro-F1", TOPIC_STEPS, learned=0.7)

  done = run_script("convert_checkpoint.py", f"--model={tmp_path / 'run0'}",
                    "--output_format=hf", f"--output_dir={tmp_path / 'hf'}")
  assert done.returncode == 0, done.stderr[-3000:]
  exported = transformers.AlbertForSequenceClassification.from_pretrained(
      str(tmp_path / "hf")).eval()
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
  test = _topic_encodings(tokenizer, rows["test"])
  with torch.no_grad():
    theirs = exported(**test).logits.numpy()
  run = runs.Run.read(str(tmp_path / "run0"))
  ours = run.model()({"input_word_ids": test["input_ids"].numpy().astype(np.int32),
                      "input_mask": test["attention_mask"].numpy().astype(np.int32),
                      "input_type_ids": np.zeros_like(test["input_ids"].numpy(), np.int32)},
                     training=False).numpy()
  _compare(dict(logits=ours), dict(logits=theirs), "multi-label run -> AlbertForSequenceClassification")
  # (truncation=True: cut at the run's own length, the export's model_max_length)
  classify = transformers.pipeline("text-classification", model=str(tmp_path / "hf"), top_k=None)
  assert classify.tokenizer.model_max_length == TOPIC_SEQ
  found = [sorted(s["label"] for s in scores if s["score"] > 0.5)
           for scores in classify([r["text"] for r in rows["test"]], truncation=True)]
  predicted = [json.loads(line)["labels"]
               for line in open(tmp_path / "run0" / "test_predictions.jsonl", encoding="utf-8")]
  assert found == predicted
  print(f"  pipeline(top_k=None): the label sets of test_predictions.jsonl on all {len(found)} "
        "test rows")


def test_auto_tokenizer_on_a_wordpiece_export_gives_albert_tf_s_ids(tmp_path):
  """The Chinese releases' vocab_chinese.txt, exported: transformers' default tokenizer
  (BERT's, reading the export's tokenizer.json) gives albert_tf's ids on every text."""
  from albert_tf.text.huggingface import save_hf_tokenizer  # pylint: disable=g-import-not-at-top
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  from common import CORPUS, write_wordpiece_vocab  # pylint: disable=g-import-not-at-top
  texts = CORPUS + ["2008年北京奥运会, Michael Phelps!", "ＡＢＣ１２３。「引用」"]
  write_wordpiece_vocab(tmp_path / "vocab.txt", texts)
  albert = FullTokenizer(vocab_file=str(tmp_path / "vocab.txt"))
  save_hf_tokenizer(albert, str(tmp_path / "hf"))
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
  for text in texts:
    assert tokenizer(text, add_special_tokens=False)["input_ids"] == albert.encode(text), text
  print(f"  transformers' {type(tokenizer).__name__} on a WordPiece export: albert_tf's ids "
        f"on all {len(texts)} texts")


@pytest.mark.parametrize("kind", ["single", "regression", "race", "squad", "ner"])
def test_every_kind_answers_in_transformers_as_do_predict(kind, start, tmp_path):
  """tests/test_doors.py's runs (the realistic texts as sentence pairs, texts to score,
  articles, contexts and sentences), written by convert_checkpoint.py --output_format=hf
  and read by transformers with its default tokenizer: pipeline("text-classification")'s
  labels and probabilities of sentence pairs and its scores (within 1e-5; the multi-label
  pipeline: the test above); AlbertForMultipleChoice's choices and
  probabilities, AlbertForQuestionAnswering's best spans (transformers 5 has no
  question-answering pipeline: the span of the highest start + end logit in the context,
  in the characters its offsets give) and pipeline("token-classification",
  aggregation_strategy="first") on the words are --do_predict's."""
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  from albert_tf.commands import convert  # pylint: disable=g-import-not-at-top
  from albert_tf.data import ner, race  # pylint: disable=g-import-not-at-top
  from test_doors import SEQ, classifier_run, reader_or_chooser_run, tagger_run  # pylint: disable=g-import-not-at-top
  if kind == "ner":
    run, _, texts, words, predicted = tagger_run(start, tmp_path)
  elif kind in ("single", "regression"):
    run, _, want, fields = classifier_run(kind, start, tmp_path)
  else:
    run, rows, want, _ = reader_or_chooser_run(kind, start, tmp_path, max_qa_length=32)
  hf = str(tmp_path / "hf")
  convert.run(convert.ConvertOptions(model=str(run), output_format="hf", output_dir=hf))
  tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
  record = runs.Run.read(str(run))
  ours = record.tokenizer()
  if kind in ("single", "regression"):
    classify = transformers.pipeline("text-classification", model=hf, top_k=None,
                                     function_to_apply="none" if kind == "regression" else None)
    # (the rows transformers packs as the run does: not an empty second text, nor a pair
    # cut to an odd budget, where its rules differ: docs/huggingface.md)
    from albert_tf.text.packing import pack_texts  # pylint: disable=g-import-not-at-top
    asked = [(f, w) for f, w in zip(fields, want)
             if tokenizer(*f, truncation=True, max_length=SEQ)["input_ids"] ==
             [i for i, m in zip(*(pack_texts(ours, f, SEQ)[k] for k in ("input_word_ids",
                                                                       "input_mask"))) if m]]
    got = classify([dict(text=f[0], text_pair=f[1]) if len(f) > 1 else f[0]
                    for f, _ in asked], truncation=True)
    for (f, w), scores in zip(asked, got):
      scores = {s["label"]: s["score"] for s in scores}
      if kind == "regression":
        assert_close(list(scores.values()), [w["score"]], 1e-5)
      else:
        assert max(scores, key=scores.get) == w["label"], f
        assert_close([scores[k] for k in w["probabilities"]], list(w["probabilities"].values()),
                     1e-5)
    print(f"  {kind}: the pipeline's answers are --do_predict's on the {len(asked)} rows of "
          f"{len(want)} it packs as the run does")
    assert len(asked) >= len(want) // 2
  elif kind == "race":
    model = transformers.AlbertForMultipleChoice.from_pretrained(hf).eval()
    same_ids, asked = 0, 0
    for r, w in zip(rows, want):
      qa = [race.qa_text(r["question"], o) for o in r["options"]]
      if max(len(ours.encode(q)) for q in qa) > 32:
        continue     # (run_race.py keeps a question-with-option's last --max_qa_length)
      asked += 1
      x = tokenizer([r["article"]] * len(qa), qa, truncation="only_first", max_length=SEQ,
                    padding="max_length", return_tensors="pt")
      packed = [race.pack_choice(ours.encode(r["article"]), ours.encode(q), SEQ, 32, ours)
                for q in qa]
      same_ids += x["input_ids"].tolist() == [p["input_ids"] for p in packed]
      with torch.no_grad():
        p = torch.softmax(model(**{k: v[None] for k, v in x.items()}).logits[0], -1).numpy()
      assert int(p.argmax()) == w["choice"], r
      assert_close(p, w["probabilities"], 1e-5)
    print(f"  RACE: AlbertForMultipleChoice's choices and probabilities (within 1e-5) on "
          f"the {asked} questions of {len(rows)} whose options fit, the same ids on {same_ids}")
    assert asked >= len(rows) // 2 and same_ids == asked
  elif kind == "squad":
    from albert_tf.data import squad  # pylint: disable=g-import-not-at-top
    model = transformers.AlbertForQuestionAnswering.from_pretrained(hf).eval()
    same, asked = 0, 0
    for r, w in zip(rows, want):
      x = tokenizer(r["question"], r["context"], truncation="only_second", max_length=SEQ,
                    return_offsets_mapping=True, return_overflowing_tokens=True,
                    padding="max_length", return_tensors="pt")
      features = list(squad.convert_examples(
          [squad.SquadExample(r["id"], r["question"], r["context"])], ours, SEQ, 16, 12, False))
      # (the questions the run did not cut at --max_query_length=12, in one window: the
      # run's n-best across windows is run_squad.py's own)
      if len(x["input_ids"]) > 1 or len(features) > 1 or len(ours.encode(r["question"])) > 12:
        continue
      asked += 1
      assert x["input_ids"][0].tolist() == features[0][0]["input_ids"], r
      offsets = x.pop("offset_mapping")[0].tolist()
      context = [i for i, s in enumerate(x.sequence_ids(0)) if s == 1]
      x.pop("overflow_to_sample_mapping", None)
      with torch.no_grad():
        out = model(**x)
      start_logits, end_logits = out.start_logits[0].numpy(), out.end_logits[0].numpy()
      # run_squad.py's rule: the 20 best starts and ends, in the context, at most 30 pieces
      starts = [i for i in np.argsort(-start_logits)[:20] if i in context]
      ends = [i for i in np.argsort(-end_logits)[:20] if i in context]
      best = max(((s, e) for s in starts for e in ends if s <= e < s + 30),
                 key=lambda se: start_logits[se[0]] + end_logits[se[1]])
      # The span's characters by albert_tf's offsets of the context's pieces: the answer.
      _, starts, ends = ours.tokenize_with_offsets(r["context"])
      first = context[0]
      assert squad.span_text(r["context"], starts, ends, best[0] - first,
                             best[1] - first).strip() == w, (r, w)
      # By transformers' own offsets: the same, but where the answer starts or ends with a
      # piece of `''` or ``, which ALBERT reads as one `"` and tokenizers' Replace
      # normalizer maps to one of the two characters (docs/huggingface.md).
      answer = r["context"][offsets[best[0]][0]:offsets[best[1]][1]].strip()
      same += answer == w
      assert answer == w or w.startswith(("''", "``")) or w.endswith(("''", "``")), (r, w)
    print(f"  SQuAD: AlbertForQuestionAnswering's best span is --do_predict's answer on all "
          f"{asked} questions asked in one window; by transformers' offsets on {same}")
    assert asked >= 8
  else:
    # Each token's tag (aggregation_strategy="none"), read at each word's first piece as
    # run_ner.py reads it. (transformers' "first" and "simple" aggregations group pieces
    # into words by their offsets, and take a lone "▁" piece, which a word after
    # whitespace often starts with, for a word of its own.)
    tag = transformers.pipeline("token-classification", model=hf, ignore_labels=[])
    asked = 0
    for ws, tags in zip(words, predicted):
      x = tokenizer([ws], is_split_into_words=True)
      if len(x["input_ids"][0]) > SEQ:
        continue      # (one window: run_ner.py's windows choose a word's by its context)
      asked += 1
      assert x["input_ids"][0] == [ours.cls_id] + [i for w in ner.word_pieces(ours, ws)
                                                   for i in w] + [ours.sep_id], ws
      by_index = {t["index"]: t["entity"] for t in tag([ws], is_split_into_words=True)[0]}
      word_ids = x.word_ids(0)
      first = [word_ids.index(k) for k in range(len(ws))]
      assert [by_index[i] for i in first] == tags, ws
      assert ner.entities([by_index[i] for i in first], record.settings.tag_scheme) == \
          ner.entities(tags, record.settings.tag_scheme)
    assert asked >= 3
    print(f"  NER: the pipeline's tags at each word's first piece are --do_predict's in the "
          f"{asked} sentences of {len(words)} that fit one window")


def test_docs_transformers_blocks_apply_tuned_thresholds_as_the_run(start, tmp_path,
                                                                    monkeypatch):
  """docs/own_data.md's transformers block, on the Hugging Face export of a run with
  --multi_label_threshold=tune (tests/test_doors.py's multi-label run): its label sets
  are the run's (albert_tf.Predictor's, which applies the run's thresholds) for the
  block's texts.
  (tests/test_readme.py runs every other block; the ones that import transformers run
  here.)"""
  from albert_tf import Predictor  # pylint: disable=g-import-not-at-top
  from albert_tf.commands import convert  # pylint: disable=g-import-not-at-top
  from test_doors import classifier_run  # pylint: disable=g-import-not-at-top
  from test_readme import needs_transformers, python_blocks  # pylint: disable=g-import-not-at-top
  blocks = {place: code for place, code in python_blocks().items() if needs_transformers(code)}
  assert list(blocks) and all(p.startswith("docs/own_data.md") for p in blocks), list(blocks)
  run = classifier_run("multi", start, tmp_path)[0]   # (its thresholds tuned)
  convert.run(convert.ConvertOptions(model=str(run), output_format="hf",
                                     output_dir=str(tmp_path / "hf_topics")))
  monkeypatch.chdir(tmp_path)
  for place, code in blocks.items():
    scope = {"__name__": "docs"}
    exec(compile(code, place, "exec"), scope)  # pylint: disable=exec-used
    want = Predictor.load(str(run), dtype="float32").predict(scope["texts"])
    # (the pipeline lists a text's labels by score)
    assert [sorted(found) for found in scope["labels"]] == [sorted(w["labels"]) for w in want]
    at_half = [[n for n, p in w["probabilities"].items() if p > 0.5] for w in want]
    print(f"  {place}: the run's label sets {scope['labels']} (at 0.5: {at_half})")
    assert [sorted(found) for found in scope["labels"]] != at_half   # (the thresholds count)
