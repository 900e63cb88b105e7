"""Fine-tuning on your own files: what run_classifier.py does with --train_file, --dev_file
and --test_file instead of a GLUE --task_name.

The files are CSV, TSV or JSON Lines (`albert_tf.data.own`); the problem is single-label,
multi-label or regression, decided from the training labels or given by --problem_type,
printed, and recorded in the run (with its labels, in `labels.txt` too) so that a resumed
or predicting run uses the same. The losses are those transformers computes for each
problem: softmax cross-entropy, sigmoid cross-entropy averaged over examples x labels,
squared error. Every checkpoint is evaluated on the dev file; --best_metric (accuracy,
micro_f1 or pearson unless given) picks `model.ckpt-best`, whose dev metrics go to
`eval_results.txt`, with one picture of them beside `learning_curve.png`
(`best_checkpoint.png`: the confusion matrix, each label's F1, or predicted against true
scores); --do_predict writes `test_predictions.jsonl`, one object per test row.
"""

import json
import os
from typing import Dict

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import problems, runs
from albert_tf.data import own
from albert_tf.data.records import read_dataset, write_records
from albert_tf.files import atomic_open, fingerprint, write_results
from albert_tf.modeling.models import AlbertClassifier
from albert_tf.tasks.base import FinetuningTask
from albert_tf.text.packing import pack_inputs

PREDICTIONS = "test_predictions.jsonl"
PICTURE = "best_checkpoint.png"
_SPLIT_FLAGS = dict(train="--train_file", dev="--dev_file", test="--test_file")


def per_example_loss(problem: problems.Problem):
  """The loss of each example, as transformers computes it for `problem`."""
  def loss_fn(model, batch, training):
    return problem.per_example_loss(model(batch, training=training), batch["label_ids"])
  return loss_fn


