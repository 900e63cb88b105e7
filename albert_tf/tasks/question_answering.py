"""SQuAD v1.1 / v2.0 fine-tuning and prediction: what run_squad.py does.

Training evaluates every saved checkpoint on --predict_file when it has gold
answers and keeps the best (by F1) as `model.ckpt-best`. `--do_predict` then
writes `predictions.json` and `nbest_predictions.json` (and, for v2.0,
`null_odds.json`: the answer-class score of each question, higher meaning
"no answer") from the best checkpoint, and, when the file has answers,
`eval_results.txt` with the official scripts' figures. For v2.0 a question
is answered "" when its null score is above --null_score_diff_threshold, and
`eval_results.txt` equals evaluate-v2.0.py run with `--na-prob-file
null_odds.json --na-prob-thresh <that threshold>`; its best_f1_thresh is
what to pass as the threshold on the test set (the threshold is never tuned
on the file it is applied to).
"""

import dataclasses
import os
import time
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import runs
from albert_tf.cli import TPU_FLAGS, option
from albert_tf.data import squad
from albert_tf.files import write_json, write_results
from albert_tf.modeling.models import ENCODER_INPUTS, AlbertQuestionAnswerer
from albert_tf.tasks.base import FinetuningOptions, FinetuningTask
from albert_tf.training import metrics as metrics_lib
from albert_tf.progress import progress_bar


# Flags of the original run_squad_v1.py / run_squad_v2.py that are not options here.
ORIGINAL_FLAGS = dict(TPU_FLAGS)


@dataclasses.dataclass(kw_only=True)
class SquadOptions(FinetuningOptions):
  """run_squad.py's flags (the original's, plus strategy, dtype and seed)."""
  train_file: Optional[str] = option(None, "SQuAD JSON for training, e.g. train-v1.1.json.")
  predict_file: Optional[str] = option(None, "SQuAD JSON to predict, e.g. dev-v1.1.json; "
                                       "evaluated when it has answers.")
  train_feature_file: Optional[str] = option(
      None, "Cached training features (TFRecord; built if missing, reused if built from the "
      "same inputs and settings).")
  predict_feature_file: Optional[str] = option(None, "Cached prediction features (TFRecord).")
  predict_feature_left_file: Optional[str] = option(
      None, "What prediction needs besides the features (JSON lines; default: "
      "--predict_feature_file + .meta.jsonl).")
  version_2_with_negative: bool = option(False, "SQuAD 2.0: questions may have no answer (the "
                                         "answer-verification head).")
  max_seq_length: int = option(384, "Sequence length of a window.", at_least=3)
  doc_stride: int = option(128, "Pieces between the starts of consecutive windows.", at_least=1)
  max_query_length: int = option(64, "Question pieces kept.", at_least=1)
  do_train: bool = option(False, "Fine-tune on --train_file.")
  do_predict: bool = option(False, "Predict (and evaluate) --predict_file.")
  num_train_epochs: float = option(3.0, "Epochs over the training features.",
                                   training="may grow", above=0)
  warmup_proportion: float = option(0.1, "Fraction of the steps with linear warmup.",
                                    training="fixed", at_least=0, at_most=1)
  save_checkpoints_steps: int = option(1000, "Steps between checkpoints (each is evaluated "
                                       "when --predict_file has answers).",
                                       training="fixed", at_least=1)
  keep_checkpoint_max: int = option(5, "Recent checkpoints to keep.", at_least=1)
  n_best_size: int = option(20, "Answers kept per question in nbest_predictions.json.", at_least=1)
  max_answer_length: int = option(30, "Longest answer, in pieces.", at_least=1)
  start_n_top: int = option(5, "v2.0: starts considered at inference.", at_least=1)
  end_n_top: int = option(5, "v2.0: ends considered per start.", at_least=1)
  dropout_prob: float = option(0.1, "v2.0: dropout in the answer-class layer.",
                               training="fixed", at_least=0, below=1)
  null_score_diff_threshold: float = option(
      0.0, "v2.0: answer \"\" when the null score (null_odds.json) is above this; choose it "
      "on another set (best_f1_thresh).")


