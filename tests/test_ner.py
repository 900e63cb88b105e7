"""run_ner.py's task: learns generated CoNLL data, writes eval_results.txt and
test_predictions.txt, names bad inputs, keeps its labels on resume."""

import csv
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from seqeval import metrics as seqeval_metrics

from albert_tf import AlbertConfig, AlbertTokenClassifier, build_hf_model, runs
from albert_tf.data import ner
from albert_tf.commands import convert, export_tflite
from albert_tf.tasks import token_classification as ner_task
from common import NER_CFG as CFG, assert_close, read_results, write_conll, write_wordpiece_vocab

@pytest.fixture(scope="module")
def files(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("ner")
  AlbertConfig.from_dict(CFG).to_json_file(str(root / "albert_config.json"))
  return dict(config=str(root / "albert_config.json"), spm=spm_model,
              data=write_conll(str(root / "conll")), root=root)


def options(files, output_dir, **kwargs):
  base = dict(data_dir=files["data"], output_dir=str(output_dir),
              albert_config_file=files["config"], spm_model_file=files["spm"],
              max_seq_length=32, train_batch_size=16, eval_batch_size=32,
              predict_batch_size=32, learning_rate=3e-3, train_step=300, warmup_step=30,
              save_checkpoints_steps=100, keep_checkpoint_max=2, log_steps=20, progress=False,
              do_train=True, do_eval=True, do_predict=True, doc_stride=8)
  base.update(kwargs)
  return ner_task.NerOptions(**base)


@pytest.mark.slow
@pytest.mark.learning
def test_run_ner_learns_names_by_context_and_writes_conll_predictions(files, tmp_path,
                                                                      learning_seed):
  """300 steps of a tiny model from random weights: dev entity F1 well above chance, for
  both types; the metrics are seqeval's on the merged predictions; test_predictions.txt is
  test.txt line for line with the predicted tag appended."""
  out, export = tmp_path / "run", tmp_path / "export"
  result = ner_task.run(options(files, out, export_dir=str(export), seed=learning_seed))
  evaluation = result["eval"]
  print("NER dev", evaluation)
  assert evaluation["f1"] >= 0.8 and evaluation["PER_f1"] >= 0.7 and evaluation["LOC_f1"] >= 0.7
  assert read_results(out) == pytest.approx(evaluation)
  assert (out / "labels.txt").read_text().split() == ["O", "B-LOC", "B-PER", "I-PER"]
  test_lines = open(os.path.join(files["data"], "test.txt"), encoding="utf-8").read().split("\n")
  written = (out / "test_predictions.txt").read_text().split("\n")
  assert len(written) == len(test_lines)
  gold, predicted, sentence_gold, sentence_pred = [], [], [], []
  for given, line in zip(test_lines, written):
    if not given.strip():
      assert line == given
      if sentence_gold:
        gold.append(sentence_gold)
        predicted.append(sentence_pred)
      sentence_gold, sentence_pred = [], []
      continue
    assert line.startswith(given + " ")
    if given.startswith(ner.DOCSTART):
      continue
    sentence_gold.append(given.split()[-1])
    sentence_pred.append(line.split()[-1])
  assert seqeval_metrics.f1_score(gold, predicted) >= 0.7
  import tensorflow_text  # pylint: disable=unused-import,g-import-not-at-top
  serve = tf.saved_model.load(str(export)).signatures["serving_default"]
  check_served_entities(serve, [s.words for s in ner.read_sentences(
      os.path.join(files["data"], "test.txt"))], predicted, " ", "IOB2")
  served = serve(sentences=tf.constant(["Yesterday,  Jordan Smith met the team at the office.",
                                        ""]))
  words = [w.decode() for w in served["words"].numpy()[0]]
  assert words == ["Yesterday", ",", "Jordan", "Smith", "met", "the", "team", "at", "the",
                   "office", "."]
  assert served["num_words"].numpy()[1] == served["num_entities"].numpy()[1] == 0
  check_lite_tags(out, tmp_path / "ner.tflite", [s.words for s in ner.read_sentences(
      os.path.join(files["data"], "test.txt"))], predicted, 32)
  # --do_eval alone on the trained run: the same figures from model.ckpt-best.
  again = ner_task.run(options(files, out, do_train=False, do_predict=False,
                               seed=learning_seed))
  assert again["eval"] == pytest.approx(evaluation)

  # To Hugging Face (AlbertForTokenClassification, id2label) and back: the same logits.
  hf = tmp_path / "hf"
  convert.run(convert.ConvertOptions(model=str(out), output_format="hf", output_dir=str(hf)))
  config = json.loads((hf / "config.json").read_text())
  assert config["architectures"] == ["AlbertForTokenClassification"]
  assert [config["id2label"][str(i)] for i in range(4)] == ["O", "B-LOC", "B-PER", "I-PER"]
  back, report = build_hf_model(str(hf))
  # (transformers' token classifier has no pooler: none written, none read)
  assert isinstance(back, AlbertTokenClassifier)
  assert sorted(report.freshly_initialized) == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]
  run = ner_task.NerRun(options(files, out, do_train=False, do_predict=False,
                                seed=learning_seed))
  trained = run.build_model()
  run.restore_for_inference(trained)
  batch = next(iter(run.dataset("dev", 8, is_training=False)))
  inputs = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
  assert_close(back(inputs, training=False).numpy(), trained(inputs, training=False).numpy(), 1e-6)

  # Sentences longer than a window (five test sentences each, about 45 pieces, windows of
  # 30 pieces 8 apart): the export's tags are the task's windows merged per word.
  test = ner.read_sentences(os.path.join(files["data"], "test.txt"))
  long = [ner.Sentence(sum((s.words for s in test[i:i + 5]), []),
                       sum((s.tags for s in test[i:i + 5]), []), []) for i in range(0, 40, 5)]
  windows = ner.convert(long, run.labels, run.source.tokenizer, 32, 8)
  assert len(windows) >= 3 * len(long)
  logits = trained({k: tf.constant([getattr(w, f) for w in windows]) for k, f in zip(
      ("input_word_ids", "input_mask", "input_type_ids"),
      ("input_ids", "input_mask", "segment_ids"))}, training=False)
  merged = ner.merge_predictions(long, windows, np.argmax(logits, -1), run.labels)
  check_served_entities(serve, [s.words for s in long], merged, " ", "IOB2")

  # albert_tf.Predictor (predict.py) on the run: the exported tagger's entities, sentences
  # sorted by length into batches and answered in input order.
  from albert_tf import Predictor  # pylint: disable=import-outside-toplevel
  texts = [" ".join(s.words) for s in long[:3] + test[:9]] + [
      "Yesterday,  Jordan Smith met the team at the office.", ""]
  answers = Predictor.load(str(out), batch_size=4).predict(texts)
  served = {k: v.numpy() for k, v in serve(sentences=tf.constant(texts)).items()}
  for i, (text, answer) in enumerate(zip(texts, answers)):
    e = served["num_entities"][i]
    assert answer["entities"] == [
        dict(type=kind.decode(), text=found.decode(), start=int(a), end=int(b))
        for kind, found, a, b in zip(served["entity_types"][i][:e], served["entity_texts"][i][:e],
                                     served["entity_starts"][i][:e], served["entity_ends"][i][:e])]
    assert all(text[x["start"]:x["end"]] == x["text"] for x in answer["entities"])
  assert sum(len(a["entities"]) for a in answers) >= 10


