"""GLUE: readers on files in the real formats, metrics against scikit-learn and SciPy,
fine-tuning from an original checkpoint and from a TF-Hub export, outputs, resume, errors."""

import csv
import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import time
import unittest.mock

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
import tensorflow as tf
import tf_keras as keras

from albert_tf import AlbertConfig, AlbertPretrainer, runs, save_original_checkpoint
from albert_tf.problems import Problem
from albert_tf.tasks import classification as classifier
from albert_tf.training import metrics
from albert_tf.training import trainer as training
from albert_tf.data import glue, own, records
from albert_tf.files import WriteFailed
from albert_tf.export import serving as export_module
from albert_tf.commands.export_tf_hub import export_from_sources
from albert_tf.text.preprocessing import AlbertTokenizer
from common import assert_close, read_results, split_logits_by_bucketing

ROOT = pathlib.Path(__file__).resolve().parents[1]

# ----------------------------------------------------------------------------- readers

# Rows as the GLUE download has them (header first; CoLA train/dev have none).
MNLI_TRAIN_HEADER = ("index promptID pairID genre sentence1_binary_parse sentence2_binary_parse "
                     "sentence1_parse sentence2_parse sentence1 sentence2 label1 gold_label").split()
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:-1] + ["label2", "label3", "label4", "label5", "gold_label"]
FILES = {
    "CoLA": {
        "train.tsv": [["gj04", "1", "", "Our friends won't buy this analysis."],
                      ["gj04", "0", "*", "They drank the pub."]],
        "dev.tsv": [["gj04", "1", "", "The sailors rode the breeze clear of the rocks."]],
        "test.tsv": [["index", "sentence"], ["0", "Bill whistled past the house."]],
    },
    "MNLI": {
        "train.tsv": [MNLI_TRAIN_HEADER,
                      ["0", "31193", "31193n", "government", "( ( A ) )", "( B )", "(ROOT A)",
                       "(ROOT B)", "Conceptually cream skimming has two dimensions.",
                       "Product and geography are what make cream skimming work.", "neutral",
                       "neutral"]],
        "dev_matched.tsv": [MNLI_DEV_HEADER,
                            ["0", "63735", "63735n", "slate", "(a)", "(b)", "(A)", "(B)",
                             "The new rights are nice enough", "Everyone really likes them.",
                             "neutral", "entailment", "neutral", "neutral", "neutral", "neutral"]],
        "dev_mismatched.tsv": [MNLI_DEV_HEADER,
                               ["0", "75290", "75290c", "letters", "(a)", "(b)", "(A)", "(B)",
                                "Your contribution helped.", "It did not help.", "contradiction",
                                "contradiction", "contradiction", "contradiction",
                                "contradiction", "contradiction"]],
        "test_matched.tsv": [MNLI_TRAIN_HEADER[:10],
                             ["0", "31", "31n", "fiction", "(a)", "(b)", "(A)", "(B)",
                              "Hierbas, ans seco.", "Hierbas is a name."]],
        "test_mismatched.tsv": [MNLI_TRAIN_HEADER[:10],
                                ["0", "9", "9n", "verbatim", "(a)", "(b)", "(A)", "(B)",
                                 "What a day.", "It was a day."]],
    },
    "MRPC": {
        "train.tsv": [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                      ["1", "702876", "702977", "Amrozi accused his brother .",
                       "Referring to him as only \" the witness \" , Amrozi accused his brother ."],
                      ["0", "2108705", "2108831", "Yucaipa owned Dominick 's .",
                       "Yucaipa bought Dominick 's in 1995 ."]],
        "dev.tsv": [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                    ["1", "1355540", "1355592", "He said the foodservice pie business .",
                     "The foodservice pie business does not fit ."]],
        "test.tsv": [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                     ["0", "1089874", "1089925", "PCCW 's chief operating officer .",
                      "Current Chief Operating Officer Mike Butcher ."]],
    },
    "QNLI": {
        "train.tsv": [["index", "question", "sentence", "label"],
                      ["0", "When did the third Digimon series begin?",
                       "Unlike the two seasons before it, Frontier was darker.", "not_entailment"]],
        "dev.tsv": [["index", "question", "sentence", "label"],
                    ["0", "What came into force?", "The Constitution came into force.",
                     "entailment"]],
        "test.tsv": [["index", "question", "sentence"], ["0", "What is it?", "It is this."]],
    },
    "QQP": {
        "train.tsv": [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                      ["133273", "213221", "213222", "How is the life of a math student?",
                       "Which level of prepration is enough?", "0"]],
        "dev.tsv": [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                    ["201359", "303345", "303346", "Why are African-Americans so beautiful?",
                     "Why are hispanics so beautiful?", "0"]],
        "test.tsv": [["id", "question1", "question2"],
                     ["0", "Why do rockets look white?", "Why are rockets white?"]],
    },
    "RTE": {
        "train.tsv": [["index", "sentence1", "sentence2", "label"],
                      ["0", "No Weapons of Mass Destruction Found in Iraq Yet.",
                       "Weapons of Mass Destruction Found in Iraq.", "not_entailment"]],
        "dev.tsv": [["index", "sentence1", "sentence2", "label"],
                    ["0", "Dana Reeve died.", "Christopher Reeve had an accident.",
                     "not_entailment"]],
        "test.tsv": [["index", "sentence1", "sentence2"], ["0", "Mangla was built.", "It is a dam."]],
    },
    "SST-2": {
        "train.tsv": [["sentence", "label"], ["hide new secretions from the parental units ", "0"]],
        "dev.tsv": [["sentence", "label"], ["it 's a charming and often affecting journey . ", "1"]],
        "test.tsv": [["index", "sentence"], ["0", "uneasy mishmash of styles and genres ."]],
    },
    "STS-B": {
        "train.tsv": [["index", "genre", "filename", "year", "old_index", "source1", "source2",
                       "sentence1", "sentence2", "score"],
                      ["0", "main-captions", "MSRvid", "2012test", "0001", "none", "none",
                       "A plane is taking off.", "An air plane is taking off.", "5.000"]],
        "dev.tsv": [["index", "genre", "filename", "year", "old_index", "source1", "source2",
                     "sentence1", "sentence2", "score"],
                    ["0", "main-captions", "MSRvid", "2012test", "0000", "none", "none",
                     "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.",
                     "4.750"]],
        "test.tsv": [["index", "genre", "filename", "year", "old_index", "source1", "source2",
                      "sentence1", "sentence2"],
                     ["0", "main-captions", "MSRvid", "2012test", "0024", "none", "none",
                      "A girl is styling her hair.", "A girl is brushing her hair."]],
    },
    "WNLI": {
        "train.tsv": [["index", "sentence1", "sentence2", "label"],
                      ["0", "I stuck a pin through a carrot.", "The carrot had a hole.", "1"]],
        "dev.tsv": [["index", "sentence1", "sentence2", "label"],
                    ["0", "The drain is clogged with hair.", "The hair has to be cleaned.", "0"]],
        "test.tsv": [["index", "sentence1", "sentence2"],
                     ["0", "Maude and Dora had seen the trains.", "Dora had seen the trains."]],
    },
    "AX": {
        "diagnostic.tsv": [["index", "sentence1", "sentence2"],
                           ["0", "The cat sat on the mat.", "The cat did not sit on the mat."]],
    },
}
# (split, guid, text_a, text_b, label) of the first example each reader must yield.
EXPECTED = {
    "CoLA": [("train", "train-0", "Our friends won't buy this analysis.", None, "1"),
             ("dev", "dev-0", "The sailors rode the breeze clear of the rocks.", None, "1"),
             ("test", "0", "Bill whistled past the house.", None, None)],
    "MNLI": [("train", "train-1", "Conceptually cream skimming has two dimensions.",
              "Product and geography are what make cream skimming work.", "neutral"),
             ("dev", "dev-1", "The new rights are nice enough", "Everyone really likes them.",
              "neutral"),
             ("dev_mismatched", "dev_mismatched-1", "Your contribution helped.",
              "It did not help.", "contradiction"),
             ("test", "0", "Hierbas, ans seco.", "Hierbas is a name.", None),
             ("test_mismatched", "0", "What a day.", "It was a day.", None)],
    "MRPC": [("train", "train-1", "Amrozi accused his brother .",
              "Referring to him as only \" the witness \" , Amrozi accused his brother .", "1"),
             ("test", "0", "PCCW 's chief operating officer .",
              "Current Chief Operating Officer Mike Butcher .", None)],
    "QNLI": [("dev", "dev-1", "What came into force?", "The Constitution came into force.",
              "entailment"), ("test", "0", "What is it?", "It is this.", None)],
    "QQP": [("train", "train-1", "How is the life of a math student?",
             "Which level of prepration is enough?", "0"),
            ("test", "0", "Why do rockets look white?", "Why are rockets white?", None)],
    "RTE": [("train", "train-1", "No Weapons of Mass Destruction Found in Iraq Yet.",
             "Weapons of Mass Destruction Found in Iraq.", "not_entailment")],
    "SST-2": [("train", "train-1", "hide new secretions from the parental units ", None, "0"),
              ("test", "0", "uneasy mishmash of styles and genres .", None, None)],
    "STS-B": [("train", "train-1", "A plane is taking off.", "An air plane is taking off.",
               "5.000"),
              ("test", "0", "A girl is styling her hair.", "A girl is brushing her hair.", None)],
    "WNLI": [("dev", "dev-1", "The drain is clogged with hair.", "The hair has to be cleaned.",
              "0")],
    "AX": [("test", "0", "The cat sat on the mat.", "The cat did not sit on the mat.", None)],
}