class OwnDataRun(FinetuningTask):
  """One run_classifier.py invocation on your own files."""

  name = "classification"   # the record's task: albert_tf.runs' classification kind

  def check_options(self):
    opts = self.opts
    glue_flags = [f"--{k}={getattr(opts, k)}" for k in ("task_name", "data_dir")
                  if getattr(opts, k)]
    if glue_flags:
      files = [f"--{k}={getattr(opts, k)}" for k in ("train_file", "dev_file", "test_file")
               if getattr(opts, k)]
      raise ValueError(f"pass either a GLUE task ({', '.join(glue_flags)}) or your own files "
                       f"({', '.join(files)}), not both")
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")
    for needed, split in ((opts.do_train, "train"), (opts.do_eval, "dev"),
                          (opts.do_predict, "test")):
      if needed and not getattr(opts, f"{split}_file"):
        flag = {"train": "--do_train", "dev": "--do_eval", "test": "--do_predict"}[split]
        raise ValueError(f"{flag} needs {_SPLIT_FLAGS[split]}")
    text_columns = [c.strip() for c in opts.text_columns.split(",")]
    if len(text_columns) not in (1, 2) or not all(text_columns):
      raise ValueError(f"--text_columns={opts.text_columns}: one column (a text) or two, "
                       "comma-separated (a sentence pair)")
    if not 0 < opts.multi_label_threshold < 1:
      raise ValueError(f"--multi_label_threshold={opts.multi_label_threshold} must be in (0, 1)")
    self.columns = own.Columns(tuple(text_columns), opts.label_column, opts.id_column,
                               opts.label_delimiter)

  def read_inputs(self):
    opts = self.opts
    wanted = dict(train=opts.do_train, dev=(opts.do_train or opts.do_eval) and opts.dev_file,
                  test=opts.do_predict)
    self.files = {split: getattr(opts, f"{split}_file") for split, on in wanted.items() if on}
    self.rows = {split: own.read_rows(path, self.columns, _SPLIT_FLAGS[split],
                                      need_labels=split != "test")
                 for split, path in self.files.items()}
    if "train" in self.rows:
      self.problem = problems.decide(self.rows["train"], opts.problem_type,
                                     self.files["train"])
    else:
      earlier = runs.earlier(opts.output_dir)
      if earlier is None or not earlier.settings.problem_type:
        raise ValueError(f"--output_dir={opts.output_dir} holds no run trained on your own files: "
                         "--do_eval or --do_predict without --do_train reads the problem and "
                         "the labels from it")
      self.problem = earlier.problem
    self.targets = {split: problems.targets(rows, self.problem, self.files[split])
                    for split, rows in self.rows.items() if rows[0].label is not None}
    self.best_metric = opts.best_metric or self.problem.best_metric
    print(f"Problem: {self.problem.describe()} (--problem_type={opts.problem_type}); "
          f"best checkpoint by dev {self.best_metric}")

  def check_outputs(self):
    self.check_export_dir()
    names = self.problem.metric_names()
    if self.best_metric not in names:
      raise ValueError(f"--best_metric={self.best_metric} is not a metric of "
                       f"{self.problem.type}; choose one of {', '.join(names)}")

  def run_record(self):
    return runs.ClassifierSettings(self.problem.type, tuple(self.problem.labels),
                                   tuple(self.columns.text), self.columns.label,
                                   self.columns.label_delimiter)

  def can_evaluate(self):
    return "dev" in self.targets

  def needs_inference(self):
    return self.opts.do_eval or self.opts.do_predict or bool(self.opts.export_dir)

  # -- features

  def build_features(self):
    opts = self.opts
    if self.problem.labels:
      runs.write_labels(opts.output_dir, self.problem.labels)
    cache = opts.cached_dir or opts.output_dir
    os.makedirs(cache, exist_ok=True)
    tokenizer = self.source.tokenizer
    self.records = {}
    for split, rows in self.rows.items():
      key = fingerprint(tokenizer.do_lower_case, opts.max_seq_length, self.problem.type,
                        self.problem.labels, list(self.columns.text), self.columns.label,
                        self.columns.label_delimiter,
                        files=[self.files[split], tokenizer.vocabulary_file])
      path = os.path.join(cache, f"own_{split}_{key}.tf_record")
      if not os.path.exists(path):
        targets = self.targets.get(split)
        write_records((self._features(row, targets[i] if targets else None)
                       for i, row in enumerate(rows)), path)
        logging.info("Wrote %d %s features to %s", len(rows), split, path)
      self.records[split] = path

  def _features(self, row: own.Row, target) -> Dict[str, object]:
    tokenizer = self.source.tokenizer
    ids = [tokenizer.encode(t) for t in row.texts]
    packed = pack_inputs(ids[0], ids[1] if len(ids) > 1 else None, self.opts.max_seq_length,
                         tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    if target is None:   # unlabelled test rows
      target = self.problem.empty_target()
    return dict(input_ids=packed["input_word_ids"], input_mask=packed["input_mask"],
                segment_ids=packed["input_type_ids"], label_ids=target)

  def dataset(self, split: str, batch_size: int, is_training: bool) -> tf.data.Dataset:
    seq = tf.io.FixedLenFeature([self.opts.max_seq_length], tf.int64)
    schema = dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                  label_ids=self.problem.target_feature())
    return read_dataset(self.records[split], schema, batch_size, is_training, self.opts.seed,
                        bucket_by_length=self.opts.bucket_by_length)

  # -- model

  def build_model(self) -> AlbertClassifier:
    return AlbertClassifier(self.source.build_encoder(), self.problem.num_outputs,
                            dropout_rate=self.opts.dropout_prob,
                            initializer_range=self.source.config.initializer_range,
                            seed=self.opts.seed)

  def per_example_loss(self, model, batch, training):
    return per_example_loss(self.problem)(model, batch, training)

  def train_dataset(self):
    return self.dataset("train", self.micro_batch_size, is_training=True)

  def split_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, C] for every row of a split, in file order."""
    batch_size = self.opts.eval_batch_size if split == "dev" else self.opts.predict_batch_size
    return self.predict_logits(model, self.dataset(split, batch_size, is_training=False))

  def evaluate(self, model) -> Dict[str, float]:
    logits = self.split_logits(model, "dev")
    return self.problem.metrics(np.asarray(self.targets["dev"]), logits,
                                self.opts.multi_label_threshold)

  # -- inference

  def infer(self, model, weights):
    opts, results = self.opts, {}
    if opts.do_eval:
      results["eval"] = self.write_eval_results(model)
    if opts.do_predict:
      results["predict"] = {"rows": self.write_predictions(model)}
    if opts.export_dir:
      self.export(model, weights)
    return results

  def write_eval_results(self, model) -> Dict[str, float]:
    logits = self.split_logits(model, "dev")
    targets = np.asarray(self.targets["dev"])
    result = self.problem.metrics(targets, logits, self.opts.multi_label_threshold)
    step = self.best_step()
    result = dict(global_step=step if step is not None else -1, **result)
    self.problem.picture(targets, logits, self.opts.multi_label_threshold,
                         os.path.join(self.opts.output_dir, PICTURE),
                         f"dev, step {result['global_step']}")
    if "train" in self.targets:
      result.update({f"baseline_{k}": v for k, v in self.problem.baseline(
          np.asarray(self.targets["train"]), np.asarray(self.targets["dev"]),
          self.opts.multi_label_threshold).items()})
    write_results(os.path.join(self.opts.output_dir, "eval_results.txt"), result)
    return result

  def write_predictions(self, model) -> int:
    """test_predictions.jsonl: one object per test row, in order."""
    logits = self.split_logits(model, "test")
    path = os.path.join(self.opts.output_dir, PREDICTIONS)
    with atomic_open(path, encoding="utf-8") as f:
      for row, out in zip(self.rows["test"], logits):
        f.write(json.dumps(prediction(self.problem, row, out, self.opts.multi_label_threshold),
                           ensure_ascii=False) + "\n")
    print(f"Wrote {len(self.rows['test'])} predictions to {path}")
    return len(self.rows["test"])

  def export(self, model, weights: str) -> None:
    """The end-to-end SavedModel of `weights` (raw text in) in --export_dir."""
    from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
    opts, problem = self.opts, self.problem
    threshold = problem.serving_threshold(opts.multi_label_threshold)
    self.export_once(weights, "classifier", (problem.type, opts.max_seq_length, threshold),
                     lambda **kw: export_classifier(
                         model, opts.export_dir, self.source.tokenizer, opts.max_seq_length,
                         problem.export_labels, pairs=len(self.columns.text) == 2,
                         multi_label_threshold=threshold, **kw))


# ----------------------------------------------------------------------------- outputs

def prediction(problem: problems.Problem, row: own.Row, logits: np.ndarray,
               threshold: float) -> dict:
  """One test row's object: `index`, `id` if given, then the problem's answer."""
  out = dict(index=row.index)
  if row.id is not None:
    out["id"] = row.id
  out.update(problem.answer(logits, threshold))
  return out