def check_served_entities(serve, sentences, predicted, joiner, scheme):
  """The export's (`serve`: its serving_default) tags for each sentence's words joined by
  `joiner` are `predicted` (the task's, from files), and its entities are `ner.entities` of
  them, with code point offsets into the joined text."""
  texts = [joiner.join(words) for words in sentences]
  out = serve(sentences=tf.constant(texts))
  out = {k: v.numpy() for k, v in out.items()}
  for i, (text, words, tags) in enumerate(zip(texts, sentences, predicted)):
    n = out["num_words"][i]
    assert [w.decode() for w in out["words"][i][:n]] == words
    assert [t.decode() for t in out["tags"][i][:n]] == tags
    starts = np.cumsum([0] + [len(w) + len(joiner) for w in words])
    expected = [(kind, int(starts[a]), int(starts[b] + len(words[b])))
                for kind, a, b in ner.entities(tags, scheme)]
    e = out["num_entities"][i]
    got = list(zip([k.decode() for k in out["entity_types"][i][:e]],
                   out["entity_starts"][i][:e].tolist(), out["entity_ends"][i][:e].tolist()))
    assert got == expected
    assert [t.decode() for t in out["entity_texts"][i][:e]] == [text[a:b] for _, a, b in got]


def check_lite_tags(run_dir, path, sentences, predicted, seq_length, joiner=" "):
  """export_tflite.py on the run: the raw sentence (SentencePiece) or the task's packed
  pieces (WordPiece) in, the task's pieces (each word's in turn) and the task's tag at each
  word's first piece out."""
  from albert_tf.export.tflite import load_interpreter  # pylint: disable=g-import-not-at-top
  result = export_tflite.run(export_tflite.TFLiteOptions(model=str(run_dir),
                                                     output_file=str(path), quantization="none"))
  assert result["tflite"]["size_mb"] > 0
  tokenizer = runs.Run.read(str(run_dir)).tokenizer()
  labels = (run_dir / "labels.txt").read_text().split()
  runner = load_interpreter(model_path=str(path)).get_signature_runner()
  fit = 0
  for words, tags in zip(sentences, predicted):
    pieces = ner.word_pieces(tokenizer, words)
    flat = [tokenizer.cls_id] + [p for w in pieces for p in w] + [tokenizer.sep_id]
    if len(flat) > seq_length:   # cut on device: no windows there
      continue
    fit += 1
    if tokenizer.spm_model_file:
      out = runner(sentence=np.array([joiner.join(words).encode()], dtype=object))
    else:
      pad = seq_length - len(flat)
      out = runner(input_word_ids=np.array([flat + [tokenizer.pad_id] * pad], np.int32),
                   input_mask=np.array([[1] * len(flat) + [0] * pad], np.int32),
                   input_type_ids=np.zeros([1, seq_length], np.int32))
    assert out["input_word_ids"][0][:len(flat)].tolist() == flat
    firsts = 1 + np.cumsum([0] + [len(w) for w in pieces])[:-1]
    assert [labels[i] for i in out["tag_ids"][0][firsts]] == tags
  assert fit >= len(sentences) // 2


