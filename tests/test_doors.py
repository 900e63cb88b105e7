"""One model, one answer through every door: a classifier run's --do_predict answers, and
the same texts through predict.py (TensorFlow, ONNX Runtime), Beam, the serving SavedModel,
TFLite, a KerasHub preset and the Hugging Face export (its weights, and its tokenizer.json's
ids), for each problem of your own files: single-label sentence pairs, multi-label (its
thresholds tuned), regression (a student of 1 pass taught by a run of 2: ALBERT lite, its
depth in every export); the TF-Hub preprocessor + encoder recipe (in Keras 2 and in
Keras 3), which carries the encoder and leaves the head to its caller, on the pairs. Then
SQuAD v2.0, RACE and NER through the doors each has (v1.1's answers, the same logits under
its own rules: predict.py in tests/test_squad.py). (transformers' pipeline on the same
exports, SQuAD v1.1's among them: tests/test_peers.py.)

Each door is compared with the answers `run_classifier.py --do_predict` wrote: labels
exactly, probabilities and scores within 1e-5 (TFLite float32: 1e-4); the doors that show
their token ids (tokenizer.json, the TF-Hub preprocessor, KerasHub's preprocessor) are
compared id for id, so that a model that ignored its input could not hide a tokenizer's
difference. The texts are realistic and tricky: hyphens, parentheses, decimals, quotes,
`''`, digits with commas, capitals, accents, CJK, a very long and an empty text.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import runs
from albert_tf.text.packing import pack_inputs
from common import assert_close

SEQ = 48
# Weights drawn wide (initializer_range 0.5, not 0.02): a model whose answers move with
# its input, so that the doors' agreement says something.
CFG = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64, max_position_embeddings=SEQ,
           initializer_range=0.5)
TEXTS = [
    "Well-known USB-C charger (65 W) for laptops, 2,500 units in stock",
    "Café-style ``espresso'' machine: 15 bar pump, 1.5 L tank",
    "Ångström-grade lens cap (52 mm) — fits Nikon D3500 & D5600",
    "''Heavy-duty'' drill driver, 18 V; 1,250 rpm and a 3.0 Ah battery",
    "中文说明书 included, with a 日本語 quick-start guide",
    "ÉLAN kids' bike: 16\" wheels, 7-speed (re)designed frame",
    "",
    "Numbers: 1,000,000 parts, 12, 34 and 99, NOT 12.5",
    "naïve façade paint — £29.99 / €34,50 per 2.5 L can",
    " ".join(["Stainless-steel kettle (1.7 L), auto shut-off, 2,200 W."] * 12),
]
LABELS = {"single": ["match", "no_match"], "multi": ["home", "kitchen", "tools", "travel"],
          "regression": []}


def _rows(problem):
  """Training rows (a few, for the run's record) and the test rows of `problem`."""
  rng = np.random.default_rng(0)
  rows = []
  for i, text in enumerate(TEXTS * 2):
    row = dict(id=f"r{i}", text=text)
    if problem == "single":
      row["second"] = TEXTS[(i + 3) % len(TEXTS)]
      row["label"] = LABELS["single"][i % 2]
    elif problem == "multi":
      row["label"] = [t for t in LABELS["multi"] if rng.random() < 0.4] or ["home"]
    else:
      row["label"] = float(np.round(rng.random() * 5, 2))
    rows.append(row)
  return rows


def _write(path, rows):
  with open(path, "w", encoding="utf-8") as f:
    for r in rows:
      f.write(json.dumps(r, ensure_ascii=False) + "\n")
  return str(path)


@pytest.fixture(scope="module")
def start(tmp_path_factory, spm_model):
  """A random pretrained model (a released directory's files) to fine-tune from."""
  import tf_keras as keras  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertConfig, AlbertPretrainer, save_original_checkpoint  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("doors")
  keras.utils.set_random_seed(3)
  AlbertConfig.from_dict(CFG).to_json_file(str(root / "albert_config.json"))
  init = save_original_checkpoint(AlbertPretrainer(CFG), str(root / "model.ckpt-best"))
  return dict(config=str(root / "albert_config.json"), init=init, spm=spm_model)


def _answers(path):
  return [json.loads(line) for line in open(path, encoding="utf-8")]


def _values(answer, problem):
  """(what must be equal, what must be close) of one answer."""
  if problem == "regression":
    return None, [answer["score"]]
  exact = answer["labels"] if problem == "multi" else answer["label"]
  return exact, [answer["probabilities"][k] for k in LABELS[problem]]


def _agree(door, want, got, problem, tolerance=1e-5, threshold=0.5):
  """The same labels (a multi-label answer's set: but for a label whose probability lies
  within `tolerance` of its threshold, where float32's noise may take either side; tuned
  thresholds lie halfway between two dev probabilities, which may be that close) and
  values within `tolerance`."""
  assert len(got) == len(want), door
  exact = [_values(a, problem)[0] for a in want]
  if problem == "multi":
    limits = dict(zip(LABELS[problem], np.broadcast_to(threshold, len(LABELS[problem]))))
    sure = lambda a, w: {n for n in a["labels"] if abs(w["probabilities"][n] - limits[n])
                         > tolerance}
    assert [sure(a, w) for a, w in zip(got, want)] == [sure(w, w) for w in want], door
  else:
    assert [_values(a, problem)[0] for a in got] == exact, door
  values = np.array([_values(a, problem)[1] for a in got])
  wanted = np.array([_values(a, problem)[1] for a in want])
  assert_close(values, wanted, tolerance)
  print(f"  {problem:10s} {door:34s} {len(got)}/{len(want)} answers the same, largest "
        f"difference {np.abs(values - wanted).max():.1e}")


def _predict_doors(run, source, tmp_path, runtimes=("tensorflow", "onnxruntime"),
                   beam_runtime="tensorflow"):
  """{door: answers} of predict.py on `source` with each runtime, read, answered and
  written 3 rows at a time (chunks: every kind's answers across their boundaries), and on
  Beam's DirectRunner with `beam_runtime` (no flag of the run repeated)."""
  from albert_tf.commands import predict  # pylint: disable=import-outside-toplevel
  doors = {}
  for runtime in runtimes:
    out = tmp_path / f"predict_{runtime}.jsonl"
    predict.run(predict.PredictOptions(model=str(run), input_file=source, output_file=str(out),
                                       id_column="id", runtime=runtime, progress=False,
                                       chunk_rows=3, dtype="float32"))
    doors[f"predict.py --runtime={runtime}"] = _answers(out)
  predict.run(predict.PredictOptions(model=str(run), input_file=source, id_column="id",
                                     output_file=str(tmp_path / "beam" / "out.jsonl"),
                                     runner="DirectRunner", num_shards=1, progress=False,
                                     runtime=beam_runtime, dtype="float32"))
  doors["predict.py --runner=DirectRunner"] = _answers(
      tmp_path / "beam" / "out-00000-of-00001.jsonl")
  return doors


def classifier_run(problem, start, tmp_path):
  """A run_classifier.py run of `problem` (single, multi or regression) on your own files,
  fine-tuned from `start` a few steps, with --do_predict on the realistic texts: (the run,
  its test file, --do_predict's answers, each test row's texts)."""
  from albert_tf.tasks import classification  # pylint: disable=import-outside-toplevel
  rows = _rows(problem)
  train = _write(tmp_path / "train.jsonl", rows)
  test = _write(tmp_path / "test.jsonl", [{k: v for k, v in r.items() if k != "label"}
                                          for r in rows[:len(TEXTS)]])
  run = tmp_path / "run"
  # (multi-label: --multi_label_threshold=tune on its training rows as dev, so that every
  # door shows it applies each label's own threshold)
  tuned = dict(dev_file=train, multi_label_threshold="tune") if problem == "multi" else {}
  common = dict(train_file=train, id_column="id", **tuned,
                text_columns="text,second" if problem == "single" else "text",
                problem_type={"single": "auto", "multi": "auto",
                              "regression": "regression"}[problem],
                max_seq_length=SEQ, train_batch_size=8, train_step=2, warmup_step=0,
                learning_rate=1e-3, save_checkpoints_steps=2, do_train=True, progress=False,
                seed=0)
  source = dict(albert_config_file=start["config"], init_checkpoint=start["init"],
                spm_model_file=start["spm"])
  if problem == "regression":   # ALBERT lite: a student of 1 pass, taught by a run of 2
    classification.run(classification.ClassifierOptions(
        output_dir=str(tmp_path / "teacher"), **common, **source))
    source = dict(teacher=str(tmp_path / "teacher"), num_hidden_layers=1)
  classification.run(classification.ClassifierOptions(
      output_dir=str(run), test_file=test, do_predict=True, **common, **source))
  want = _answers(run / "test_predictions.jsonl")
  # The texts' answers differ from each other by far more than the tolerances, so a door
  # that read other ids than the run's would show.
  spread = np.ptp(np.array([_values(a, problem)[1] for a in want]), axis=0).max()
  print(f"  {problem:10s} spread of the answers over the texts: {spread:.1e}")
  assert spread > 1e-3, spread
  assert [a["id"] for a in want] == [r["id"] for r in rows[:len(TEXTS)]]
  fields = [[r["text"]] + ([r["second"]] if problem == "single" else [])
            for r in rows[:len(TEXTS)]]
  return run, test, want, fields


@pytest.mark.slow
@pytest.mark.parametrize("problem", ["single", "multi", "regression"])
def test_every_door_answers_as_do_predict(problem, start, tmp_path):
  """Each problem's run through every door. The multi-label run tunes its thresholds
  (--multi_label_threshold=tune): every door gives its label sets by each label's own
  threshold, and the ONNX, TFLite (its sidecar), Hugging Face and KerasHub exports carry
  them. The TF-Hub preprocessor + encoder (Keras 2 and Keras 3) carry the encoder, not the
  head, whatever the problem: checked on the pair run, one text and two."""
  from albert_tf.commands import convert, export_tflite  # pylint: disable=import-outside-toplevel
  run, test, want, fields = classifier_run(problem, start, tmp_path)
  record = runs.Run.read(str(run))
  depth = 1 if problem == "regression" else CFG["num_hidden_layers"]   # (the student's)
  assert record.config.num_hidden_layers == depth
  tokenizer = record.tokenizer()
  labels = LABELS[problem]
  threshold = record.multi_label_threshold or 0.5
  if problem == "multi":
    check_tuned(want, threshold)

  # predict.py, TensorFlow and ONNX Runtime, and on Apache Beam (no repeated flags).
  for door, got in _predict_doors(run, test, tmp_path).items():
    _agree(door, want, got, problem, threshold=threshold)

  # The serving SavedModel (kept in the run by Beam's launch): raw text in.
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  from albert_tf.export.loading import export_record  # pylint: disable=import-outside-toplevel
  signature = tf.saved_model.load(str(run / "serving")).signatures["serving_default"]
  inputs = export_record(str(run / "serving"))["inputs"]          # the run's columns
  assert inputs == record.text_inputs
  served = signature(**{n: tf.constant([f[i] for f in fields]) for i, n in enumerate(inputs)})
  if problem == "regression":
    got = [dict(score=float(s)) for s in served["score"].numpy()]
  elif problem == "multi":
    got = [dict(labels=[labels[j] for j in np.flatnonzero(m)],
                probabilities=dict(zip(labels, map(float, p))))
           for m, p in zip(served["label_mask"].numpy(), served["probabilities"].numpy())]
  else:
    got = [dict(label=labels[int(i)], probabilities=dict(zip(labels, map(float, p))))
           for i, p in zip(served["label_ids"].numpy(), served["probabilities"].numpy())]
  _agree("serving SavedModel", want, got, problem, threshold=threshold)

  # TFLite, float32: one example a call, a multi-label's thresholds read from its sidecar.
  from test_tflite import lite_answers  # pylint: disable=import-outside-toplevel
  lite_file = tmp_path / "model.tflite"
  export_tflite.run(export_tflite.TFLiteOptions(model=str(run), quantization="none",
                                                output_file=str(lite_file)))
  sidecar = json.loads((tmp_path / "model.tflite.json").read_text())
  names = record.text_inputs                                        # the same names
  assert sidecar["inputs"] == names
  assert problem == "regression" or sidecar["labels"] == labels
  if problem == "multi":
    lite_threshold = [sidecar["multi_label_thresholds"][n] for n in labels]
    assert lite_threshold == pytest.approx(list(threshold))
  got = lite_answers(lite_file, names, fields, labels,
                     lite_threshold if problem == "multi" else None)
  _agree("TFLite float32", want, got, problem, tolerance=1e-4, threshold=threshold)
  if problem == "multi":   # (the ONNX file predict.py kept in the run carries them too)
    import onnx  # pylint: disable=import-outside-toplevel
    props = {p.key: json.loads(p.value) for p in onnx.load(str(run / "onnx" / "predict.onnx"))
             .metadata_props}
    assert props["multi_label_thresholds"] == pytest.approx(dict(zip(labels, threshold)))

  # The token ids the other doors show: tokenizer.json (transformers' fast tokenizer),
  # the TF-Hub preprocessor, KerasHub's preprocessor.
  packed = [pack_inputs(*[tokenizer.encode(t) for t in f] + [None] * (2 - len(f)), SEQ,
                        tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id) for f in fields]
  ids = np.array([p["input_word_ids"] for p in packed])
  convert.run(convert.ConvertOptions(model=str(run), output_format="hf",
                                     output_dir=str(tmp_path / "hf")))
  # (config.json says the problem and names the labels, so that transformers' pipeline
  # applies the sigmoids itself; the weights read back as the run's model.)
  from albert_tf import build_hf_model, problems, sources  # pylint: disable=import-outside-toplevel
  config = json.loads((tmp_path / "hf" / "config.json").read_text())
  assert config["problem_type"] == record.problem.type
  assert config["num_hidden_layers"] == depth
  assert [config["id2label"][str(i)] for i in range(len(labels))] == labels
  model = record.model()
  x = {k: tf.constant(ids[:, :16]) for k in ("input_word_ids",)}
  x.update(input_mask=tf.ones_like(x["input_word_ids"]),
           input_type_ids=tf.zeros_like(x["input_word_ids"]))
  assert_close(build_hf_model(str(tmp_path / "hf"))[0](x).numpy(), model(x).numpy(), 1e-6)
  import tokenizers  # pylint: disable=import-outside-toplevel
  fast = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
  fast.enable_padding(length=SEQ, pad_id=tokenizer.pad_id)
  fast.enable_truncation(SEQ)
  for f, want_ids in zip(fields, ids):
    if all(f):   # (transformers packs an empty second text as no pair: tests/test_peers.py)
      assert fast.encode(*f).ids == list(want_ids) or sum(len(tokenizer.encode(t)) for t in f) \
          > SEQ - 3, f          # (and truncates pairs its own way: docs/huggingface.md)
  if problem == "single":
    check_tf_hub_doors(run, record, model, fields, ids, want, tokenizer, tmp_path)

  # KerasHub: the preset's own preprocessor and classifier on raw text.
  import keras_hub  # pylint: disable=import-outside-toplevel
  convert.run(convert.ConvertOptions(model=str(run), output_format="keras_hub",
                                     output_dir=str(tmp_path / "preset")))
  task = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "preset"))
  metadata = json.loads((tmp_path / "preset" / "metadata.json").read_text())
  assert task.backbone.num_layers == depth
  back = sources.read(str(tmp_path / "preset"))   # the problem and the labels read back
  assert back.problem_type == record.problem.type
  assert problem == "regression" or back.labels == labels
  if problem == "multi":
    assert (metadata["problem_type"], metadata["labels"]) == (problems.MULTI, labels)
    for written in (config, metadata):
      assert written["multi_label_thresholds"] == pytest.approx(dict(zip(labels, threshold)))
  columns = tuple(np.array([f[i] for f in fields]) for i in range(len(names)))
  x = task.preprocessor(x=columns if len(columns) > 1 else columns[0])
  assert np.array_equal(np.asarray(x["token_ids"]), ids)
  outputs = np.asarray(task(x, training=False))    # (predict() would preprocess x again)
  if problem == "regression":
    got = [dict(score=float(s)) for s in outputs[:, 0]]
  elif problem == "multi":   # (the preset's activation is the sigmoid)
    got = [record.problem.answer(np.log(p / (1 - p)), threshold) for p in outputs]
  else:
    got = [record.problem.answer(row, threshold) for row in outputs]
  _agree("KerasHub AlbertTextClassifier", want, got, problem, threshold=threshold)