def write_glue(root):
  """Every task's files under `root/<task dir>/`, as the GLUE download lays them out."""
  for name, files in FILES.items():
    directory = os.path.join(root, glue.get_task(name).directory)
    os.makedirs(directory, exist_ok=True)
    for filename, rows in files.items():
      with open(os.path.join(directory, filename), "w", encoding="utf-8") as f:
        f.writelines("\t".join(row) + "\n" for row in rows)
  return root


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_readers_on_the_real_formats(tmp_path, name):
  root = write_glue(str(tmp_path))
  task = glue.get_task(name.lower())  # names are case-insensitive
  for split, guid, text_a, text_b, label in EXPECTED[name]:
    # The GLUE root and the task's own directory both work as --data_dir.
    for data_dir in (root, os.path.join(root, task.directory)):
      first = glue.read_examples(data_dir, task, split)[0]
      assert (first.guid, first.text_a, first.text_b, first.label) == (guid, text_a, text_b, label)
  for split in task.splits:
    assert glue.read_examples(root, task, split)
  if not task.is_regression:
    for split in [s for s in task.splits if not s.startswith("test")]:
      for e in glue.read_examples(root, task, split):
        assert Problem.of_glue(task).target(e.label, "") == task.labels.index(e.label)


def test_task_table():
  assert glue.get_task("sts-b").is_regression and glue.get_task("STS-B").num_labels == 1
  assert glue.get_task("mnli").submission == dict(test="MNLI-m", test_mismatched="MNLI-mm")
  assert glue.get_task("cola").best_metric == "matthews_corrcoef"
  assert glue.get_task("sts-b").best_metric == "pearson"
  assert glue.get_task("mrpc").best_metric == "accuracy"
  with pytest.raises(ValueError, match="unknown --task_name='squad'; known tasks: CoLA, MNLI, "
                     "MRPC, QNLI, QQP, RTE, SST-2, STS-B, WNLI, AX"):
    glue.get_task("squad")


def test_trailing_blank_lines_are_ignored_and_inner_ones_named(tmp_path):
  """A TSV ending in blank lines (as `echo >>` and many editors leave) reads as without
  them; a blank line between rows is still an error naming its line."""
  root = write_glue(str(tmp_path))
  mrpc = glue.get_task("MRPC")
  path = os.path.join(root, "MRPC", "train.tsv")
  want = glue.read_examples(root, mrpc, "train")
  with open(path, "a") as f:
    f.write("\n\n  \n")
  assert glue.read_examples(root, mrpc, "train") == want
  with open(path) as f:
    lines = f.read().rstrip().split("\n")
  with open(path, "w") as f:
    f.write("\n".join(lines[:2] + [""] + lines[2:]) + "\n\n")
  with pytest.raises(ValueError, match=f"{path}:3: expected 5 tab-separated fields, found 0"):
    glue.read_examples(root, mrpc, "train")


