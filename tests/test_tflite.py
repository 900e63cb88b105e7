"""TFLite (LiteRT) export: raw text in, the tokenizer's ids, the SavedModel's outputs."""

import json
import os
import pathlib
import shutil
import sys
import unicodedata

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from ai_edge_litert.interpreter import InterpreterWithCustomOps
from albert_tf import AlbertConfig, AlbertPretrainer, runs, save_original_checkpoint
from albert_tf.data import glue
from albert_tf.export import tflite
from albert_tf.export.serving import export_classifier
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertClassifier
from albert_tf.tasks import classification as classifier
from albert_tf.commands import export_tflite
from albert_tf.text import lite, packing, standalone, tokenization
from common import (CORPUS, assert_close, fuzz_texts, write_classifier_run,
                    write_off_grid_vocabulary, write_release)
from test_glue import CFG, SEQ, write_keyword_task
from test_squad import TRICKY


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return tokenization.FullTokenizer(spm_model_file=spm_model)


def litert(model_content):
  """A LiteRT interpreter with the TF Text ops, as the README shows it."""
  import tensorflow_text  # pylint: disable=g-import-not-at-top
  return InterpreterWithCustomOps(
      custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
      model_content=model_content)


def lite_answers(lite_file, names, fields, labels, threshold=0.5):
  """A classifier's .tflite file's answers, a call for each example (`fields`: its texts,
  fed to the signature's inputs `names`), as predict.py writes them: `score` without
  `labels`; else the probabilities with `labels` over `threshold` (multi-label, given as a
  number or one per label) or the `label`."""
  runner = litert(pathlib.Path(lite_file).read_bytes()).get_signature_runner()
  got = []
  for f in fields:
    out = runner(**{n: np.array([t.encode()], dtype=object) for n, t in zip(names, f)})
    if not labels:
      got.append(dict(score=float(np.ravel(out["score"])[0])))
      continue
    p = np.ravel(out["probabilities"])
    if threshold is None:
      got.append(dict(label=labels[int(p.argmax())], probabilities=dict(zip(labels, map(float, p)))))
    else:
      over = p > np.broadcast_to(threshold, p.shape)
      got.append(dict(labels=[l for l, x in zip(labels, over) if x],
                      probabilities=dict(zip(labels, map(float, p)))))
  return got


@pytest.fixture(scope="module")
def lite_ids(tokenizer):
  """(eager, LiteRT) functions text -> ids of the TFLite-convertible tokenizer."""
  module = lite.LiteTokenizer(tokenizer)
  serve = tf.function(lambda text: {"ids": module(text)},
                      input_signature=[tf.TensorSpec([1], tf.string, name="text")])
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [serve.get_concrete_function()], module)
  converter.allow_custom_ops = True
  runner = litert(converter.convert()).get_signature_runner()
  return (lambda t: module(tf.constant([t])).numpy().tolist(),
          lambda t: runner(text=np.array([t.encode()], dtype=object))["ids"].tolist())


def test_ids_equal_the_python_tokenizer_on_the_tokenization_corpus(tokenizer, lite_ids):
  """Accents, combining marks, full-width forms, odd spaces, `` and '', digit commas."""
  texts = CORPUS + TRICKY[:3] + ["İstanbul straße 10:30", "ﬁnal 1,000,000 and 3,5,", "한국어 텍스트"]
  eager, on_device = lite_ids
  for text in texts:
    assert eager(text) == tokenizer.encode(text), text
    assert on_device(text) == tokenizer.encode(text), text


def _final_sigma(text):
  """Whether Python's `str.lower` turns some Σ of `text` into ς (word-final)."""
  return text.lower() != text.replace("\u03a3", "\u03c3").lower()