def check_tuned(want, thresholds):
  """--do_predict's label sets are by each label's tuned threshold, which differ from 0.5
  and change some of them."""
  labels = LABELS["multi"]
  assert isinstance(thresholds, tuple) and thresholds != (0.5,) * len(labels), thresholds
  tuned = [[n for n, t in zip(labels, thresholds) if a["probabilities"][n] > t] for a in want]
  assert [a["labels"] for a in want] == tuned
  assert tuned != [[n for n in labels if a["probabilities"][n] > 0.5] for a in want]


def check_tf_hub_doors(run, record, model, fields, ids, want, tokenizer, tmp_path):
  """The TF-Hub preprocessor + encoder of a pair run, in Keras 2 (hub's own loading) and
  in Keras 3 (the README's recipe): the run's ids for two texts and for one, and, with the
  run's head on the pooled output, --do_predict's answers."""
  from albert_tf.commands import export_tf_hub  # pylint: disable=import-outside-toplevel
  from albert_tf.export.keras3 import AlbertEncoderLayer, AlbertPreprocessorLayer  # pylint: disable=import-outside-toplevel
  hub_dir = tmp_path / "hub"
  export_tf_hub.export_from_sources(str(hub_dir / "encoder"), str(hub_dir / "preprocessor"),
                                    albert_directory=str(run))
  preprocessor = tf.saved_model.load(str(hub_dir / "preprocessor"))
  columns = [tf.constant([f[i] for f in fields]) for i in range(2)]
  hub_inputs = preprocessor.bert_pack_inputs([preprocessor.tokenize(c) for c in columns],
                                             seq_length=tf.constant(SEQ))
  assert np.array_equal(hub_inputs["input_word_ids"].numpy(), ids)
  one = [pack_inputs(tokenizer.encode(f[0]), None, SEQ, tokenizer.cls_id, tokenizer.sep_id,
                     tokenizer.pad_id)["input_word_ids"] for f in fields]
  assert np.array_equal(preprocessor.bert_pack_inputs(
      [preprocessor.tokenize(columns[0])], seq_length=tf.constant(SEQ))["input_word_ids"], one)
  pooled = tf.saved_model.load(str(hub_dir / "encoder"))(hub_inputs)["pooled_output"]
  logits = model.classifier(pooled, training=False).numpy()                     # [N, C]
  _agree("TF-Hub preprocessor + encoder", want,
         [record.problem.answer(row) for row in logits], "single")
  keras3 = AlbertPreprocessorLayer(str(hub_dir / "preprocessor"), seq_length=SEQ)
  assert np.array_equal(np.asarray(keras3(columns[:1])["input_word_ids"]), one)
  keras3_inputs = keras3(columns)
  assert np.array_equal(np.asarray(keras3_inputs["input_word_ids"]), ids)
  pooled = AlbertEncoderLayer(str(hub_dir / "encoder"))(keras3_inputs)["pooled_output"]
  logits = model.classifier(tf.constant(np.asarray(pooled)), training=False).numpy()
  _agree("Keras 3 recipe", want, [record.problem.answer(row) for row in logits], "single")