def test_reader_errors(tmp_path):
  root = write_glue(str(tmp_path))
  mrpc = glue.get_task("MRPC")
  path = os.path.join(root, "MRPC", "train.tsv")
  with open(path, "a") as f:
    f.write("1\t1\t2\tonly four fields\n")
  with pytest.raises(ValueError, match=f"{path}:4: expected 5 tab-separated fields, found 4"):
    glue.read_examples(root, mrpc, "train")
  with open(path, "w") as f:
    f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\nyes\t1\t2\ta\tb\n")
  with pytest.raises(ValueError, match=f"{path}:2: MRPC label 'yes' is not one of 0, 1"):
    glue.read_examples(root, mrpc, "train")
  stsb = os.path.join(root, "STS-B", "dev.tsv")
  with open(stsb, "a") as f:
    f.write("\t".join(["1", "g", "f", "y", "o", "s1", "s2", "a", "b", "high"]) + "\n")
  with pytest.raises(ValueError, match=f"{stsb}:3: STS-B label 'high' is not a number"):
    glue.read_examples(root, glue.get_task("sts-b"), "dev")
  os.remove(os.path.join(root, "RTE", "dev.tsv"))
  with pytest.raises(FileNotFoundError, match="RTE dev file .*RTE/dev.tsv not found"):
    glue.read_examples(root, glue.get_task("rte"), "dev")
  qqp = os.path.join(root, "QQP", "train.tsv")
  with open(qqp, "a") as f:
    f.write("1\t2\t3\tbroken row\n")
  with pytest.raises(ValueError, match="--skip_malformed_rows"):
    glue.read_examples(root, glue.get_task("qqp"), "train")
  assert len(glue.read_examples(root, glue.get_task("qqp"), "train", skip_malformed_rows=True)) == 1


# ----------------------------------------------------------------------------- metrics

def test_metrics_match_sklearn_and_scipy():
  rng = np.random.default_rng(0)
  for trial in range(20):
    n = int(rng.integers(5, 200))
    labels, predictions = rng.integers(0, 2, n), rng.integers(0, 2, n)
    assert metrics.accuracy(labels, predictions) == pytest.approx(
        sklearn.metrics.accuracy_score(labels, predictions), abs=1e-12)
    assert metrics.f1(labels, predictions) == pytest.approx(
        sklearn.metrics.f1_score(labels, predictions, zero_division=0), abs=1e-12)
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(labels, predictions), abs=1e-12)
    three, three_pred = rng.integers(0, 3, n), rng.integers(0, 3, n)
    assert metrics.matthews_corrcoef(three, three_pred) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(three, three_pred), abs=1e-12)
    x = rng.normal(size=n)
    y = x * rng.normal() + rng.normal(size=n)
    ties = np.round(rng.uniform(0, 5, n) * 2) / 2  # STS-B-like scores with ties
    assert metrics.pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y)[0], abs=1e-12)
    assert metrics.spearman(ties, y) == pytest.approx(scipy.stats.spearmanr(ties, y)[0], abs=1e-12)
  assert metrics.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0  # sklearn's convention
  assert metrics.f1([0, 0], [0, 0]) == 0.0


# ----------------------------------------------------------------------------- fine-tuning

CFG = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
           num_hidden_groups=1, num_attention_heads=2, intermediate_size=64,
           max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
SEQ = 48


def write_keyword_task(directory, seed=0, sizes=(("train", 600), ("dev", 200), ("test", 50))):
  """A learnable MRPC-format task: pairs of pydoc sentences, positive when sentence 2
  holds the word "indeed" (somewhere), negative when it holds "however"; 68% positive."""
  from albert_tf.data import sample_corpus
  rng = np.random.default_rng(seed)
  sentences = [s.split() for doc in sample_corpus.pydoc_documents() for s in doc
               if 4 <= len(s.split()) <= 8]
  os.makedirs(directory, exist_ok=True)
  for split, count in sizes:
    with open(os.path.join(directory, f"{split}.tsv"), "w") as f:
      f.write(("index" if split == "test" else "Quality") + "\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
      for i in range(count):
        a, b = (sentences[j] for j in rng.integers(len(sentences), size=2))
        label = int(rng.random() < 0.68)
        b = list(b)
        b.insert(int(rng.integers(len(b) + 1)), "indeed" if label else "however")
        first = str(i) if split == "test" else str(label)
        f.write(f"{first}\t{2 * i}\t{2 * i + 1}\t{' '.join(a)}\t{' '.join(b)}\n")
  return directory


@pytest.fixture(scope="module")
def model_files(tmp_path_factory, spm_model, learning_seed):
  root = tmp_path_factory.mktemp("glue_model")
  keras.utils.set_random_seed(learning_seed)   # the start weights of every run here
  AlbertConfig.from_dict(CFG).to_json_file(str(root / "albert_config.json"))
  init = save_original_checkpoint(AlbertPretrainer(CFG), str(root / "original" / "model.ckpt-best"))
  hub = export_from_sources(str(root / "hub"), albert_config_file=str(root / "albert_config.json"),
                            init_checkpoint=init, spm_model_file=spm_model)["encoder"]
  data = write_keyword_task(str(root / "MRPC"))
  return dict(config=str(root / "albert_config.json"), init=init, hub=hub, spm=spm_model,
              data=data, root=root, seed=learning_seed)


def options(files, output_dir, **kwargs):
  base = dict(data_dir=files["data"], output_dir=str(output_dir), task_name="MRPC",
              albert_config_file=files["config"], init_checkpoint=files["init"],
              spm_model_file=files["spm"], max_seq_length=SEQ, train_batch_size=16,
              eval_batch_size=32, predict_batch_size=32, learning_rate=2e-3, train_step=240,
              warmup_step=24, save_checkpoints_steps=80, keep_checkpoint_max=2, log_steps=10,
              progress=False, do_train=True, do_eval=True, do_predict=True, seed=files["seed"])
  if "train_step" in kwargs and "warmup_step" not in kwargs:
    base["warmup_step"] = kwargs["train_step"] // 10
  base.update(kwargs)
  return classifier.ClassifierOptions(**base)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["original_checkpoint", "tf_hub"])