ZH_PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆"]
ZH_PLACES = ["北京", "上海", "广州", "深圳", "南京", "成都"]
ZH_PERSON = ["{}说计划可行。", "昨天{}在办公室开会。", "报告是{}写的。"]
ZH_PLACE = ["火车开往{}。", "她去年搬到{}。", "我们从{}出发。"]


def write_msra(directory, seed=0, sizes=(("train", 240), ("dev", 60), ("test", 30))):
  """MSRA-style character tagging: `char TAG` lines (B-NR / I-NR people, B-NS / I-NS
  places), a blank line between sentences."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split, count in sizes:
    lines = []
    for _ in range(count):
      person = rng.random() < 0.5
      name = rng.choice(ZH_PEOPLE if person else ZH_PLACES)
      template = rng.choice(ZH_PERSON if person else ZH_PLACE)
      before, after = template.split("{}")
      kind = "NR" if person else "NS"
      lines += [f"{c} O" for c in before]
      lines += [f"{c} {'B' if i == 0 else 'I'}-{kind}" for i, c in enumerate(name)]
      lines += [f"{c} O" for c in after] + [""]
    with open(os.path.join(directory, f"{split}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines))
  return directory


@pytest.mark.slow
@pytest.mark.learning
def test_run_ner_tags_chinese_characters_with_a_wordpiece_vocabulary(tmp_path, learning_seed):
  """The MSRA recipe's path: --vocab_file (WordPiece), one character per token."""
  data = write_msra(str(tmp_path / "msra"))
  texts = [t.format(n) for t in ZH_PERSON for n in ZH_PEOPLE] + \
      [t.format(n) for t in ZH_PLACE for n in ZH_PLACES]
  vocab = tmp_path / "vocab_chinese.txt"
  write_wordpiece_vocab(vocab, texts)
  size = sum(1 for _ in open(vocab, encoding="utf-8"))
  config = tmp_path / "albert_config.json"
  AlbertConfig.from_dict(dict(CFG, vocab_size=size)).to_json_file(str(config))
  out = tmp_path / "run"
  result = ner_task.run(ner_task.NerOptions(
      data_dir=data, output_dir=str(out), albert_config_file=str(config), vocab_file=str(vocab),
      max_seq_length=24, train_batch_size=16, eval_batch_size=32, predict_batch_size=32,
      learning_rate=3e-3, train_step=150, warmup_step=15, save_checkpoints_steps=75,
      log_steps=25, progress=False, do_train=True, do_eval=True, do_predict=True,
      export_dir=str(tmp_path / "export"), seed=learning_seed))
  print("MSRA-style dev", result["eval"])
  assert result["eval"]["f1"] >= 0.8
  assert (out / "labels.txt").read_text().split() == ["O", "B-NR", "I-NR", "B-NS", "I-NS"]
  written = (out / "test_predictions.txt").read_text().split("\n")
  given = open(os.path.join(data, "test.txt"), encoding="utf-8").read().split("\n")
  assert [line.rsplit(" ", 1)[0] if line else line for line in written[:len(given)]] == given
  # The export tags raw text one character a word, as the training set was.
  predicted, row = [], []
  for line in written:
    if line:
      row.append(line.split()[-1])
    elif row:
      predicted.append(row)
      row = []
  import tensorflow_text  # pylint: disable=unused-import,g-import-not-at-top
  serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
  sentences = [s.words for s in ner.read_sentences(os.path.join(data, "test.txt"))]
  predicted += [row] if row else []
  check_served_entities(serve, sentences, predicted, "", "IOB2")
  check_lite_tags(out, tmp_path / "msra.tflite", sentences, predicted, 24, joiner="")