QUESTIONS = ["What is the price?", "How many units are there?", "Who made it (and where)?",
             "Is it ``heavy-duty''?"]


def _race_files(data_dir):
  """RACE's layout: a generated training split, and a test split of the realistic texts,
  each an article with two questions and four options."""
  import os  # pylint: disable=import-outside-toplevel
  from albert_tf.data import sample_corpus  # pylint: disable=import-outside-toplevel
  sample_corpus.write_race_task(str(data_dir), sizes=(("train", 8), ("dev", 2)))
  options = [["£29.99", "1,250 rpm", "ÉLAN", "65 W"], ["2,500", "12, 34", "v3.5", "1.5 L"]]
  for n, article in enumerate(t for t in TEXTS if t):
    level = ("middle", "high")[n % 2]
    directory = os.path.join(data_dir, "RACE", "test", level)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{n}.txt"), "w", encoding="utf-8") as f:
      json.dump(dict(article=article, questions=QUESTIONS[n % 2::2], options=options,
                     answers=["A", "B"], id=f"{level}{n}.txt"), f, ensure_ascii=False)


def _squad_files(tmp_path, version_2=False):
  """A generated SQuAD training file (v1.1, or v2.0 with unanswerable questions), and a
  predict file of the realistic texts as contexts, each with the questions above."""
  from albert_tf.data import sample_corpus  # pylint: disable=import-outside-toplevel
  train = sample_corpus.write_squad_task(str(tmp_path / "train.json"), 40, filler_sentences=1,
                                         version_2_with_negative=version_2)
  paragraphs = [dict(context=t, qas=[dict(id=f"q{n}_{k}", question=q)
                                     for k, q in enumerate(QUESTIONS)])
                for n, t in enumerate(TEXTS) if t]
  predict = tmp_path / "predict.json"
  version = "v2.0" if version_2 else "1.1"
  predict.write_text(json.dumps(dict(version=version, data=[dict(title="doors",
                                                                 paragraphs=paragraphs)]),
                                ensure_ascii=False), encoding="utf-8")
  return train, str(predict)