@pytest.mark.learning
def test_fine_tuning_learns_and_writes_every_output(model_files, tmp_path, source):
  out = tmp_path / source
  extra = dict(albert_config_file=None, init_checkpoint=None, spm_model_file="from_tf_hub",
               albert_hub_module_handle=model_files["hub"]) if source == "tf_hub" else {}
  if source == "tf_hub":
    extra["threshold_to_export"] = 0.75
  result = classifier.run(options(model_files, out, export_dir=str(out / "serving"), **extra))
  evaluation = result["eval"]
  print(source, evaluation)
  assert evaluation["majority_baseline_accuracy"] < 0.75
  assert evaluation["accuracy"] >= 0.95 and evaluation["f1"] >= 0.95
  assert evaluation == pytest.approx(read_results(out))
  files = set(os.listdir(out))
  for name in ("model.ckpt-best.index", "best_trial.txt", "eval_results.txt", "eval_log.csv",
               "train_log.csv", "learning_curve.png", "MRPC.tsv", runs.RECORD, "train",
               "eval", "serving"):
    assert name in files, name
  # Pruned to keep_checkpoint_max recent checkpoints (model.ckpt-best apart).
  assert sorted(f for f in files if f.startswith("ckpt-") and f.endswith(".index")) \
      == ["ckpt-160.index", "ckpt-240.index"]
  with open(out / "eval_log.csv") as f:
    assert [int(r["step"]) for r in csv.DictReader(f)] == [80, 160, 240]
  with open(out / "MRPC.tsv") as f:
    rows = list(csv.reader(f, delimiter="\t"))
  assert rows[0] == ["index", "prediction"] and len(rows) == 51
  assert [r[0] for r in rows[1:]] == [str(i) for i in range(50)]
  assert {r[1] for r in rows[1:]} <= {"0", "1"}

  # The serving SavedModel: raw sentences in, the classifier's probabilities out.
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  serving = tf.saved_model.load(str(out / "serving"))
  examples = glue.read_examples(model_files["data"], glue.get_task("mrpc"), "test")[:8]
  served = serving.signatures["serving_default"](
      sentence1=tf.constant([e.text_a for e in examples]),
      sentence2=tf.constant([e.text_b for e in examples]))
  run = classifier.ClassifierRun(options(model_files, out, do_train=False, do_eval=False, **extra))
  model = run.build_model()
  run.restore_for_inference(model)
  features = [run.features(own.Row([e.text_a, e.text_b], None, i, e.guid, e.line), None)
              for i, e in enumerate(examples)]
  logits = model({k: tf.constant([f[src] for f in features]) for k, src in (
      ("input_word_ids", "input_ids"), ("input_mask", "input_mask"),
      ("input_type_ids", "segment_ids"))}, training=False)
  # Same ids (the in-graph tokenizer equals Python's, tests/test_tokenization.py), same
  # weights; graph and eager kernels differ by ~1e-7. A 2e-5 difference here once came
  # from a SentencePiece tie broken differently in and out of graph.
  assert_close(served["probabilities"].numpy(), tf.nn.softmax(logits).numpy(), 1e-6)
  submitted = [r[1] for r in rows[1:9]]
  assert [s.decode() for s in served["labels"].numpy()] == submitted
  # albert_tf.Predictor (predict.py) on the run and on its serving export: --do_predict's
  # labels on the whole test split (MRPC.tsv), the model's probabilities within 1e-5.
  from albert_tf import Predictor  # pylint: disable=import-outside-toplevel
  test = glue.read_examples(model_files["data"], glue.get_task("mrpc"), "test")
  for path in (out, out / "serving"):
    answers = Predictor.load(str(path), batch_size=16, dtype="float32").predict(
        [(e.text_a, e.text_b) for e in test])
    assert [a["label"] for a in answers] == [r[1] for r in rows[1:]]
    assert_close([[a["probabilities"][k] for k in ("0", "1")] for a in answers[:8]],
                 tf.nn.softmax(logits).numpy(), 1e-5)
  if source == "tf_hub":   # the original's --threshold_to_export, served along
    assert served["threshold"].numpy().tolist() == [0.75] * 8
  else:
    assert "threshold" not in served
    # Rerunning the finished command leaves the export of the same weights alone.
    made = os.stat(out / "serving" / "saved_model.pb").st_mtime_ns
    again = classifier.run(options(model_files, out, export_dir=str(out / "serving")))
    assert again["eval"] == pytest.approx(evaluation)
    assert os.stat(out / "serving" / "saved_model.pb").st_mtime_ns == made