def per_example_loss(version_2: bool):
  """The original losses: (start + end) / 2 cross-entropies, plus 0.5 x the
  answer-class binary cross-entropy for v2.0.

  The v1.1 softmax runs over the window's tokens, not its padding: the original's
  also spans the padding positions (whose logits training soon drives far down), which
  would make the loss depend on how much padding a batch has (`--bucket_by_length`)."""
  def loss_fn(model, batch, training):
    starts, ends = batch["start_positions"], batch["end_positions"]           # [b]
    outputs = model(batch, training=training)
    if version_2:
      start_log_probs, end_log_probs = outputs["start_log_probs"], outputs["end_log_probs"]
    else:
      padding = 1.0 - tf.cast(batch["input_mask"], tf.float32)                  # [b, S]
      start_log_probs = tf.nn.log_softmax(outputs["start_logits"] - 1e30 * padding, -1)
      end_log_probs = tf.nn.log_softmax(outputs["end_logits"] - 1e30 * padding, -1)
    start_loss = -tf.gather(start_log_probs, starts, batch_dims=1)              # [b]
    end_loss = -tf.gather(end_log_probs, ends, batch_dims=1)
    loss = (start_loss + end_loss) / 2.0
    found = tf.equal(tf.argmax(start_log_probs, -1, output_type=tf.int32), starts)
    result = dict(start_accuracy=tf.cast(found, tf.float32))
    if version_2:
      impossible = tf.cast(batch["is_impossible"], tf.float32)
      answer_loss = tf.nn.sigmoid_cross_entropy_with_logits(impossible, outputs["cls_logits"])
      loss += 0.5 * answer_loss
      result["answer_class_accuracy"] = tf.cast(
          tf.equal(outputs["cls_logits"] > 0, impossible > 0.5), tf.float32)
    result["loss"] = loss
    return result
  return loss_fn


@dataclasses.dataclass
class _Features:
  record: str
  metadata: List[dict]
  header: dict