def reader_or_chooser_run(kind, start, tmp_path, max_qa_length=16):
  """A run of `kind` (squad, squad_v2 or race) fine-tuned from `start` a few steps, with
  --do_predict on the realistic texts as contexts (or articles): (the run, the rows asked
  of it, --do_predict's answers, v2.0's null scores or None)."""
  run = tmp_path / "run"
  model_flags = dict(albert_config_file=start["config"], init_checkpoint=start["init"],
                     spm_model_file=start["spm"], output_dir=str(run), progress=False)
  null_odds = None
  if kind.startswith("squad"):
    from albert_tf.tasks import question_answering  # pylint: disable=import-outside-toplevel
    version_2 = kind == "squad_v2"
    train, predict_file = _squad_files(tmp_path, version_2)
    question_answering.run(question_answering.SquadOptions(
        train_file=train, predict_file=predict_file, max_seq_length=SEQ, doc_stride=16,
        max_query_length=12, do_train=True, do_predict=True, train_batch_size=16,
        num_train_epochs=1, save_checkpoints_steps=100, version_2_with_negative=version_2,
        **model_flags))
    with open(run / "predictions.json", encoding="utf-8") as f:
      predicted = json.load(f)
    if version_2:
      with open(run / "null_odds.json", encoding="utf-8") as f:
        null_odds = json.load(f)
    data = json.loads(open(predict_file, encoding="utf-8").read())["data"][0]["paragraphs"]
    rows = [dict(id=qa["id"], question=qa["question"], context=p["context"])
            for p in data for qa in p["qas"]]
    want = [predicted[r["id"]] for r in rows]
    # answers that move with the text (v2.0's "" being one)
    assert len(set(want)) > len(rows) // (4 if version_2 else 3), want
    if version_2:     # some answered, some not
      assert 0 < sum(w == "" for w in want) < len(want), want
  else:
    from albert_tf.data import race  # pylint: disable=import-outside-toplevel
    from albert_tf.tasks import multiple_choice  # pylint: disable=import-outside-toplevel
    _race_files(tmp_path / "race")
    multiple_choice.run(multiple_choice.RaceOptions(
        data_dir=str(tmp_path / "race"), max_seq_length=SEQ, max_qa_length=max_qa_length,
        do_train=True, do_predict=True, train_batch_size=8, train_step=2, warmup_step=0,
        save_checkpoints_steps=2, **model_flags))
    written = _answers(run / "test_predictions.jsonl")
    examples = race.read_examples(str(tmp_path / "race"), "test")
    rows = [dict(id=e.qas_id, article=e.article, question=e.question, options=e.options)
            for e in examples]
    assert [w["id"] for w in written] == [r["id"] for r in rows]
    want = [dict(choice=w["choice"], probabilities=w["probabilities"]) for w in written]
    spread = np.ptp(np.array([w["probabilities"] for w in want]), axis=0).max()
    assert spread > 1e-3, spread                 # answers that move with the text
  return run, rows, want, null_odds


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["squad_v2", "race"])
def test_a_reader_and_a_chooser_answer_through_every_door_as_do_predict(kind, start, tmp_path):
  """SQuAD v2.0 (answers: the span's text and characters; "" when the null score is over
  the threshold, and that score) and RACE (the choice and its probabilities), on the
  realistic texts as contexts and articles: predict.py with TensorFlow and ONNX Runtime
  and Beam give --do_predict's answers. (A SQuAD v1.1 run's answers are the same logits
  under v1.1's rules, whichever runtime gives them: predict.py's are --do_predict's in
  tests/test_squad.py.)"""
  run, rows, want, null_odds = reader_or_chooser_run(kind, start, tmp_path)
  source = _write(tmp_path / "rows.jsonl", rows)
  for door, got in _predict_doors(run, source, tmp_path).items():
    assert [g["id"] for g in got] == [r["id"] for r in rows], door
    if kind.startswith("squad"):
      assert [g["answer"] for g in got] == want, door
      for g, r in zip(got, rows):      # each answer is the context's own characters
        assert g["answer"] == "" or r["context"][g["start"]:g["end"]] == g["answer"], door
      if null_odds is not None:
        # (answered: null score at most --null_score_diff_threshold, 0; its best span may
        # still be "", when no span is valid)
        assert [g["has_answer"] for g in got] == [null_odds[r["id"]] <= 0 for r in rows], door
        assert_close([g["null_score"] for g in got], [null_odds[r["id"]] for r in rows], 1e-5)
    else:
      assert [g["choice"] for g in got] == [w["choice"] for w in want], door
      assert_close([g["probabilities"] for g in got], [w["probabilities"] for w in want], 1e-5)
    print(f"  {kind:10s} {door:34s} {len(got)}/{len(rows)} answers the same")


