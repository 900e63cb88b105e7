"""Fine-tuning a classifier, evaluating, predicting and exporting it: what run_classifier.py does.

One path for a GLUE task and for your own files: what differs (columns, problem, metrics,
where predictions go) is `albert_tf.tasks.classifier_data`'s. Training evaluates every saved
checkpoint on dev and keeps the best as `model.ckpt-best` (with `best_trial.txt`);
`--do_eval` then reports the best checkpoint's dev metrics in `eval_results.txt`,
`--do_predict` writes the test predictions from it (GLUE submission files `<TASK>.tsv`, or
`test_predictions.jsonl`), and `--export_dir` saves it as a SavedModel that takes raw text.
The losses are those transformers computes for each problem: softmax cross-entropy, sigmoid
cross-entropy averaged over examples x labels, squared error.
"""

import dataclasses
import math
import os
from typing import Dict, Iterator, Optional

from absl import logging
import numpy as np

import tensorflow as tf

from albert_tf import problems, runs
from albert_tf.cli import TPU_FLAGS, option
from albert_tf.data import own
from albert_tf.data.records import read_dataset, write_records
from albert_tf.files import fingerprint, write_results
from albert_tf.modeling.models import (WINDOW_POOLINGS, AlbertClassifier,
                                       AlbertWindowsClassifier)
from albert_tf.tasks.base import FinetuningTask, StepOptions
from albert_tf.tasks.classifier_data import PICTURE, Examples, examples_of
from albert_tf.text.packing import pack_texts, pack_windows


# Flags of the original run_classifier.py that are not options here.
ORIGINAL_FLAGS = dict(TPU_FLAGS)


TUNE = "tune"                          # --multi_label_threshold=tune
WINDOWS = "windows"
LONG_TEXT = ("truncate", WINDOWS)      # --long_text
# The window flags' values when neither the command line nor an earlier run gives them.
WINDOW_DEFAULTS = dict(long_text="truncate", doc_stride=64, window_pooling="cls_max",
                       max_windows=32)