class SquadRun(FinetuningTask):
  """One run_squad.py invocation."""
  best_metric = "f1"

  def check_options(self):
    """Flag errors that need no file, each naming its flag."""
    opts = self.opts
    if not (opts.do_train or opts.do_predict):
      raise ValueError("nothing to do: set --do_train and/or --do_predict")
    if opts.do_train and not opts.train_file:
      raise ValueError("--do_train needs --train_file")
    if opts.do_predict and not opts.predict_file:
      raise ValueError("--do_predict needs --predict_file")
    if opts.max_seq_length <= opts.max_query_length + 3:
      raise ValueError(f"--max_seq_length={opts.max_seq_length} leaves no room for the context "
                       f"after --max_query_length={opts.max_query_length} and 3 special tokens")
    if opts.start_n_top > opts.max_seq_length or opts.end_n_top > opts.max_seq_length:
      raise ValueError("--start_n_top and --end_n_top cannot exceed --max_seq_length")
    if opts.do_train and not (0 <= opts.warmup_proportion <= 1 and opts.num_train_epochs > 0):
      raise ValueError("--num_train_epochs must be positive and --warmup_proportion in [0, 1]")
    for flag in ("train_feature_file", "predict_feature_file", "predict_feature_left_file"):
      path = getattr(opts, flag)
      if path and os.path.isdir(path):
        raise ValueError(f"--{flag}={path} is a directory; name a file")
    self.name = "SQuAD v2.0" if self.opts.version_2_with_negative else "SQuAD v1.1"

  def read_inputs(self):
    opts = self.opts
    self.train_examples = self.predict_examples = self.predict_dataset = None
    if opts.do_train:
      self.train_examples, stats = squad.read_squad_examples(
          opts.train_file, True, opts.version_2_with_negative)
      _report_reading(opts.train_file, stats, len(self.train_examples))
    if opts.do_predict:
      self.predict_dataset = squad.load_dataset(opts.predict_file)
      self.predict_examples, stats = squad.read_squad_examples(
          opts.predict_file, False, opts.version_2_with_negative, self.predict_dataset)
      _report_reading(opts.predict_file, stats, len(self.predict_examples))
    self.has_gold = bool(self.predict_dataset) and squad.has_gold_answers(
        self.predict_dataset, opts.version_2_with_negative)

  def check_outputs(self):
    """Finds the cached features; a given file built from other inputs is refused now."""
    opts = self.opts
    self.cache = {}
    if opts.do_train:
      self.cache["train"] = self._feature_files("train", opts.train_file, True,
                                                opts.train_feature_file, None)
    if opts.do_predict:
      self.cache["predict"] = self._feature_files("predict", opts.predict_file, False,
                                                  opts.predict_feature_file,
                                                  opts.predict_feature_left_file)

  def run_record(self):
    return runs.ReaderSettings(self.opts.doc_stride, self.opts.max_query_length)

  def build_features(self):
    opts = self.opts
    self.train_features = self.predict_features = None
    if opts.do_train:
      self.train_features = self._features("train", opts.train_file, self.train_examples, True,
                                           self.cache["train"])
    if opts.do_predict:
      self.predict_features = self._features("predict", opts.predict_file,
                                             self.predict_examples, False, self.cache["predict"])

  def _feature_files(self, kind: str, json_path: str, is_training: bool,
                     record: Optional[str], metadata_path: Optional[str]):
    """(record, metadata file, fingerprint, reusable) of a split's cached features.
    A given file that exists but was built from other inputs is an error (never overwritten)."""
    opts = self.opts
    key = squad.fingerprint(json_path, self.source.tokenizer, opts.max_seq_length,
                            opts.doc_stride, opts.max_query_length, is_training,
                            opts.version_2_with_negative)
    record = record or os.path.join(opts.output_dir, f"{kind}_{key}.tf_record")
    metadata_path = metadata_path or record + ".meta.jsonl"
    header = squad.read_header(metadata_path)
    if os.path.exists(record) and header and header.get("fingerprint") == key:
      return record, metadata_path, key, True
    for path in (record, metadata_path):
      if os.path.exists(path):
        raise ValueError(f"{path} exists but was not built from {json_path} with these settings "
                         "and vocabulary; delete it or name another file")
    return record, metadata_path, key, False

  def _features(self, kind: str, json_path: str, examples, is_training: bool,
                files) -> _Features:
    """Reads the cached features, or builds them."""
    opts = self.opts
    record, metadata_path, key, reusable = files
    if reusable:
      header, metadata = squad.read_metadata(metadata_path)
      print(f"Reusing {header['features']} {kind} features from {record}")
      return _Features(record, metadata, header)
    for path in (record, metadata_path):
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    stats = squad.FeatureStats()
    started = time.time()
    converted = squad.convert_examples(examples, self.source.tokenizer, opts.max_seq_length,
                                       opts.doc_stride, opts.max_query_length, is_training,
                                       stats, opts.progress)
    header = {}

    def make_header(count):
      header.update(fingerprint=key, source=os.path.abspath(json_path), features=count,
                    examples=stats.examples, unfindable_answers=len(stats.unfindable_answers),
                    impossible_windows=stats.impossible_windows)
      return header

    count, metadata = squad.write_features(converted, record, metadata_path, make_header,
                                           keep_metadata=not is_training)
    print(f"Wrote {count} {kind} features of {stats.examples} questions to {record} "
          f"({time.time() - started:.0f} s)")
    if stats.unfindable_answers:
      print(f"Skipped {len(stats.unfindable_answers)} training questions whose answer is not in "
            f"the tokenized context: {', '.join(stats.unfindable_answers[:10])}"
            + (" ..." if len(stats.unfindable_answers) > 10 else ""))
    if count == 0:
      raise ValueError(f"{json_path}: no {kind} features")
    return _Features(record, metadata, header)

  # -- model

  def build_model(self) -> AlbertQuestionAnswerer:
    opts = self.opts
    return AlbertQuestionAnswerer(
        self.source.build_encoder(), opts.version_2_with_negative, opts.start_n_top,
        opts.end_n_top, dropout_rate=opts.dropout_prob,
        initializer_range=self.source.config.initializer_range, seed=opts.seed)

  def per_example_loss(self, model, batch, training):
    return per_example_loss(self.opts.version_2_with_negative)(model, batch, training)

  def train_steps(self) -> int:
    features = self.train_features.header["features"]
    return max(1, int(features / self.opts.train_batch_size * self.opts.num_train_epochs))

  def warmup_steps(self) -> int:
    return int(self.train_steps() * self.opts.warmup_proportion)

  def train_dataset(self):
    opts = self.opts
    print(f"Training {self.train_steps()} steps ({opts.num_train_epochs:g} epochs of "
          f"{self.train_features.header['features']} features, batch {opts.train_batch_size})")
    return squad.dataset(self.train_features.record, opts.max_seq_length,
                         self.micro_batch_size, is_training=True, seed=opts.seed,
                         bucket_by_length=opts.bucket_by_length)

  def can_evaluate(self):
    return self.opts.do_predict and self.has_gold

  def needs_inference(self):
    return self.opts.do_predict

  def predict_raw(self, model) -> Dict[int, Dict[str, np.ndarray]]:
    """unique_id -> the model's inference outputs for that window."""
    data = squad.dataset(self.predict_features.record, self.opts.max_seq_length,
                         self.opts.predict_batch_size, is_training=False,
                         bucket_by_length=self.opts.bucket_by_length)
    batches = -(-len(self.predict_features.metadata) // self.opts.predict_batch_size)
    results = {}
    for batch, outputs in progress_bar(self.predict(model, data, ENCODER_INPUTS + ("p_mask",)),
                                   total=batches, desc="predicting", unit="batch", leave=False,
                                   disable=not self.opts.progress):
      # v1.1 logits are cut to each window's tokens: an answer never lies in padding, and
      # so padding (of whatever width) cannot push a span out of the n-best.
      lengths = batch["input_mask"].numpy().sum(-1)
      for i, unique_id in enumerate(batch["unique_ids"].numpy()):
        results[int(unique_id)] = {k: v[i][:lengths[i]] if k.endswith("_logits") and v.ndim == 2
                                   else v[i] for k, v in outputs.items()}
    return results

  def predict_answers(self, model):
    """(predictions, nbest, null_odds or None) for --predict_file."""
    opts, started = self.opts, time.time()
    raw = self.predict_raw(model)
    elapsed = time.time() - started
    logging.info("predicted %d windows of %d questions in %.1f s (%.1f questions/s)", len(raw),
                 len(self.predict_examples), elapsed, len(self.predict_examples) / elapsed)
    if opts.version_2_with_negative:
      return squad.predictions_v2(self.predict_examples, self.predict_features.metadata, raw,
                                  opts.n_best_size, opts.max_answer_length,
                                  opts.null_score_diff_threshold)
    return squad.predictions_v1(self.predict_examples, self.predict_features.metadata, raw,
                                opts.n_best_size, opts.max_answer_length) + (None,)

  def evaluate_predictions(self, predictions, null_odds) -> Dict[str, float]:
    if self.opts.version_2_with_negative:
      return metrics_lib.squad_v2_evaluate(self.predict_dataset, predictions, null_odds,
                                           self.opts.null_score_diff_threshold)
    return metrics_lib.squad_v1_evaluate(self.predict_dataset, predictions)

  def evaluate(self, model) -> Dict[str, float]:
    predictions, _, null_odds = self.predict_answers(model)
    return self.evaluate_predictions(predictions, null_odds)

  # -- inference

  def infer(self, model, weights):
    opts, results = self.opts, {}
    started = time.time()
    predictions, nbest, null_odds = self.predict_answers(model)
    elapsed = time.time() - started
    files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
    if null_odds is not None:
      files["null_odds.json"] = null_odds
    for name, content in files.items():
      write_json(os.path.join(opts.output_dir, name), content, indent=4, ensure_ascii=False)
    print(f"Wrote {', '.join(files)} for {len(predictions)} questions to {opts.output_dir} "
          f"({len(predictions) / elapsed:.1f} questions/s)")
    results["predict"] = {"questions": len(predictions),
                          "questions_per_second": len(predictions) / elapsed}
    if self.has_gold:
      evaluation = self.evaluate_predictions(predictions, null_odds)
      answers = list(predictions.values())
      if len(answers) > 1 and all(a == answers[0] for a in answers):
        self.not_learned("every dev question has the same answer"
                         + (f" ({answers[0]!r})" if answers[0] else " (no answer)"), evaluation)
      write_results(os.path.join(opts.output_dir, "eval_results.txt"),
                    dict(checkpoint=os.path.basename(weights), **evaluation))
      results["eval"] = evaluation
    return results


def _report_reading(path: str, stats: squad.ReadStats, kept: int) -> None:
  if stats.mismatched_answers or stats.empty_questions:
    print(f"{path}: kept {kept} of {stats.questions} questions ({len(stats.mismatched_answers)} "
          f"with an answer_start that does not point at the answer text, "
          f"{len(stats.empty_questions)} empty; their ids are in the log)")


def run(opts: SquadOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains and/or predicts (and evaluates)."""
  return SquadRun(opts).run()