def tagger_run(start, tmp_path):
  """A run_ner.py run of 1 pass fine-tuned from `start` (2 passes) a few steps, with
  --do_predict on the realistic texts split into words as its serving export splits them:
  (the run, its serving signature, the texts, their words, --do_predict's tags of each
  word)."""
  from albert_tf.tasks import token_classification  # pylint: disable=import-outside-toplevel
  from albert_tf.text.preprocessing import word_spans  # pylint: disable=import-outside-toplevel
  from common import write_conll  # pylint: disable=import-outside-toplevel
  data = write_conll(str(tmp_path / "conll"), sizes=(("train", 40), ("dev", 8), ("test", 4)))
  texts = [t for t in TEXTS if t]
  # The test file: the texts cut into words where the serving export cuts them (checked
  # against the export below), so that one run trains and predicts.
  words = [[w.decode() for w in sentence] for sentence in
           word_spans(tf.constant(texts))[0].to_list()]
  with open(f"{data}/test.txt", "w", encoding="utf-8") as f:
    f.write("".join("".join(f"{w} _ _ O\n" for w in sentence) + "\n" for sentence in words))
  run = tmp_path / "run"
  token_classification.run(token_classification.NerOptions(
      data_dir=data, output_dir=str(run), albert_config_file=start["config"],
      init_checkpoint=start["init"], spm_model_file=start["spm"], max_seq_length=SEQ,
      doc_stride=16, train_batch_size=8, train_step=2, warmup_step=0,
      save_checkpoints_steps=2, progress=False, do_train=True, do_eval=False,
      do_predict=True, num_hidden_layers=1))   # (ALBERT lite: the 2-pass block applied once)
  assert runs.Run.read(str(run)).config.num_hidden_layers == 1
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  serve = tf.saved_model.load(runs.Run.read(str(run)).serving_export()).signatures[
      "serving_default"]
  served = {k: v.numpy() for k, v in serve(sentences=tf.constant(texts)).items()}
  assert [[w.decode() for w in served["words"][i][:served["num_words"][i]]]
          for i in range(len(texts))] == words
  lines = (run / "test_predictions.txt").read_text(encoding="utf-8").split("\n")
  predicted, sentence = [], []
  for line in lines:
    if line.strip():
      sentence.append(line.split()[-1])
    elif sentence:
      predicted.append(sentence)
      sentence = []
  assert len(predicted) == len(texts)
  assert sum(t != "O" for s in predicted for t in s) > 5       # tags that move with the text
  for i, tags in enumerate(predicted):
    assert [t.decode() for t in served["tags"][i][:len(tags)]] == tags, texts[i]
  return run, serve, texts, words, predicted