@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(StepOptions):
  """run_classifier.py's flags (the original's, plus strategy, dtype and seed)."""
  data_dir: Optional[str] = option(None, "The task's GLUE directory (or the GLUE root).")
  task_name: Optional[str] = option(None, "CoLA, MNLI, MRPC, QNLI, QQP, RTE, SST-2, STS-B, WNLI "
                                    "or AX (case-insensitive); or your own files instead "
                                    "(--train_file, --dev_file, --test_file).")
  train_file: Optional[str] = option(None, "Your own training file instead of a GLUE task: "
                                     ".csv, .tsv or .jsonl (docs/own_data.md).")
  dev_file: Optional[str] = option(None, "Your own dev file (every checkpoint is evaluated on "
                                   "it; the best is model.ckpt-best).")
  test_file: Optional[str] = option(None, "Your own test file, predicted into "
                                    "test_predictions.jsonl (labels optional).")
  text_columns: Optional[str] = option(
      None, "Your files: the text column (default: text, or the --teacher's), or two columns "
      "of a sentence pair separated by a comma (premise,hypothesis).")
  label_column: str = option("label", "Your files: the label column.")
  id_column: Optional[str] = option(None, "Your files: a column copied into the predictions.")
  label_delimiter: Optional[str] = option(None, "Your CSV/TSV files: several labels in a "
                                          "cell, split by this (e.g. |): multi-label.")
  problem_type: str = option("auto", "Your files: auto (list labels: multi-label; numbers with "
                             "a non-integer: regression; else single-label), or one of "
                             "transformers' names.", choices=(problems.AUTO,
                             *problems.TYPES))
  multi_label_threshold: Optional[str] = option(
      None, "Multi-label: a label is predicted when its sigmoid is above this number; tune: "
      "above each label's own threshold, the one of best F1 on dev at the best checkpoint "
      "(written to thresholds.txt, and used by every export). Default: the run's tuned "
      "thresholds if it has them, else 0.5.")
  class_weight: str = option("none", "Single-label: balanced weighs each class's loss by "
                             "rows / (classes x its rows), as scikit-learn's "
                             "class_weight=\"balanced\".", choices=("none", "balanced"))
  pos_weight: str = option("none", "Multi-label: balanced weighs each label's positives by "
                           "its negatives / positives in the training rows (at most 10), "
                           "as torch's BCEWithLogitsLoss(pos_weight).",
                           choices=("none", "balanced"))
  best_metric: Optional[str] = option(None, "Your files: the dev metric that picks "
                                      "model.ckpt-best (default accuracy, micro_f1 or pearson).")
  do_train: bool = option(False, "Fine-tune on train.tsv.")
  do_predict: bool = option(False, "Write GLUE submission files for the test split.")
  cached_dir: Optional[str] = option(None, "Where tokenized features are cached (default "
                                     "--output_dir).")
  threshold_to_export: float = option(float("nan"), "A decision threshold the exported "
                                      "classifier serves with its outputs (`threshold`); NaN: "
                                      "none. (The original's flag.)")
  long_text: Optional[str] = option(
      None, "Your files, one text column: truncate (the default: the text's first "
      "--max_seq_length pieces) or windows (every piece, up to --max_windows windows of "
      "--max_seq_length, --doc_stride pieces apart, pooled by --window_pooling, in "
      "training, eval and prediction). A rerun in the same --output_dir reads this and "
      "the three window flags from the run.", choices=LONG_TEXT)
  doc_stride: Optional[int] = option(None, "--long_text=windows: pieces between window "
                                     f"starts (default {WINDOW_DEFAULTS['doc_stride']}).",
                                     at_least=1)
  window_pooling: Optional[str] = option(
      None, "--long_text=windows: cls_max (the default: each feature of the windows' [CLS] "
      "vectors at its max, then the classifier; learns wherever the deciding words are), "
      "or max or mean of the windows' logits (docs/own_data.md).", choices=WINDOW_POOLINGS)
  max_windows: Optional[int] = option(
      None, "--long_text=windows: a text of more windows is cut to its first this many, "
      f"and the run says how many were (default {WINDOW_DEFAULTS['max_windows']}).",
      at_least=1)
  teacher: Optional[str] = option(
      None, "A fine-tuned run_classifier.py --output_dir whose answers teach this run: the "
      "loss mixes its soft labels (--distill_temperature) with the true ones "
      "(--distill_alpha). With --num_hidden_layers below its depth: ALBERT lite, the same "
      "weights in fewer passes (docs/performance.md). Without a model flag, the run starts "
      "from the teacher's weights.", training="fixed")
  distill_temperature: float = option(
      2.0, "--teacher: the softmax temperature of its soft labels (Hinton et al.'s and "
      "DistilBERT's 2).", training="fixed", above=0)
  distill_alpha: float = option(
      0.5, "--teacher: the soft labels' share of the loss, the true labels' the rest.",
      training="fixed", at_least=0, at_most=1)
  unlabeled_file: Optional[str] = option(
      None, "--teacher: texts without labels (.txt one per line, or .csv, .tsv, .jsonl with "
      "the run's text columns) that the teacher answers; the student trains on them beside "
      "the labelled rows, on the soft labels alone.", training="fixed")
  skip_malformed_rows: bool = option(False, "Skip rows with the wrong number of fields, with a "
                                     "warning (the original did so for QQP), instead of failing.")