def test_on_fuzz_every_difference_is_a_named_limitation(tokenizer, lite_ids):
  """2,000 random strings: the ids are Python's but for a word-final Σ, and a few runs of
  one repeated character after a user-defined symbol (`"~~~~`), segmented as the same
  pieces in another order: SentencePiece's bonus for the symbol (-0.1) is off
  create_vocab.py's grid of scores, and the two implementations round the sums after it
  apart. (1 of the 1,473 valid strings here; 79 with the scores unrounded.)"""
  _, on_device = lite_ids
  texts = [t for t in fuzz_texts(2000) if _valid(t)]
  other, ties = [], []
  for text in texts:
    got, want = on_device(text), tokenizer.encode(text)
    if got == want or _final_sigma(text):
      continue
    (ties if sorted(got) == sorted(want) else other).append(text)
  assert len(texts) > 1400 and not other, f"{len(other)} unexplained, e.g. {other[:2]!r}"
  assert len(ties) <= 0.005 * len(texts), (len(ties), ties[:3])


def _valid(text):
  try:
    text.encode("utf-8")
    return True
  except UnicodeEncodeError:
    return False


def test_albert_normalization_leaves_unassigned_and_private_use_code_points_alone():
  """The on-device character map asks ALBERT's normalization about assigned code points
  only: every unassigned or private-use one (every 3rd beyond the BMP) must map to itself,
  lower-cased or not."""
  others = [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF
            and (cp < 0x10000 or cp % 3 == 0)
            and unicodedata.category(chr(cp)) in ("Cn", "Co")]
  assert len(others) > 300_000
  for lower in (True, False):
    changed = [c for c in others if standalone._albert_normalize_char(c, lower) != c]
    assert not changed, [hex(ord(c)) for c in changed[:5]]
  assert standalone._albert_normalize_char("\u00c9", True) == "e"   # (an assigned one: changed)


def test_limitation_word_final_capital_sigma(tokenizer, spm_model):
  """Python lower-cases a word-final Σ to ς (it looks at the neighbours); on device it
  becomes σ. The README names this; if it ever matches, update the README. (Pieces,
  not ids: the test vocabulary has no Greek, so both are <unk>.)"""
  with open(spm_model, "rb") as f:
    on_device = spm.SentencePieceProcessor(model_proto=lite.albert_sentencepiece_model(f.read()))
  text = "ΟΔΟΣ ΣΑΣ"
  assert "".join(tokenizer.tokenize(text)) == "\u2581οδος\u2581σας"
  assert "".join(on_device.encode(text, out_type=str)) == "\u2581οδοσ\u2581σασ"
  assert "".join(on_device.encode("ΟΔΟΣ", out_type=str)) != "".join(tokenizer.tokenize("ΟΔΟΣ"))


def test_runs_of_one_character_tie_alike_unless_the_scores_are_off_the_grid(
    tokenizer, lite_ids, spm_model, tmp_path):
  """A long run of one character (here after a character the vocabulary lacks) has
  segmentations of equal score, the same pieces in another order. With create_vocab.py's
  scores (multiples of 1/64) FastSentencepieceTokenizer and SentencePiece pick the same;
  with the scores moved off that grid (as a released model's are), they pick apart on
  some runs, always the same pieces reordered: docs/on_device.md names this."""
  _, on_device = lite_ids
  texts = ["\u4e00" + c * n for c in "~=" for n in range(2, 40)]
  assert [t for t in texts if on_device(t) != tokenizer.encode(t)] == []
  off_grid = tokenization.FullTokenizer(
      spm_model_file=write_off_grid_vocabulary(spm_model, tmp_path / "off_grid"))
  module = lite.LiteTokenizer(off_grid)
  ids = lambda text: module(tf.constant([text])).numpy().tolist()
  differing = [t for t in texts if ids(t) != off_grid.encode(t)]
  assert differing, "runs off the grid tokenize alike now: update docs/on_device.md"
  for text in differing:
    assert sorted(ids(text)) == sorted(off_grid.encode(text)), text