@pytest.mark.slow
def test_resume_after_kill_9_or_sigterm_gives_the_uninterrupted_weights(model_files, tmp_path):
  """With dropout 0.1 everywhere: 60 steps straight, and 60 steps by run_classifier.py
  stopped mid-run then rerun with the same flags, end equal (weights within 1e-6, logs
  without a step twice). SIGKILL past the first checkpoint (step 20): the rerun redoes
  the steps since it. SIGTERM (what Kubernetes, Slurm and preemptible VMs send) at a step
  that is no checkpoint step: the run saves that step, releases its lock, says so in one
  line and exits with 75; the rerun continues from there."""
  config = tmp_path / "albert_config.json"
  AlbertConfig.from_dict(dict(CFG, hidden_dropout_prob=0.1,
                              attention_probs_dropout_prob=0.1)).to_json_file(str(config))
  common = dict(albert_config_file=str(config), train_step=60, save_checkpoints_steps=20,
                dropout_prob=0.1, do_eval=True, do_predict=False, log_steps=1)
  classifier.run(options(model_files, tmp_path / "straight", **common))

  for stop in (signal.SIGKILL, signal.SIGTERM):
    crashed = tmp_path / stop.name
    flags = [f"--{k}={v}" for k, v in dataclasses.asdict(
        options(model_files, crashed, **common)).items() if v is not None]
    process = subprocess.Popen([sys.executable, str(ROOT / "run_classifier.py")] + flags,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
      rows = training.read_csv(str(crashed / "train_log.csv"))
      if (crashed / "ckpt-20.index").exists() and rows and int(rows[-1]["step"]) >= 27:
        break
      time.sleep(0.05)
    assert process.poll() is None, process.stderr.read()[-3000:]
    process.send_signal(stop)
    stderr = process.communicate(timeout=300)[1]
    logged = [int(r["step"]) for r in training.read_csv(str(crashed / "train_log.csv"))]
    latest = tf.train.latest_checkpoint(str(crashed))
    if stop == signal.SIGKILL:
      assert latest.endswith("/ckpt-20") and logged[-1] > 20
    else:
      step = logged[-1]
      assert 27 < step < 60 and step % 20, step     # a step that is no checkpoint step
      assert process.returncode == training.STOPPED_EXIT_CODE == 75, stderr[-3000:]
      assert stderr.strip().splitlines()[-1] == (
          f"run_classifier.py: stopped by SIGTERM at step {step}; rerun the same command "
          "to continue"), stderr[-3000:]
      assert "Traceback" not in stderr
      assert latest.endswith(f"/ckpt-{step}")
      assert not (crashed / ".albert_tf.lock").exists()   # released

    classifier.run(options(model_files, crashed, **common))
    worst = 0.0
    for name in ("ckpt-60", "model.ckpt-best"):
      a = tf.train.load_checkpoint(str(tmp_path / "straight" / name))
      b = tf.train.load_checkpoint(str(crashed / name))
      for key in a.get_variable_to_shape_map():
        if key.startswith(("encoder", "classifier")):
          worst = max(worst, float(np.abs(a.get_tensor(key) - b.get_tensor(key)).max()))
    print(f"{stop.name} at step {logged[-1]}; largest weight difference after resuming: "
          f"{worst:.3g}")
    assert worst <= 1e-6
    for log in ("train_log.csv", "eval_log.csv"):  # the redone steps are logged once
      want = training.read_csv(str(tmp_path / "straight" / log))
      got = training.read_csv(str(crashed / log))
      assert [r["step"] for r in got] == [r["step"] for r in want], log
      for key in set(want[0]) - {"step", "examples_per_second"}:
        np.testing.assert_allclose([float(r[key]) for r in got], [float(r[key]) for r in want],
                                   rtol=1e-5, err_msg=f"{log} {key}")
  with pytest.raises(ValueError, match="--learning_rate=0.002 then, --learning_rate=0.001 now"):
    classifier.run(options(model_files, crashed, **dict(common, learning_rate=1e-3)))


def test_a_full_disk_at_a_checkpoint_is_one_line_and_the_rerun_completes(model_files,
                                                                         tmp_path):
  """The training checkpoint of step 8 finds the disk full (TensorFlow's SaveV2 error):
  the run ends with one line naming the output directory, the space a checkpoint needs
  and that rerunning continues; ckpt-4 stays whole, no temporary is left; the rerun
  (space freed) resumes from step 4 and ends as a run that never failed."""
  common = dict(train_step=12, save_checkpoints_steps=4, do_eval=False, do_predict=False,
                log_steps=1)
  out = tmp_path / "out"
  real_save = tf.train.CheckpointManager.save

  def save(manager, checkpoint_number=None, **kwargs):
    if checkpoint_number == 8:
      raise tf.errors.ResourceExhaustedError(
          None, None, f"{out}/ckpt-8_temp/part-00000-of-00001.data-00000-of-00001.tempstate1"
          "; No space left on device [Op:SaveV2]")
    return real_save(manager, checkpoint_number=checkpoint_number, **kwargs)

  with unittest.mock.patch.object(tf.train.CheckpointManager, "save", save):
    with pytest.raises(WriteFailed) as failure:
      classifier.run(options(model_files, out, **common))
  message = str(failure.value)
  assert message.startswith(f"cannot write {out}: No space left on device (it needs about ")
  assert message.endswith("free some space and rerun the same command to continue")
  assert "\n" not in message
  assert tf.train.latest_checkpoint(str(out)).endswith("/ckpt-4")
  assert not [n for n in os.listdir(out) if "tmp" in n or "temp" in n or n.startswith(".ckpt")]

  classifier.run(options(model_files, out, **common))
  classifier.run(options(model_files, tmp_path / "straight", **common))
  for key, _ in tf.train.list_variables(str(out / "ckpt-12")):
    if key.startswith("encoder"):
      assert_close(tf.train.load_variable(str(out / "ckpt-12"), key),
                   tf.train.load_variable(str(tmp_path / "straight" / "ckpt-12"),
                                                        key),
                   1e-6)
  steps = [r["step"] for r in training.read_csv(str(out / "train_log.csv"))]
  assert steps == [str(i) for i in range(1, 13)]


def test_a_second_run_on_the_same_output_dir_stops_at_once(model_files, tmp_path):
  out = tmp_path / "out"
  flags = [f"--{k}={v}" for k, v in dataclasses.asdict(
      options(model_files, out, train_step=100000, do_eval=False)).items() if v is not None]
  first = subprocess.Popen([sys.executable, str(ROOT / "run_classifier.py")] + flags,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.time() + 300
    while not (out / runs.RECORD).exists() and first.poll() is None \
        and time.time() < deadline:
      time.sleep(0.05)
    assert first.poll() is None, first.stderr.read()[-3000:]
    started = time.time()
    with pytest.raises(FileExistsError, match=rf"--output_dir={out} is in use by process "
                                              rf"{first.pid} \(still running"):
      classifier.run(options(model_files, out, train_step=100000, do_eval=False))
    assert time.time() - started < 60
  finally:
    first.send_signal(signal.SIGKILL)
    first.wait()


def test_xla_training_step_matches_the_default(model_files, tmp_path):
  """--jit_compile, now a flag of every training script, trains to the same losses."""
  common = dict(train_step=4, save_checkpoints_steps=4, do_eval=False, do_predict=False,
                dropout_prob=0.0, log_steps=1)
  logs = []
  for name, jit in (("plain", False), ("xla", True)):
    classifier.run(options(model_files, tmp_path / name, jit_compile=jit, **common))
    with open(tmp_path / name / "train_log.csv") as f:
      logs.append([float(r["loss"]) for r in csv.DictReader(f)])
  assert_close(logs[0], logs[1], 1e-4)


def test_mirrored_strategy_matches_one_device(model_files, tmp_path):
  common = dict(train_step=4, save_checkpoints_steps=4, do_eval=False, do_predict=False,
                dropout_prob=0.0, log_steps=1)
  classifier.run(options(model_files, tmp_path / "one", **common))
  classifier.run(options(model_files, tmp_path / "two", distribution_strategy="mirrored", **common))
  logs = []
  for name in ("one", "two"):
    with open(tmp_path / name / "train_log.csv") as f:
      logs.append([float(r["loss"]) for r in csv.DictReader(f)])
  assert_close(logs[0], logs[1], 1e-5)


def test_recompute_trains_to_the_same_losses_on_two_replicas(model_files, tmp_path):
  """--recompute under MirroredStrategy: the same losses as keeping the activations."""
  common = dict(train_step=4, save_checkpoints_steps=4, do_eval=False, do_predict=False,
                log_steps=1, distribution_strategy="mirrored")
  for recompute in (False, True):
    classifier.run(options(model_files, tmp_path / str(recompute), recompute=recompute,
                           **common))
  assert_close(_losses(tmp_path / "True"), _losses(tmp_path / "False"), 1e-5)
  with pytest.raises(ValueError, match="--recompute cannot apply to --albert_hub_module_handle"):
    options(model_files, tmp_path / "hub", recompute=True, albert_config_file=None,
            init_checkpoint=None, albert_hub_module_handle=model_files["hub"])


def test_dtype_auto_is_recorded_and_kept_on_resume(model_files, tmp_path, monkeypatch):
  """--dtype=auto's choice (the probe stubbed) is what the run trains in and records; the
  rerun that continues it keeps it even where the probe would now choose otherwise."""
  from albert_tf.modeling import precision  # pylint: disable=import-outside-toplevel
  shape = (16 * SEQ, CFG["hidden_size"], CFG["intermediate_size"])
  seen = []
  for bfloat16, steps in ((2.0, 2), (0.5, 3)):
    monkeypatch.setattr(precision, "PROBE", lambda s, r=bfloat16: seen.append(s) or
                        precision.ProbeResult(s, {"float32": 1.0, "bfloat16": r}))
    result = classifier.run(options(model_files, tmp_path / "auto", dtype="auto",
                                    train_step=steps, save_checkpoints_steps=1, log_steps=1,
                                    do_eval=False, do_predict=False))
    assert np.isfinite(result["train"]["loss"])
    assert runs.read_record(str(tmp_path / "auto"))["training"]["dtype"] == "bfloat16"
  assert seen == [shape]            # measured once, at the model's feed-forward shape
  with open(tmp_path / "auto" / "train_log.csv") as f:
    assert [int(r["step"]) for r in csv.DictReader(f)] == [1, 2, 3]


# ----------------------------------------------------------------------------- bad input

def test_bad_inputs_fail_before_training(model_files, tmp_path, spm_model):
  run = lambda **kw: classifier.run(options(model_files, tmp_path / "out", **kw))
  with pytest.raises(ValueError, match="unknown --task_name='mrcp'; known tasks: CoLA"):
    run(task_name="mrcp")
  with pytest.raises(FileNotFoundError, match="MRPC train file .*nowhere/train.tsv not found"):
    run(data_dir=str(tmp_path / "nowhere"))
  with pytest.raises(ValueError, match="--max_seq_length=65 exceeds the model's "
                     "max_position_embeddings=64"):
    run(max_seq_length=65)
  other = AlbertConfig.from_dict(dict(CFG, vocab_size=1000))
  other.to_json_file(str(tmp_path / "other.json"))
  with pytest.raises(ValueError, match="has 1500 pieces but the model's vocab_size is 1000"):
    run(albert_config_file=str(tmp_path / "other.json"), init_checkpoint=None)
  with pytest.raises(FileNotFoundError, match="--init_checkpoint=.*missing"):
    run(init_checkpoint=str(tmp_path / "missing"))
  with pytest.raises(ValueError, match="from_tf_hub needs --albert_hub_module_handle"):
    run(spm_model_file="from_tf_hub")
  with pytest.raises(ValueError, match="AX has no training data"):
    run(task_name="ax")
  bad = write_keyword_task(str(tmp_path / "bad"), sizes=(("train", 5), ("dev", 5), ("test", 5)))
  with open(os.path.join(bad, "dev.tsv"), "a") as f:
    f.write("1\tonly\tthree\n")
  with pytest.raises(ValueError, match=r"bad/dev.tsv:7: expected 5 tab-separated fields, found 3"):
    run(data_dir=bad)
  assert not os.path.exists(tmp_path / "out")  # nothing was created for failed runs

  # A directory holding something else, or another run, is never reused.
  os.makedirs(tmp_path / "mine")
  (tmp_path / "mine" / "notes.txt").write_text("keep me")
  with pytest.raises(ValueError, match="exists and is not empty"):
    classifier.run(options(model_files, tmp_path / "mine", train_step=2))
  assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
  classifier.run(options(model_files, tmp_path / "done", train_step=2, save_checkpoints_steps=2,
                         do_eval=False, do_predict=False))
  with pytest.raises(ValueError, match="holds another run .*differs in: max_seq_length"):
    classifier.run(options(model_files, tmp_path / "done", train_step=2, max_seq_length=32))


@pytest.mark.slow
def test_run_glue_sh_runs_the_tasks_and_prints_one_table(model_files, tmp_path):
  import shutil
  import subprocess
  import sys
  root = write_glue(str(tmp_path / "glue_data"))
  albert_dir = tmp_path / "albert"
  albert_dir.mkdir()
  shutil.copy(model_files["config"], albert_dir / "albert_config.json")
  shutil.copy(model_files["spm"], albert_dir / "30k-clean.model")
  env = dict(os.environ, GLUE_DIR=root, OUTPUT_DIR=str(tmp_path / "out"), ALBERT_DIR=str(albert_dir),
             INIT_CHECKPOINT=model_files["init"], TASKS="MRPC STS-B", MAX_SEQ_LENGTH="32",
             PYTHON=sys.executable,
             EXTRA_FLAGS="--train_step=2 --save_checkpoints_steps=2 --warmup_step=0 --nodo_predict")
  script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "run_glue.sh")
  done = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  assert f'GLUE_DIR={root} OUTPUT_DIR={tmp_path / "out"} TASKS="MRPC STS-B" ' \
      'MAX_SEQ_LENGTH=32 EXTRA_FLAGS="--train_step=2' in done.stdout   # the settings used
  table = [line for line in done.stdout.splitlines() if line.startswith("|")]
  assert table[0] == "| task | accuracy | f1 | pearson | spearman | loss | global_step |"
  assert table[2].startswith("| MRPC | ") and table[2].endswith(" | 2 |")
  assert table[3].startswith("| STS-B |  |  | ")
  for task in ("MRPC", "STS-B"):
    assert os.path.exists(tmp_path / "out" / task / "model.ckpt-best.index")


@pytest.mark.slow
def test_mnli_writes_both_submissions_and_ax_is_predicted_with_its_model(model_files, tmp_path):
  root = write_glue(str(tmp_path / "glue_data"))
  common = dict(data_dir=root, max_seq_length=32, train_step=2, save_checkpoints_steps=2,
                warmup_step=0, train_batch_size=1, eval_batch_size=1, predict_batch_size=1)
  result = classifier.run(options(model_files, tmp_path / "MNLI", task_name="mnli", **common))
  assert {"accuracy", "loss", "mismatched_accuracy", "mismatched_loss"} <= set(result["eval"])
  for name in ("MNLI-m.tsv", "MNLI-mm.tsv"):
    with open(tmp_path / "MNLI" / name) as f:
      rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["index", "prediction"] and rows[1][1] in glue.get_task("mnli").labels
  best = str(tmp_path / "MNLI" / "model.ckpt-best")
  classifier.run(options(model_files, tmp_path / "AX", task_name="AX", init_checkpoint=best,
                         do_train=False, do_eval=False, **common))
  with open(tmp_path / "AX" / "AX.tsv") as f:
    rows = list(csv.reader(f, delimiter="\t"))
  assert rows[1][1] in ("contradiction", "entailment", "neutral")
  # The AX model is the MNLI model, head included: the same logits on the same pair.
  ax = classifier.ClassifierRun(options(model_files, tmp_path / "AX", task_name="AX",
                                  init_checkpoint=best, do_train=False, do_eval=False, **common))
  mnli = classifier.ClassifierRun(options(model_files, tmp_path / "MNLI", task_name="mnli",
                                    do_train=False, do_eval=False, **common))
  models = []
  for run in (ax, mnli):
    model = run.build_model()
    run.restore_for_inference(model)
    models.append(model)
  inputs = dict(input_word_ids=tf.constant([[2, 10, 11, 3, 12, 3]]),
                input_mask=tf.ones([1, 6], tf.int32), input_type_ids=tf.constant([[0, 0, 0, 0, 1, 1]]))
  assert_close(models[0](inputs).numpy(), models[1](inputs).numpy(), 1e-6)


# ----------------------------------------------------------------------------- bucketing

def _losses(output_dir):
  with open(os.path.join(output_dir, "train_log.csv")) as f:
    return [float(r["loss"]) for r in csv.DictReader(f)]


def test_a_glue_task_is_a_preset_of_the_one_classification_path(model_files, tmp_path):
  """MRPC through --task_name and the same rows as your own JSONL files go through one run
  class: the same features, losses, dev logits and metrics (GLUE's are a preset's)."""
  import json  # pylint: disable=import-outside-toplevel
  task = glue.get_task("MRPC")
  files = {}
  for split in ("train", "dev"):
    files[split] = tmp_path / f"{split}.jsonl"
    with open(files[split], "w", encoding="utf-8") as f:
      for e in glue.read_examples(model_files["data"], task, split):
        f.write(json.dumps(dict(a=e.text_a, b=e.text_b, label=e.label)) + "\n")
  common = dict(train_step=6, save_checkpoints_steps=6, do_eval=True, do_predict=False,
                dropout_prob=0.0, log_steps=1)
  preset = classifier.ClassifierRun(options(model_files, tmp_path / "glue", **common))
  own_files = classifier.ClassifierRun(options(
      model_files, tmp_path / "own", data_dir=None, task_name=None, train_file=str(files["train"]),
      dev_file=str(files["dev"]), text_columns="a,b", **common))
  assert type(preset.examples).__name__ == "GlueFiles"
  assert type(own_files.examples).__name__ == "OwnFiles"
  assert preset.problem == own_files.problem   # single-label, labels "0", "1"
  results = [run.run() for run in (preset, own_files)]
  assert_close(_losses(tmp_path / "glue"), _losses(tmp_path / "own"), 1e-6)
  for name in ("accuracy", "f1", "loss"):
    assert_close(results[0]["eval"][name], results[1]["eval"][name], 1e-6)
  assert "majority_baseline_accuracy" in results[0]["eval"]     # GLUE's names
  assert "baseline_accuracy" in results[1]["eval"]              # your files' names
  assert (tmp_path / "own" / "best_checkpoint.png").exists()


def test_prediction_and_serving_trace_the_model_once(model_files, tmp_path):
  """The dropout layers' generators are made before the first trace: one made inside it
  makes tf.function trace a second time (each trace of a model is most of a short run)."""
  run = classifier.ClassifierRun(options(model_files, tmp_path / "out", do_train=False, do_eval=True,
                                   bucket_by_length=False, eval_batch_size=40))   # 5 x 40
  model = run.build_model()
  run.restore_for_inference(model)
  run.split_logits(model, "dev")
  assert run._predict_fns[id(model)].experimental_get_tracing_count() == 1  # pylint: disable=protected-access
  fresh = run.build_model()
  root = export_module._ServingClassifier(  # pylint: disable=protected-access
      fresh, AlbertTokenizer(model_files["spm"]), SEQ, Problem.of_glue(glue.get_task("MRPC")))
  classify = tf.function(lambda a, b: root.classify([a, b]), autograph=False)
  classify(tf.constant(["a b"]), tf.constant(["c"]))
  assert classify.experimental_get_tracing_count() == 1


def test_bucketing_by_length_changes_no_loss_and_no_prediction(model_files, tmp_path,
                                                                monkeypatch):
  """--bucket_by_length (the default) cuts padding only: the same training losses, dev and
  test logits as fixed padding, and the train step traced once per bucket length at most."""
  traced = []
  train = training.Trainer.train

  def counting_train(self):
    result = train(self)
    traced.append(self._train_step.experimental_get_tracing_count())  # pylint: disable=protected-access
    return result

  monkeypatch.setattr(training.Trainer, "train", counting_train)
  # Small batches: the pairs are 16-48 pieces (median 31), so some batches fit in 32.
  common = dict(train_step=12, save_checkpoints_steps=12, do_eval=False, do_predict=False,
                dropout_prob=0.0, log_steps=1, train_batch_size=2, eval_batch_size=4,
                predict_batch_size=4)
  for bucket in (True, False):
    classifier.run(options(model_files, tmp_path / str(bucket), bucket_by_length=bucket,
                           **common))
  assert_close(_losses(tmp_path / "True"), _losses(tmp_path / "False"), 1e-5)
  record = [n for n in os.listdir(tmp_path / "True") if n.startswith("mrpc_train_")][0]
  seq = tf.io.FixedLenFeature([SEQ], tf.int64)
  widths = {int(b["input_word_ids"].shape[1]) for b in records.read_dataset(
      str(tmp_path / "True" / record), dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                                            label_ids=tf.io.FixedLenFeature([], tf.int64)),
      2, is_training=True, bucket_by_length=True).take(12)}
  assert widths == {32, SEQ}, widths  # both lengths occur: the test cuts something
  # One more trace per further length (the first call traces twice, to create variables).
  assert traced[0] - traced[1] <= len(records.bucket_lengths(SEQ)) - 1, traced

  run = classifier.ClassifierRun(options(model_files, tmp_path / "True", **dict(
      common, do_train=False, do_eval=True, do_predict=True)))
  logits = split_logits_by_bucketing(run)
  for split in ("dev", "test"):
    assert logits[True][split].shape == (200 if split == "dev" else 50, 2)
    assert_close(logits[True][split], logits[False][split], 1e-5)