class ClassifierRun(FinetuningTask):
  """One run_classifier.py invocation: a GLUE task or your own files (`examples`)."""

  def check_options(self):
    opts = self.opts
    self.teacher = runs.Run.read(opts.teacher, "--teacher", kinds=["classification"]) \
        if opts.teacher else None
    self.teacher_model = None
    if self.teacher is not None and not (opts.albert_directory or opts.albert_config_file or
                                         opts.albert_hub_module_handle):
      # The student starts from its teacher's weights (and head), as DistilBERT's students
      # start from their teacher's layers: on the demo's task at half the passes, taught,
      # 0.8975-0.9075 at seeds 0-3 against 0.885-0.91 from the pretrained encoder.
      self.opts = opts = dataclasses.replace(opts, albert_directory=opts.teacher)
      print(f"Starting from the teacher's weights, --albert_directory={opts.teacher}")
    if opts.text_columns is None:      # (your files: the teacher's columns, else "text")
      teacher_columns = self.teacher is not None and self.teacher.glue_task is None
      self.opts = opts = dataclasses.replace(opts, text_columns=",".join(
          self.teacher.text_inputs) if teacher_columns else "text")
    self.tune = opts.multi_label_threshold == TUNE
    self.threshold = 0.5 if opts.multi_label_threshold in (None, TUNE) else _number(
        opts.multi_label_threshold)
    self.examples: Examples = examples_of(opts)
    self.name = self.examples.name
    weighted = [f"--{k}={getattr(opts, k)}" for k in ("class_weight", "pos_weight")
                if getattr(opts, k) != "none"]
    if opts.task_name and (weighted or self.tune):
      raise ValueError(f"{', '.join(weighted) or '--multi_label_threshold=tune'} is for your "
                       "own files (--train_file), not a GLUE task")
    if self.tune and not opts.dev_file:
      raise ValueError("--multi_label_threshold=tune chooses thresholds on dev: pass --dev_file")
    self.long_text = window_settings(opts)
    self.windows = self.long_text["long_text"] == WINDOWS
    if self.windows and opts.export_dir:
      raise ValueError("--long_text=windows with --export_dir: the serving export classifies "
                       "one window, not a text's windows pooled; predict with predict.py "
                       "--model=<--output_dir>, which windows and pools as the run does")
    if self.windows and (opts.task_name or self.examples.pairs):
      raise ValueError("--long_text=windows is for your own files of one text column "
                       f"(--text_columns={opts.text_columns}" + (
                           f", --task_name={opts.task_name}" if opts.task_name else "") + ")")
    if self.windows:    # (recorded in the run: predict.py windows and pools as it trained)
      self.examples.long_text = dict(self.long_text)
    if opts.unlabeled_file and not opts.teacher:
      raise ValueError(f"--unlabeled_file={opts.unlabeled_file} is answered by a --teacher; "
                       "pass one (a fine-tuned run_classifier.py --output_dir)")
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")

  def read_inputs(self):
    opts, data = self.opts, self.examples
    self.splits = (["train"] if opts.do_train else []) \
        + (data.dev_splits if (opts.do_train or opts.do_eval) else []) \
        + (data.test_splits if opts.do_predict else [])
    # Each split is read as it is needed, a row at a time, in passes: the problem (its
    # labels), the targets (a compact array: the loss weights, metrics and baselines), the
    # features written to TFRecords, the test predictions. Memory holds no file's rows.
    self.sources = data.sources(opts, self.splits)
    self.unlabeled = None
    if opts.unlabeled_file and opts.do_train:
      columns, flag = own.Columns(tuple(data.inputs)), "--unlabeled_file"
      own.iter_texts(opts.unlabeled_file, columns, flag)          # (a missing file: at once)
      self.unlabeled = lambda: own.iter_texts(opts.unlabeled_file, columns, flag)
    self.problem, self.best_metric = data.problem, data.best_metric
    self.labelled = {split for split, rows in self.sources.items()
                     if next(rows()).label is not None}
    self.targets = {split: problems.target_array(self.sources[split](), self.problem,
                                                 data.path(opts, split))
                    for split in self.labelled if split != "train"}
    # The training rows' targets are kept as their features are written (build_features);
    # each label's rows (the loss weights) come with the problem (your own files: one pass
    # decides both), or from the targets (a GLUE task, whose problem is preset).
    self.train_counts = None
    if "train" in self.labelled:
      if data.train_counts is None:
        train = self.targets["train"] = problems.target_array(
            self.sources["train"](), self.problem, data.path(opts, "train"))
        self.train_counts = (self.problem.label_counts(train), len(train))
      else:
        self.train_counts = (data.train_counts, data.train_rows)
    multi = self.problem.type == problems.MULTI
    if (self.tune or opts.pos_weight != "none") and not multi:
      flag = "--multi_label_threshold=tune" if self.tune else f"--pos_weight={opts.pos_weight}"
      raise ValueError(f"{flag} is for multi-label files; this problem is {self.problem.type}")
    if opts.class_weight != "none" and self.problem.type != problems.SINGLE:
      raise ValueError(f"--class_weight={opts.class_weight} is for single-label files; this "
                       f"problem is {self.problem.type} (multi-label: --pos_weight)")
    earlier = runs.earlier(opts.output_dir)
    if opts.multi_label_threshold is None and multi and self.teacher is not None and \
        isinstance(self.teacher.multi_label_threshold, tuple) and not self.tune:
      self.threshold = self.teacher.multi_label_threshold      # (written with the labels)
    elif opts.multi_label_threshold is None and multi and not opts.do_train:   # the run's tuned
      if earlier is not None and earlier.problem is not None and earlier.problem.labels == \
          self.problem.labels:
        self.threshold = earlier.multi_label_threshold
    # The loss's weights, from the training rows (recorded in the run, used by the loss only).
    self.loss_weights = None
    how = opts.class_weight if opts.class_weight != "none" else opts.pos_weight
    if "train" not in self.labelled and earlier is not None and \
        isinstance(earlier.settings, runs.ClassifierSettings):   # (what the run trained with)
      data.loss_weights = earlier.settings.pos_weight or earlier.settings.class_weight or None
    elif how != "none" and self.train_counts is not None:
      self.loss_weights = self.problem.loss_weights(*self.train_counts, how)
      shown = ", ".join(f"{n} {w:.3g}" for n, w in zip(self.problem.labels, self.loss_weights))
      print(f"Loss weights (--{'pos' if multi else 'class'}_weight={how}): {shown}")
      data.loss_weights = self.loss_weights

  def check_outputs(self):
    self.check_export_dir()
    self.check_teacher()

  def check_teacher(self):
    """--teacher: a run of the same problem, labels, text inputs and windows, at least as
    deep as this one; its model is read now (one line for each thing that differs)."""
    teacher, opts = self.teacher, self.opts
    if teacher is None:
      return
    where = f"--teacher={opts.teacher}"
    if teacher.problem != self.problem:
      raise ValueError(f"{where} answers {teacher.problem.describe()}; these files are "
                       f"{self.problem.describe()}")
    if teacher.text_inputs != list(self.examples.inputs):
      raise ValueError(f"{where} reads {', '.join(teacher.text_inputs)}; this run reads "
                       f"{', '.join(self.examples.inputs)} (--text_columns)")
    theirs = teacher.settings
    if ({k: getattr(theirs, k) for k in WINDOW_DEFAULTS} if getattr(theirs, "windows", False)
        else None) != (self.long_text if self.windows else None):
      raise ValueError(f"{where} reads long texts as --long_text={teacher.settings.long_text}"
                       " (with its window flags); give this run the same")
    depth, most = self.source.config.num_hidden_layers, teacher.config.num_hidden_layers
    if depth > most:
      raise ValueError(f"--num_hidden_layers={depth} is deeper than {where}'s {most} passes: "
                       "a student has at most its teacher's")
    self.teacher_model = teacher.model()
    print(f"Taught by {teacher.path} ({most} passes; this run: {depth}), soft labels at "
          f"temperature {opts.distill_temperature} weighing {opts.distill_alpha} of the loss")

  def run_record(self):
    return self.examples.record()

  def can_evaluate(self):
    return any(split in self.targets for split in self.examples.dev_splits)

  def needs_inference(self):
    return self.opts.do_eval or self.opts.do_predict or bool(self.opts.export_dir) \
        or (self.tune and self.can_evaluate())

  # -- features

  def build_features(self):
    """Each split's features, cached in --cached_dir (default --output_dir) under a name
    that fingerprints the file, the vocabulary and the settings."""
    opts = self.opts
    self.examples.write_labels(opts.output_dir)
    if opts.do_train and not self.tune:   # (tuned for the weights this training replaces)
      stale = runs.remove_thresholds(opts.output_dir)
      if stale:
        print(f"Removed {stale}: tuned for the weights this training replaces "
              "(--multi_label_threshold=tune tunes them again)")
    if isinstance(self.threshold, tuple) and self.teacher is not None and not self.tune:
      path = runs.write_thresholds(opts.output_dir, self.problem.labels, self.threshold)
      print(f"The teacher's tuned thresholds, in {path}")
    cache = opts.cached_dir or opts.output_dir
    os.makedirs(cache, exist_ok=True)
    self.records = {}
    for split, rows in self.sources.items():
      path = os.path.join(cache, self.examples.features_key(opts, self.source.tokenizer, split)
                          + ".tf_record")
      if split == "train" and self.unlabeled:   # (and the unlabeled texts, mixed in)
        path = path[:-len(".tf_record")] + "_" + fingerprint(
            self.opts.seed, files=[self.opts.unlabeled_file]) + ".tf_record"
      if not os.path.exists(path):
        self.cut = 0
        kept = problems.Targets(self.problem) if split in self.labelled and \
            split not in self.targets else None
        examples = self.examples_of(split, rows(), kept)
        if split == "train" and self.unlabeled:
          texts = sum(1 for _ in self.unlabeled())
          labelled = self.train_counts[1]
          count = write_records(self.mixed(examples, labelled, texts), path)
          print(f"train: {labelled} labelled rows and {texts} texts of "
                f"{self.opts.unlabeled_file}, which the teacher answers")
        else:
          count = write_records((self.features(*example) for example in examples), path)
        logging.info("Wrote %d %s features to %s", count, split, path)
        if self.cut:
          print(f"{split}: {self.cut} of {count} texts are longer than --max_windows="
                f"{self.long_text['max_windows']} windows and were cut to their first "
                f"{self.long_text['max_windows']}")
        if kept is not None:
          self.targets[split] = kept.array()
      if split in self.labelled and split not in self.targets:   # (its features were cached)
        self.targets[split] = problems.target_array(rows(), self.problem,
                                                    self.examples.path(opts, split))
      self.records[split] = path

  def examples_of(self, split: str, rows: Iterator[own.Row], kept=None) -> Iterator[tuple]:
    """(row, its target or None) of each row of `split`; each target also into `kept`."""
    where, labelled = self.examples.path(self.opts, split), split in self.labelled
    for row in rows:
      target = self.problem.target(row.label, f"{where}:{row.line}") if labelled else None
      if kept is not None:
        kept.add(target)
      yield row, target

  def mixed(self, examples: Iterator, rows: int, texts: int) -> Iterator[Dict[str, object]]:
    """The training rows' features and the unlabelled texts', `labelled` 1 and 0, in a
    random interleaving (each file's order kept; `--seed`), read as they are written."""
    unlabeled = ((row, None) for row in self.unlabeled())
    pick = np.random.default_rng(self.opts.seed).permutation(
        np.arange(rows + texts) < rows)                           # [rows + texts]: labelled?
    for labelled in pick:
      yield dict(self.features(*next(examples if labelled else unlabeled)),
                 labelled=float(labelled))

  def features(self, row: own.Row, target) -> Dict[str, object]:
    """The original `convert_single_example`: `[CLS] a [SEP] (b [SEP])`, a pair truncated
    longest first."""
    if target is None:   # unlabelled test rows
      target = self.problem.empty_target()
    if self.windows:     # every window's inputs, one after the other: [K * S]
      packed, whole = pack_windows(self.source.tokenizer, row.texts[0],
                                   self.opts.max_seq_length, self.long_text["doc_stride"],
                                   self.long_text["max_windows"])
      self.cut += whole > len(packed)
      return dict(**{name: [i for p in packed for i in p[key]] for name, key in (
          ("input_ids", "input_word_ids"), ("input_mask", "input_mask"),
          ("segment_ids", "input_type_ids"))}, label_ids=target)
    packed = pack_texts(self.source.tokenizer, row.texts, self.opts.max_seq_length)
    return dict(input_ids=packed["input_word_ids"], input_mask=packed["input_mask"],
                segment_ids=packed["input_type_ids"], label_ids=target)

  def dataset(self, split: str, batch_size: int, is_training: bool) -> tf.data.Dataset:
    """Batches of model inputs (input_word_ids, input_mask, input_type_ids) and
    `label_ids`; see `records.read_dataset`."""
    seq_length = self.opts.max_seq_length
    if self.windows:   # [B, K, S]: a batch's examples padded to its most windows
      seq = tf.io.RaggedFeature(tf.int64)
      def transform(batch):
        for k in ("input_word_ids", "input_mask", "input_type_ids"):
          dense = batch[k].to_tensor()                                        # [B, K * S]
          batch[k] = tf.reshape(dense, [tf.shape(dense)[0], -1, seq_length])  # [B, K, S]
        return batch
    else:
      seq, transform = tf.io.FixedLenFeature([seq_length], tf.int64), None
    schema = dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                  label_ids=self.problem.target_feature())
    if split == "train" and self.unlabeled:   # 1 for a labelled row, 0 for a teacher's text
      schema["labelled"] = tf.io.FixedLenFeature([], tf.float32)
    return read_dataset(self.records[split], schema, batch_size, is_training, self.opts.seed,
                        transform=transform,
                        bucket_by_length=self.opts.bucket_by_length and not self.windows)

  # -- model

  def build_model(self) -> AlbertClassifier:
    head = dict(dropout_rate=self.opts.dropout_prob,
                initializer_range=self.source.config.initializer_range, seed=self.opts.seed)
    if self.windows:
      return AlbertWindowsClassifier(self.source.build_encoder(), self.problem.num_outputs,
                                     self.long_text["window_pooling"], **head)
    return AlbertClassifier(self.source.build_encoder(), self.problem.num_outputs, **head)

  def per_example_loss(self, model, batch, training):
    logits = model(batch, training=training)                                  # [b, C]
    labels = batch["label_ids"]
    if self.teacher_model is None:
      return self.problem.per_example_loss(logits, labels, self.loss_weights)
    # --teacher: its soft labels, mixed with the true ones by --distill_alpha; a text of
    # --unlabeled_file (labelled 0) has the soft labels alone, and its logged metrics are
    # against the teacher's answer.
    teacher = tf.stop_gradient(self.teacher_model(batch, training=False))     # [b, C]
    labelled = batch.get("labelled", tf.ones_like(logits[:, 0]))              # [b]
    if "labelled" in batch:
      labels = tf.where(tf.reshape(labelled > 0, [-1] + [1] * (labels.shape.rank - 1)),
                        labels, tf.cast(self.problem.teacher_target(teacher), labels.dtype))
    losses = self.problem.per_example_loss(logits, labels, self.loss_weights)
    soft = self.problem.distillation_loss(logits, teacher, self.opts.distill_temperature)
    hard = (1 - self.opts.distill_alpha) * labelled                           # [b]
    return dict(losses, loss=(1 - hard) * soft + hard * losses["loss"])

  def train_dataset(self):
    return self.dataset("train", self.micro_batch_size, is_training=True)

  def split_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, C] for every row of a split, in file order."""
    batch_size = self.opts.eval_batch_size if split.startswith("dev") \
        else self.opts.predict_batch_size
    return self.predict_logits(model, self.dataset(split, batch_size, is_training=False))

  def evaluate(self, model) -> Dict[str, float]:
    """Dev metrics; a second dev split (MNLI's mismatched) is reported with its prefix."""
    return self.dev_metrics(self.dev_logits(model))

  def dev_logits(self, model) -> Dict[str, np.ndarray]:
    """Each dev split's logits, computed once for its metrics and its picture."""
    return {split: self.split_logits(model, split) for split in self.examples.dev_splits}

  def dev_metrics(self, logits: Dict[str, np.ndarray]) -> Dict[str, float]:
    result = {}
    for split, rows in logits.items():                                  # rows: [N, C]
      values = self.examples.metrics(np.asarray(self.targets[split]), rows, self.threshold)
      prefix = "" if split == "dev" else split[len("dev_"):] + "_"
      result.update({prefix + k: v for k, v in values.items()})
    return result

  # -- inference

  def infer(self, model, weights):
    opts, results = self.opts, {}
    logits = None      # the dev logits, computed once for the thresholds and the results
    if self.tune and self.can_evaluate():
      logits = self.dev_logits(model)
      self.tune_thresholds(logits["dev"])
    if opts.do_eval:
      results["eval"] = self.write_eval_results(model, logits)
    if opts.do_predict:
      results["predict"] = {"rows": self.write_predictions(model)}
    if opts.export_dir:
      self.export(model, weights)
    return results

  def tune_thresholds(self, dev_logits: np.ndarray) -> None:
    """--multi_label_threshold=tune: each label's threshold of best dev F1 with the best
    weights (their dev logits [N, C]), written to thresholds.txt and used from now on."""
    labels = self.problem.labels
    self.threshold = self.problem.tune_thresholds(np.asarray(self.targets["dev"]), dev_logits)
    path = runs.write_thresholds(self.opts.output_dir, labels, self.threshold)
    print(f"Tuned thresholds (best dev F1 of each label), in {path}: "
          + ", ".join(f"{n} {t:.3g}" for n, t in zip(labels, self.threshold)))

  def write_eval_results(self, model, logits=None) -> Dict[str, float]:
    opts = self.opts
    logits = logits if logits is not None else self.dev_logits(model)
    step = self.best_step()
    result = dict(global_step=step if step is not None else -1, **self.dev_metrics(logits))
    if self.examples.picture:
      self.problem.picture(np.asarray(self.targets["dev"]), logits["dev"],
                           self.threshold, os.path.join(opts.output_dir, PICTURE),
                           f"dev, step {result['global_step']}")
    train = np.asarray(self.targets["train"]) if "train" in self.targets else None
    if train is not None:
      result.update(self.examples.baseline(train, np.asarray(self.targets["dev"]), 0.5))
    self.not_learned(self.problem.not_learned(train, np.asarray(self.targets["dev"]),
                                              logits["dev"], self.threshold), result)
    write_results(os.path.join(opts.output_dir, "eval_results.txt"), result)
    for k, v in result.items():
      logging.info("eval %s = %s", k, v)
    return result

  def write_predictions(self, model) -> int:
    """Every test split's predictions; returns how many rows were predicted."""
    count = 0
    for split in self.examples.test_splits:
      logits = self.split_logits(model, split)
      path = self.examples.write_predictions(self.opts.output_dir, split,
                                             self.sources[split](), logits, self.threshold)
      print(f"Wrote {len(logits)} predictions to {path}")
      count += len(logits)
    return count

  def export(self, model, weights: str) -> None:
    """The end-to-end SavedModel of `weights` (raw text in) in --export_dir."""
    from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
    opts, problem = self.opts, self.problem
    threshold = None if math.isnan(opts.threshold_to_export) else opts.threshold_to_export
    multi = problem.serving_threshold(self.threshold)
    self.export_once(weights, "classifier", (problem.type, opts.max_seq_length, threshold, multi),
                     lambda **kw: export_classifier(
                         model, opts.export_dir, self.source.tokenizer, opts.max_seq_length,
                         problem.export_labels, inputs=self.examples.inputs, threshold=threshold,
                         multi_label_threshold=multi, **kw))




def window_settings(opts: ClassifierOptions) -> Dict[str, object]:
  """--long_text and the window flags, as given, else as the run in --output_dir recorded
  them, else WINDOW_DEFAULTS. A rerun that does not train refuses a flag that contradicts
  its run (the weights were trained so); one that trains is checked as its record is."""
  earlier = runs.earlier(opts.output_dir)
  recorded = earlier.settings if earlier is not None else None
  recorded = recorded if isinstance(recorded, runs.ClassifierSettings) else None
  trained = recorded is not None and earlier.training
  windowed = recorded is not None and recorded.windows
  values = {}
  for name, default in WINDOW_DEFAULTS.items():
    given = getattr(opts, name)
    had = getattr(recorded, name) if recorded is not None else None
    if name != "long_text" and not windowed:
      had = None                        # (a truncating run recorded no window settings)
    if given is not None and had is not None and given != had and trained and not (
        opts.do_train):
      raise ValueError(f"--{name}={given}: --output_dir={opts.output_dir} was trained with "
                       f"--{name}={had}; drop the flag (a rerun reads it from its run) or "
                       "use another --output_dir")
    values[name] = given if given is not None else had if had is not None else default
  return values


def _number(value: str) -> float:
  """--multi_label_threshold's number, checked."""
  try:
    number = float(value)
  except ValueError:
    number = float("nan")
  if not 0 < number < 1:
    raise ValueError(f"--multi_label_threshold={value}: a number in (0, 1), or tune")
  return number


def run(opts: ClassifierOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts / exports: a GLUE task,
  or your own files (`albert_tf.tasks.classifier_data`)."""
  return ClassifierRun(opts).run()