@pytest.mark.parametrize("seq_length", [3, 4, 9, 16])
def test_pack_one_equals_pack_inputs(seq_length):
  rng = np.random.default_rng(seq_length)
  for _ in range(20):
    a = rng.integers(5, 50, rng.integers(0, 12)).tolist()
    b = rng.integers(5, 50, rng.integers(0, 12)).tolist()
    for segments in ([a], [a, b]):
      want = packing.pack_inputs(segments[0], segments[1] if len(segments) == 2 else None,
                                 seq_length, 2, 3, 0)
      got = lite.pack_one([tf.constant(s, tf.int32) for s in segments], seq_length, 2, 3, 0)
      for k in want:
        assert got[k].numpy().tolist() == [want[k]], (k, segments)


# ----------------------------------------------------------------------------- classifiers

@pytest.fixture(scope="module")
def mrpc_run(tmp_path_factory, spm_model):
  """A tiny classifier fine-tuned on the learnable MRPC-format task, with its SavedModel
  (seeded by conftest's module reset, whatever ran before)."""
  root = tmp_path_factory.mktemp("tflite")
  AlbertConfig.from_dict(CFG).to_json_file(str(root / "albert_config.json"))
  init = save_original_checkpoint(AlbertPretrainer(CFG), str(root / "init" / "model.ckpt-best"))
  data = write_keyword_task(str(root / "MRPC"))
  opts = classifier.ClassifierOptions(
      data_dir=data, output_dir=str(root / "out"), task_name="MRPC",
      albert_config_file=str(root / "albert_config.json"), init_checkpoint=init,
      spm_model_file=spm_model, max_seq_length=SEQ, train_batch_size=16, learning_rate=2e-3,
      train_step=200, warmup_step=20, save_checkpoints_steps=100, log_steps=50,
      progress=False, do_train=True, do_eval=True, export_dir=str(root / "serving"))
  classifier.run(opts)
  dev = glue.read_examples(data, glue.get_task("MRPC"), "dev")
  saved = tf.saved_model.load(str(root / "serving")).signatures["serving_default"]
  want = np.concatenate([saved(sentence1=tf.constant([e.text_a for e in dev[i:i + 50]]),
                               sentence2=tf.constant([e.text_b for e in dev[i:i + 50]])
                               )["probabilities"].numpy() for i in range(0, len(dev), 50)])
  labels = np.array([int(e.label) for e in dev])
  # Examples the TFLite tokenizer gives Python's ids: all but pydoc's heading underlines
  # ("=====", "*****"), the README's named limitation of tied pieces.
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  module = lite.LiteTokenizer(tokenizer)
  same_ids = np.array([all(module(tf.constant([t])).numpy().tolist() == tokenizer.encode(t)
                           for t in (e.text_a, e.text_b)) for e in dev])
  return dict(root=root, data=data, dev=dev, want=want, labels=labels, same_ids=same_ids)


def _convert(run, quantization):
  """The run's file of `quantization`, converted once per module."""
  out = run["root"] / f"{quantization}.tflite"
  if not out.exists():
    # int8 calibrates on the run's own training data (its record says where): no flag.
    result = export_tflite.run(export_tflite.TFLiteOptions(
        model=str(run["root"] / "out"), output_file=str(out), quantization=quantization))
    assert result["tflite"]["size_mb"] * 2**20 == pytest.approx(os.path.getsize(out))
  return out


def _dev_probabilities(path, dev):
  runner = litert(path.read_bytes()).get_signature_runner()
  assert set(runner.get_input_details()) == {"sentence1", "sentence2"}
  return np.concatenate([runner(sentence1=np.array([e.text_a.encode()], dtype=object),
                                sentence2=np.array([e.text_b.encode()], dtype=object)
                                )["probabilities"] for e in dev])


@pytest.mark.slow
@pytest.mark.parametrize("quantization,accuracy_points", [
    ("none", 0), ("float16", 1), ("dynamic_int8", 1), ("int8", 2)])