def test_entity_metrics_are_seqeval_s_per_type_and_overall():
  gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-LOC", "O"]]
  predicted = [["B-PER", "I-PER", "O", "B-PER"], ["B-LOC", "O"]]
  got = ner_task.entity_metrics(gold, predicted)
  assert got["precision"] == pytest.approx(2 / 3) and got["recall"] == pytest.approx(2 / 3)
  assert got["PER_precision"] == pytest.approx(0.5) and got["PER_recall"] == 1.0
  assert got["LOC_precision"] == 1.0 and got["LOC_recall"] == pytest.approx(0.5)
  assert got["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, predicted))


def _copy(files, tmp_path, **replace):
  """The data directory with some files' text replaced."""
  data = tmp_path / "data"
  data.mkdir()
  for split in ner_task.SPLITS:
    text = open(os.path.join(files["data"], f"{split}.txt"), encoding="utf-8").read()
    (data / f"{split}.txt").write_text(replace.get(split, text), encoding="utf-8")
  return str(data)


def test_the_training_file_is_surveyed_in_one_pass_as_the_lists_read_it(files, tmp_path):
  """survey() reads the training sentences once, as they come (iter_sentences), and finds
  the tags, scheme and character tagging the list functions find, for each scheme."""
  train = os.path.join(files["data"], "train.txt")
  sentences = ner.read_sentences(train)
  found = ner.survey(ner.iter_sentences(train), train)
  assert (found.labels, found.scheme, found.per_character, found.sentences) == (
      ner.label_list(sentences), ner.detect_scheme(sentences), False, len(sentences))
  for name, text, scheme in (("bioes", "Ann S-PER\n\nthe B-ORG\nUN E-ORG\n", "BIOES"),
                             ("iob1", "Ann B-PER\n\nUN I-ORG\n", "IOB1"),
                             ("chars", "中 B-LOC\n国 I-LOC\n", "IOB2")):
    (tmp_path / name).write_text(text, encoding="utf-8")
    lists = ner.read_sentences(str(tmp_path / name))
    found = ner.survey(ner.iter_sentences(str(tmp_path / name)), name)
    assert (found.labels, found.scheme) == (ner.label_list(lists), scheme)
    assert found.scheme == ner.detect_scheme(lists)
    assert found.per_character == (name == "chars")
  with pytest.raises(FileNotFoundError, match="gone.txt not found"):
    ner.iter_sentences(str(tmp_path / "gone.txt"))


@pytest.mark.parametrize("split,text,message", [
    ("train", "EU NNP B-ORG\nrejects\n", r"train.txt:2: 'rejects' has no tag"),
    ("dev", "Paris NNP B-MISC\n", r"dev.txt:1: tag 'B-MISC' is not in the training set's tags"),
    ("train", "", r"train.txt: no sentence in it \(no token lines\)"),
    ("test", "-DOCSTART- -X- -X- O\n\n", r"test.txt: no sentence in it \(only -DOCSTART- lines\)"),
])
def test_bad_inputs_are_one_named_error_before_anything_is_written(files, tmp_path, split, text,
                                                                   message):
  data = _copy(files, tmp_path, **{split: text})
  out = tmp_path / "out"
  with pytest.raises(ValueError, match=message):
    ner_task.run(options(files, out, data_dir=data))
  assert not out.exists()


def test_a_missing_split_and_a_changed_label_set_are_refused(files, tmp_path):
  data = tmp_path / "empty"
  data.mkdir()
  with pytest.raises(FileNotFoundError, match=r"--data_dir=.*has no train.txt"):
    ner_task.run(options(files, tmp_path / "out", data_dir=str(data)))
  out = tmp_path / "short"
  ner_task.run(options(files, out, train_step=2, warmup_step=0, save_checkpoints_steps=2,
                       do_eval=False, do_predict=False))
  assert (out / "labels.txt").read_text().split()[0] == "O"
  text = open(os.path.join(files["data"], "train.txt"), encoding="utf-8").read()
  other = _copy(files, tmp_path, train=text + "Bonn NNP O B-ORG\n")
  with pytest.raises(ValueError, match=r"holds another run .*labels"):
    ner_task.run(options(files, out, data_dir=other, train_step=4, warmup_step=0))


def test_token_loss_is_the_mean_over_labelled_words(files, tmp_path):
  """The first piece of each word carries its tag; other pieces, [CLS], [SEP] and padding
  are -1 and take no loss: the loss equals a NumPy cross-entropy over labelled positions."""
  run = ner_task.NerRun(options(files, tmp_path / "loss", do_eval=False, do_predict=False))
  model = run.build_model()
  batch = next(iter(run.dataset("train", 8, is_training=False)))
  labels = batch["label_ids"].numpy()
  assert (labels[:, 0] == ner.IGNORED).all() and (labels >= 0).sum() > 0
  strategy = tf.distribute.get_strategy()
  loss, sums = strategy.run(lambda b: run.step_metrics(model, b, False, 8), args=(batch,))
  logits = model(batch, training=False).numpy().astype(np.float64)
  log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
  mask = labels >= 0
  want = -log_probs[mask, labels[mask]].mean()
  np.testing.assert_allclose(float(loss), want, rtol=1e-5)
  assert float(sums["count"]) == mask.sum()


def test_int8_calibration_reads_the_training_sentences(files):
  """export_tflite.py --quantization=int8 --data_dir=<run_ner.py's data>: the representative
  examples are train.txt's sentences, words joined by spaces, drawn with the seed."""
  class Module:   # what representative_examples asks of a LiteTagger
    text_fields = ["sentence"]
    example = staticmethod(lambda texts: texts)

  train = {" ".join(s.words) for s in ner.read_sentences(os.path.join(files["data"],
                                                                      "train.txt"))}
  texts = runs.KINDS["token_classification"].texts(None, files["data"])   # (the NER kind's)
  drawn = export_tflite.representative_examples(texts, Module(), count=20)
  assert len(drawn) == 20 and all(len(d) == 1 and d[0] in train for d in drawn)
  assert len({d[0] for d in drawn}) > 10
  assert drawn == export_tflite.representative_examples(texts, Module(), count=20)


def _train_log(output_dir):
  with open(os.path.join(output_dir, "train_log.csv"), encoding="utf-8") as f:
    return [float(row["loss"]) for row in csv.DictReader(f)]


def test_accumulated_bucketed_micro_batches_make_the_large_batch_gradient(files, tmp_path):
  """16 micro-batches of one window, each cut to its own bucket length (32 or 64), leave in the buffers
  the gradient of the 16 windows as one batch: the loss is averaged over the whole
  update's labelled words (the micro-batches hold different numbers of them), not micro-
  batch by micro-batch. (The gradient, not whole runs: Adam's first steps move a weight
  by about the learning rate whatever its gradient's scale.)"""
  from albert_tf.training import trainer as trainer_lib  # pylint: disable=g-import-not-at-top
  opts = options(files, tmp_path / "out", gradient_accumulation_steps=16, bucket_by_length=True,
                 dropout_prob=0.0, do_eval=False, do_predict=False, max_seq_length=64)
  task = ner_task.NerRun(opts)
  trainer = trainer_lib.Trainer(
      trainer_lib.TrainerOptions(output_dir=opts.output_dir, train_steps=3, learning_rate=1e-3,
                                 train_batch_size=16, gradient_accumulation_steps=16),
      task.strategy, task, task.train_dataset())
  micro = [trainer._next_batch() for _ in range(16)]  # pylint: disable=protected-access
  totals = task.update_totals(micro)
  for batch in micro:
    trainer._micro_step(trainer_lib.distribute_global_batch(  # pylint: disable=protected-access
        task.strategy, batch, 1), totals)
  got = [b.read_value().numpy() for b in trainer._buffers]  # pylint: disable=protected-access
  widths = [int(b["input_word_ids"].shape[1]) for b in micro]
  labelled = [int((b["label_ids"].numpy() >= 0).sum()) for b in micro]
  assert len(set(widths)) > 1 and len(set(labelled)) > 1
  width = max(widths)
  large = {k: tf.concat([tf.pad(b[k], [[0, 0], [0, width - b[k].shape[1]]],
                                constant_values=-1 if k == "label_ids" else 0)
                         for b in micro], 0) for k in micro[0]}
  with tf.GradientTape() as tape:
    loss, _ = task.step_metrics(trainer.model, large, True, 16)
  want = tape.gradient(loss, trainer.model.trainable_variables)
  compared, unreached = 0, []
  for g, w, v in zip(got, want, trainer.model.trainable_variables):
    if w is None:   # the pooler: a token classifier does not use it
      assert not np.any(g), v.name
      unreached.append(v.ref())
      continue
    w = tf.convert_to_tensor(w).numpy()
    np.testing.assert_allclose(g, w, atol=1e-6 + 1e-4 * np.abs(w).max(), err_msg=v.name)
    compared += 1
  assert set(unreached) == {v.ref() for v in trainer.model.encoder.pooler.trainable_variables}
  assert compared == len(trainer.model.trainable_variables) - 2
  assert np.abs(got[-1]).max() > 0


def test_bfloat16_with_recompute_trains(files, tmp_path):
  """--dtype=bfloat16 --recompute: finite losses, float32 variables, the tag head's logits
  float32."""
  out = tmp_path / "bf16"
  ner_task.run(options(files, out, train_step=4, warmup_step=0, save_checkpoints_steps=4,
                       do_eval=False, do_predict=False, log_steps=1, dtype="bfloat16",
                       recompute=True))
  losses = _train_log(out)
  assert len(losses) == 4 and np.isfinite(losses).all()
  reader = tf.train.load_checkpoint(str(out / "ckpt-4"))
  dtypes = reader.get_variable_to_dtype_map()
  assert {dtypes[k] for k in dtypes if k.startswith(("encoder/", "classifier/"))} == {tf.float32}