@pytest.mark.slow
def test_a_tagger_answers_through_every_door_as_do_predict(start, tmp_path):
  """run_ner.py: the realistic texts, split into words as the tagger splits them, as a
  CoNLL test file; --do_predict's tags are the serving export's, and the entities of
  predict.py (locally and on Beam) are the serving export's, in the text's characters;
  TFLite's tags at each word's first piece are --do_predict's."""
  from albert_tf.data import ner  # pylint: disable=import-outside-toplevel
  from test_ner import check_lite_tags, check_served_entities  # pylint: disable=import-outside-toplevel
  run, serve, texts, words, predicted = tagger_run(start, tmp_path)
  served = {k: v.numpy() for k, v in serve(sentences=tf.constant(texts)).items()}
  scheme = runs.Run.read(str(run)).settings.tag_scheme
  check_served_entities(serve, words, predicted, " ", scheme)
  entities = [[dict(type=served["entity_types"][i][e].decode(),
                    text=served["entity_texts"][i][e].decode(),
                    start=int(served["entity_starts"][i][e]), end=int(served["entity_ends"][i][e]))
               for e in range(served["num_entities"][i])] for i in range(len(texts))]
  assert [[(x["type"], texts[i][x["start"]:x["end"]]) for x in found]
          for i, found in enumerate(entities)] == [
      [(x["type"], x["text"]) for x in found] for found in entities]
  source = _write(tmp_path / "rows.jsonl", [dict(id=f"r{i}", text=t) for i, t in enumerate(texts)])
  # (a tagger answers through its own TensorFlow graph: no ONNX Runtime door)
  for door, got in _predict_doors(run, source, tmp_path, ("tensorflow",)).items():
    assert [g["entities"] for g in got] == entities, door
    print(f"  {'NER':10s} {door:34s} {len(got)}/{len(texts)} answers the same")
  # TFLite tags one window (no windows on device): the sentences that fit in one.
  tokenizer = runs.Run.read(str(run)).tokenizer()
  fits = [i for i, w in enumerate(words)
          if sum(map(len, ner.word_pieces(tokenizer, w))) + 2 <= SEQ]
  assert len(fits) >= 3
  check_lite_tags(run, tmp_path / "ner.tflite", [words[i] for i in fits],
                  [predicted[i] for i in fits], SEQ)