def test_each_quantization_runs_on_raw_text_with_litert(mrpc_run, quantization,
                                                        accuracy_points):
  got = _dev_probabilities(_convert(mrpc_run, quantization), mrpc_run["dev"])
  want, labels = mrpc_run["want"], mrpc_run["labels"]
  saved_accuracy = np.mean(want.argmax(-1) == labels)
  assert saved_accuracy > 0.9, "the fixture did not learn the task"
  agreement = np.mean(got.argmax(-1) == want.argmax(-1))
  accuracy = np.mean(got.argmax(-1) == labels)
  if quantization == "none":
    assert mrpc_run["same_ids"].all(), mrpc_run["same_ids"].mean()
    assert_close(got, want, 1e-4)
  print(f"{quantization}: labels as the SavedModel's on {agreement:.3f} of dev, accuracy "
        f"{accuracy:.3f} (SavedModel {saved_accuracy:.3f})")
  assert agreement >= 0.99, agreement
  assert accuracy >= saved_accuracy - accuracy_points / 100, (accuracy, saved_accuracy)


@pytest.mark.slow
def test_quantized_files_are_smaller(mrpc_run):
  sizes = {q: os.path.getsize(_convert(mrpc_run, q))
           for q in ("none", "float16", "dynamic_int8")}
  assert sizes["dynamic_int8"] < sizes["float16"] < sizes["none"], sizes


def test_bad_inputs_name_the_flag_and_touch_nothing(mrpc_run, tmp_path, spm_model):
  run_dir = mrpc_run["root"] / "out"
  before = sorted(os.listdir(run_dir))

  def options(**kwargs):
    base = dict(model_dir=str(run_dir), output_file=str(tmp_path / "m.tflite"))
    return export_tflite.TFLiteOptions(**dict(base, **kwargs))

  existing = tmp_path / "mine.tflite"
  existing.write_bytes(b"the user's file")
  with pytest.raises(FileExistsError, match="--output_file=.*mine.tflite exists"):
    export_tflite.run(options(output_file=str(existing)))
  assert existing.read_bytes() == b"the user's file"
  # (options() names the run by --model_dir, the old name, which errors name as given)
  with pytest.raises(FileNotFoundError, match="--data_dir=.*nowhere: .*nowhere not found"):
    export_tflite.run(options(quantization="int8", data_dir=str(tmp_path / "nowhere")))
  with pytest.raises(FileNotFoundError, match=r"--model_dir=.* is none of the model directories "
                     rf".*; nor a run's --output_dir \(no {runs.RECORD}\)"):
    export_tflite.run(options(model_dir=str(tmp_path)))
  squad = tmp_path / "squad_run"
  squad.mkdir()
  runs.write_run(str(squad), dict(task="SQuAD v1.1", model=CFG))
  with pytest.raises(ValueError, match="holds a 'SQuAD v1.1' run, not a run_classifier.py"):
    export_tflite.run(options(model_dir=str(squad)))
  moved = tmp_path / "moved_run"
  shutil.copytree(run_dir, moved)
  record = runs.read_record(str(moved))
  runs.write_run(str(moved), dict(record, spm_model_file=str(tmp_path / "gone.model")))
  with pytest.raises(FileNotFoundError, match="vocabulary of --model_dir=.*gone.model"):
    export_tflite.run(options(model_dir=str(moved)))
  with pytest.raises(ValueError, match="--max_seq_length=99 exceeds"):
    export_tflite.run(options(max_seq_length=99))
  assert not (tmp_path / "m.tflite").exists()
  assert sorted(os.listdir(run_dir)) == before