def test_a_trained_run_is_a_model_source_for_the_original_flags(model_files, tmp_path, capsys):
  """A run's --output_dir given as --albert_directory (to fine-tune on another task, to
  continue pretraining, to export to TF-Hub) is read through the run's record: its config,
  its best checkpoint and its vocabulary, checked against its vocab_size."""
  from albert_tf import sources  # pylint: disable=import-outside-toplevel
  from albert_tf.tasks import base  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertClassifier, AlbertEncoder  # pylint: disable=import-outside-toplevel
  from common import write_classifier_run  # pylint: disable=import-outside-toplevel
  out = tmp_path / "mrpc"
  inputs = {k: tf.zeros([1, 8], tf.int32) for k in ("input_word_ids", "input_mask",
                                                     "input_type_ids")}
  model = AlbertClassifier(AlbertEncoder(AlbertConfig.from_dict(CFG)), 2)
  model(inputs)
  write_classifier_run(out, model, CFG, SEQ, spm_model_file=os.path.abspath(model_files["spm"]))
  source = base.resolve_model_source(base.ModelOptions(albert_directory=str(out)), SEQ)
  assert source.config.to_dict() == AlbertConfig.from_dict(CFG).to_dict()
  assert source.init_checkpoint == str(out / "model.ckpt-best")
  assert source.tokenizer.spm_model_file == os.path.abspath(model_files["spm"])
  # A classifier of another task (three labels) starts from the run's encoder weights.
  trained = runs.Run.read(str(out)).model()
  other = AlbertClassifier(source.build_encoder(), num_classes=3)
  other(inputs)
  capsys.readouterr()
  source.initialize(other)   # its two-label head left fresh, and said so
  assert "(of other shapes there)" in capsys.readouterr().out
  for a, b in zip(trained.encoder.weights, other.encoder.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  # The TF-Hub export reads it the same way; a vocabulary of another size is refused.
  exported = export_from_sources(str(tmp_path / "hub"), albert_directory=str(out))
  assert os.path.isdir(exported["encoder"])
  other_vocab = tmp_path / "other.txt"
  other_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
  with pytest.raises(ValueError, match=r"has 6 entries but the model's vocab_size is \d+ "
                     r"\(--albert_directory=.*mrpc\)"):
    sources.describe(str(out), vocab_file=str(other_vocab)).tokenizer()


def test_an_sst2_run_answers_by_sst2_s_own_column_name_through_every_door(model_files,
                                                                          tmp_path, capsys):
  """One name per text input: an SST-2 run's input is `sentence`, as SST-2's files name it,
  in predict.py's input (a CSV with SST-2's header), the serving signature, the TFLite
  signature and every export's metadata, and each answers as --do_predict. A file or a serving
  client that uses an older name (`text`, `sentence1`) is answered too, with one note."""
  import csv  # pylint: disable=import-outside-toplevel
  import json  # pylint: disable=import-outside-toplevel
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  from albert_tf import runs  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import export_tflite, predict  # pylint: disable=import-outside-toplevel
  from test_tflite import lite_answers  # pylint: disable=import-outside-toplevel
  data = tmp_path / "SST-2"
  data.mkdir()
  texts = [" ".join(s) for s in (["the", "file", "is", w] for w in ("fine", "bad", "new"))] * 4
  for split, header in (("train", "sentence\tlabel"), ("dev", "sentence\tlabel"),
                        ("test", "index\tsentence")):
    rows = [f"{t}\t{i % 2}" if split != "test" else f"{i}\t{t}" for i, t in enumerate(texts)]
    (data / f"{split}.tsv").write_text(header + "\n" + "\n".join(rows) + "\n")
  run = tmp_path / "run"
  classifier.run(options(model_files, run, task_name="SST-2", data_dir=str(data), train_step=4,
                         save_checkpoints_steps=4, export_dir=str(tmp_path / "serving")))
  record = runs.Run.read(str(run))
  assert record.text_inputs == ["sentence"]
  with open(run / "SST-2.tsv") as f:
    want = [r["prediction"] for r in csv.DictReader(f, delimiter="\t")]
  source = tmp_path / "sst2.csv"
  with open(source, "w", newline="") as f:
    csv.writer(f).writerows([["sentence"]] + [[t] for t in texts])
  out = tmp_path / "predicted.jsonl"
  predict.run(predict.PredictOptions(model=str(run), input_file=str(source),
                                     output_file=str(out), progress=False, dtype="float32"))
  assert [json.loads(line)["label"] for line in open(out)] == want
  # An older name of the same input: answered, with one note.
  capsys.readouterr()
  older = tmp_path / "older.csv"
  older.write_text("text\n" + "\n".join(texts) + "\n")
  predict.run(predict.PredictOptions(model=str(run), input_file=str(older),
                                     output_file=str(tmp_path / "older.jsonl"), progress=False,
                                     dtype="float32"))
  assert capsys.readouterr().out.count("Note: 'text': read as this run's 'sentence'") == 1
  assert [json.loads(line)["label"] for line in open(tmp_path / "older.jsonl")] == want
  loaded = tf.saved_model.load(str(tmp_path / "serving"))
  for signature, name in (("serving_default", "sentence"), ("serving_legacy", "sentence1")):
    served = loaded.signatures[signature](**{name: tf.constant(texts)})
    assert [s.decode() for s in served["labels"].numpy()] == want, signature
  lite = tmp_path / "model.tflite"
  export_tflite.run(export_tflite.TFLiteOptions(model=str(run), quantization="none",
                                                output_file=str(lite)))
  assert json.loads((tmp_path / "model.tflite.json").read_text())["inputs"] == ["sentence"]
  got = lite_answers(lite, ["sentence"], [[t] for t in texts], ["0", "1"], None)
  assert [g["label"] for g in got] == want
  assert record.export_metadata()["text_inputs"] == ["sentence"]   # (ONNX, HF, KerasHub's)