def test_bare_encoder_from_a_release_and_from_its_tf_hub_export(tmp_path, spm_model):
  """--albert_directory and --hub_module: sequence and pooled outputs of raw text on
  device equal the encoder's on FullTokenizer's packed ids."""
  cfg = dict(CFG, max_position_embeddings=64)
  release = tmp_path / "albert_tiny"
  pretrainer = write_release(str(release), cfg, spm_model)
  from albert_tf.export.tf_hub import export_encoder  # pylint: disable=g-import-not-at-top
  hub_dir = export_encoder(pretrainer, str(tmp_path / "hub"), spm_model_file=spm_model)
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  pair = ("ＦＵＬＬ width, naïve 1,000 words.", "A second segment, shorter.")
  want = pretrainer.encoder({k: tf.constant([v]) for k, v in packing.pack_inputs(
      tokenizer.encode(pair[0]), tokenizer.encode(pair[1]), 32, tokenizer.cls_id,
      tokenizer.sep_id, tokenizer.pad_id).items()})
  for flag, source in (("albert_directory", release), ("hub_module", hub_dir)):
    path = tmp_path / f"{flag}.tflite"
    export_tflite.run(export_tflite.TFLiteOptions(**{flag: str(source)}, output_file=str(path),
                                              quantization="none", segments=2,
                                              max_seq_length=32))
    runner = litert(path.read_bytes()).get_signature_runner()
    assert set(runner.get_input_details()) == {"sentence1", "sentence2"}
    got = runner(sentence1=np.array([pair[0].encode()], dtype=object),
                 sentence2=np.array([pair[1].encode()], dtype=object))
    mask = got["input_mask"][0].astype(bool)
    assert 10 < mask.sum() < 32
    assert_close(got["sequence_output"][0][mask], want["sequence_output"].numpy()[0][mask], 1e-4)
    assert_close(got["pooled_output"], want["pooled_output"].numpy(), 1e-4)
  with pytest.raises(ValueError, match=r"pass one of --model and its old names \(--model_dir, "
                                       r"--albert_directory, --hub_module\); got --model, "
                                       "--hub_module"):
    export_tflite.run(export_tflite.TFLiteOptions(model=str(release),
                                              hub_module=hub_dir,
                                              output_file=str(tmp_path / "x.tflite")))
  with pytest.raises(ValueError, match="int8 needs a fine-tuning run as --model"):
    export_tflite.run(export_tflite.TFLiteOptions(model=hub_dir, quantization="int8",
                                              output_file=str(tmp_path / "x.tflite")))
  assert not (tmp_path / "x.tflite").exists()


def test_int8_of_an_own_files_run_calibrates_on_its_training_file(tmp_path, spm_model):
  """A run on your own files (here a `description` column) calibrates int8 on the training
  file its record names, read as the run reads it, or on --calibration_file (.txt: a text a
  line); the file gives the classifier's probabilities within int8's error. A run that
  records no training data, and a file without the run's column, say so in one line."""
  rng = np.random.default_rng(0)
  words = " ".join(CORPUS).split()
  rows = [dict(description=" ".join(rng.choice(words, 12)), label=str(i % 2)) for i in range(40)]
  train = tmp_path / "train.jsonl"
  train.write_text("".join(json.dumps(r) + "\n" for r in rows))
  model = AlbertClassifier(AlbertEncoder(CFG), 2)
  record = dict(task="classification", model=CFG, hub=None, do_lower_case=True,
                max_seq_length=SEQ, spm_model_file=spm_model,
                problem_type="single_label_classification", labels=["0", "1"],
                text_columns=["description"], label_column="label", label_delimiter=None)
  model({k: tf.zeros([1, SEQ], tf.int32) for k in ("input_word_ids", "input_mask",
                                                    "input_type_ids")})
  run = runs.write_run(str(tmp_path / "own"), dict(record, data={"train_file": str(train)}),
                       model)
  assert runs.Run.read(run).texts() == [[r["description"]] for r in rows]
  out = tmp_path / "own.tflite"
  export_tflite.run(export_tflite.TFLiteOptions(model=run, output_file=str(out),
                                                quantization="int8"))
  runner = litert(out.read_bytes()).get_signature_runner()
  assert set(runner.get_input_details()) == {"description"}     # the run's one name for it
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  for r in rows[:5]:
    got = runner(description=np.array([r["description"].encode()],
                                      dtype=object))["probabilities"]
    packed = packing.pack_inputs(tokenizer.encode(r["description"]), None, SEQ,
                                 tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    want = tf.nn.softmax(model({k: tf.constant([v]) for k, v in packed.items()},
                               training=False)).numpy()
    np.testing.assert_allclose(got, want, atol=0.05)
  lines = tmp_path / "texts.txt"
  lines.write_text("the first text\n\nthe second\n")
  assert runs.Run.read(run).texts(str(lines)) == [["the first text"], ["the second"]]
  with pytest.raises(ValueError, match=r"--calibration_file=.*pairs.jsonl: .*pairs.jsonl:1: "
                                       r"no column 'description'"):
    (tmp_path / "pairs.jsonl").write_text(json.dumps(dict(text="x")) + "\n")
    export_tflite.run(export_tflite.TFLiteOptions(
        model=run, output_file=str(tmp_path / "x.tflite"), quantization="int8",
        calibration_file=str(tmp_path / "pairs.jsonl")))
  runs.write_run(run, record)     # as an older albert_tf recorded it: no training data
  with pytest.raises(ValueError, match=r"--quantization=int8: .*does not record its training "
                                       r"data.*--calibration_file"):
    export_tflite.run(export_tflite.TFLiteOptions(model=run, output_file=str(tmp_path / "x.tflite"),
                                                  quantization="int8"))
  assert not (tmp_path / "x.tflite").exists()


def test_wordpiece_classifiers_take_the_ids_fulltokenizer_packs(tmp_path):
  """A WordPiece (vocab_chinese.txt) run converts to a file taking input_word_ids,
  input_mask, input_type_ids [1, S]; with FullTokenizer's packed ids its probabilities
  equal the raw-text SavedModel's."""
  from common import write_wordpiece_vocab  # pylint: disable=g-import-not-at-top
  texts = ["2008年北京奥运会, Michael Phelps!", "在北京(Beijing)市，ＦＵＬＬ width 1,000 naïve"]
  vocab = write_wordpiece_vocab(tmp_path / "vocab_chinese.txt", texts * 3)
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab)
  cfg = dict(CFG, vocab_size=tokenizer.vocab_size)
  run = tmp_path / "zh_run"
  model = AlbertClassifier(AlbertEncoder(cfg), 2)
  write_classifier_run(run, model, cfg, 24, vocab_file=vocab)
  export_classifier(model, str(run / "serving"), tokenizer, 24, ("0", "1"))
  path = tmp_path / "zh.tflite"
  export_tflite.run(export_tflite.TFLiteOptions(model=str(run), output_file=str(path),
                                            quantization="none"))
  runner = litert(path.read_bytes()).get_signature_runner()
  assert set(runner.get_input_details()) == {"input_word_ids", "input_mask", "input_type_ids"}
  saved = tf.saved_model.load(str(run / "serving")).signatures["serving_default"]
  ids = [tokenizer.encode(t) for t in texts]
  packed = packing.pack_inputs(ids[0], ids[1], 24, tokenizer.cls_id, tokenizer.sep_id,
                               tokenizer.pad_id)
  got = runner(**{k: np.array([v], dtype=np.int32) for k, v in packed.items()})
  want = saved(sentence1=tf.constant(texts[:1]), sentence2=tf.constant(texts[1:]))
  assert_close(got["probabilities"], want["probabilities"].numpy(), 1e-4)


def test_why_wordpiece_takes_ids_fast_bert_tokenizer_is_not_basic_tokenization(tmp_path):
  """tensorflow-text's TFLite-convertible FastBertTokenizer does not split CJK ideographs
  into words of their own as BERT's BasicTokenizer does: other ids (the README says so)."""
  import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
  from common import write_wordpiece_vocab  # pylint: disable=g-import-not-at-top
  text = "\u5728\u5317\u4eac(Beijing)\u5e02\uff0c2008\u5e74\u5965\u8fd0\u4f1a"
  vocab = write_wordpiece_vocab(tmp_path / "vocab.txt", [text] * 3)
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab)
  tokens = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
  fast = tf_text.FastBertTokenizer(vocab=tokens, token_out_type=tf.int64,
                                   lower_case_nfd_strip_accents=True, unknown_token="[UNK]")
  got = fast.tokenize(tf.constant([text])).merge_dims(1, -1).to_list()[0]
  assert got != tokenizer.encode(text)
