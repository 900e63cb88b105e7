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
import json
import os
import time
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import metrics as metrics_lib
from albert_tf.data import squad
from albert_tf.finetuning import (ModelSource, claim_output_dir, resolve_model_source,
                                  restore_for_inference, write_results)
from albert_tf.models import ENCODER_INPUTS, AlbertQuestionAnswerer
from albert_tf.training import BEST_PREFIX, Finetuner, LoopOptions, get_strategy, set_precision


@dataclasses.dataclass
class SquadOptions:
  """run_squad.py's flags (the original's, plus strategy, dtype and seed)."""
  output_dir: str
  albert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  albert_hub_module_handle: Optional[str] = None
  spm_model_file: Optional[str] = None
  do_lower_case: bool = True
  train_file: Optional[str] = None
  predict_file: Optional[str] = None
  train_feature_file: Optional[str] = None
  predict_feature_file: Optional[str] = None
  predict_feature_left_file: Optional[str] = None
  version_2_with_negative: bool = False
  max_seq_length: int = 384
  doc_stride: int = 128
  max_query_length: int = 64
  do_train: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  predict_batch_size: int = 8
  learning_rate: float = 5e-5
  num_train_epochs: float = 3.0
  warmup_proportion: float = 0.1
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  optimizer: str = "adamw"
  n_best_size: int = 20
  max_answer_length: int = 30
  start_n_top: int = 5
  end_n_top: int = 5
  dropout_prob: float = 0.1
  null_score_diff_threshold: float = 0.0
  distribution_strategy: str = "one_device"
  dtype: str = "float32"
  seed: int = 12345
  log_steps: int = 10
  progress: bool = True


def per_example_loss(version_2: bool):
  """The original losses: (start + end) / 2 cross-entropies, plus 0.5 x the
  answer-class binary cross-entropy for v2.0."""
  def loss_fn(model, batch, training):
    starts, ends = batch["start_positions"], batch["end_positions"]           # [b]
    outputs = model(batch, training=training)
    if version_2:
      start_log_probs, end_log_probs = outputs["start_log_probs"], outputs["end_log_probs"]
    else:
      start_log_probs = tf.nn.log_softmax(outputs["start_logits"], -1)          # [b, S]
      end_log_probs = tf.nn.log_softmax(outputs["end_logits"], -1)
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


def check_options(opts: SquadOptions) -> None:
  """Flag errors that need no file, each naming its flag."""
  if not (opts.do_train or opts.do_predict):
    raise ValueError("nothing to do: set --do_train and/or --do_predict")
  if opts.do_train and not opts.train_file:
    raise ValueError("--do_train needs --train_file")
  if opts.do_predict and not opts.predict_file:
    raise ValueError("--do_predict needs --predict_file")
  for name in ("max_seq_length", "doc_stride", "max_query_length", "n_best_size",
               "max_answer_length", "start_n_top", "end_n_top", "train_batch_size",
               "predict_batch_size", "save_checkpoints_steps"):
    if getattr(opts, name) <= 0:
      raise ValueError(f"--{name}={getattr(opts, name)} must be positive")
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


@dataclasses.dataclass
class _Features:
  record: str
  metadata: List[dict]
  header: dict


class SquadRun:
  """One run_squad.py invocation: checks everything, then trains / predicts / evaluates."""

  def __init__(self, opts: SquadOptions):
    self.opts = opts
    check_options(opts)
    # Every input is read and checked before any work.
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
    self.has_gold = bool(self.predict_dataset) and squad.has_gold_answers(self.predict_dataset)
    self.source: ModelSource = resolve_model_source(
        opts.albert_config_file, opts.albert_hub_module_handle, opts.init_checkpoint,
        opts.spm_model_file, opts.do_lower_case, opts.max_seq_length)
    self.strategy = get_strategy(opts.distribution_strategy)
    cache = {}
    if opts.do_train:
      cache["train"] = self._feature_files("train", opts.train_file, True,
                                           opts.train_feature_file, None)
    if opts.do_predict:
      cache["predict"] = self._feature_files("predict", opts.predict_file, False,
                                             opts.predict_feature_file,
                                             opts.predict_feature_left_file)
    claim_output_dir(opts.output_dir, dict(
        task="SQuAD v2.0" if opts.version_2_with_negative else "SQuAD v1.1",
        model=self.source.config.to_dict(),
        hub=os.path.abspath(opts.albert_hub_module_handle) if opts.albert_hub_module_handle
        else None, spm_model_file=os.path.abspath(self.source.tokenizer.spm_model_file),
        do_lower_case=self.source.tokenizer.do_lower_case, max_seq_length=opts.max_seq_length,
        doc_stride=opts.doc_stride, max_query_length=opts.max_query_length))
    self.train_features = self.predict_features = None
    if opts.do_train:
      self.train_features = self._features("train", opts.train_file, self.train_examples, True,
                                           cache["train"])
    if opts.do_predict:
      self.predict_features = self._features("predict", opts.predict_file,
                                             self.predict_examples, False, cache["predict"])
    self._predict_fns = {}

  # -- features

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
    metadata: List[dict] = []
    if not is_training:
      converted = _keep(converted, metadata)
    header = {}

    def make_header(count):
      header.update(fingerprint=key, source=os.path.abspath(json_path), features=count,
                    examples=stats.examples, unfindable_answers=len(stats.unfindable_answers),
                    impossible_windows=stats.impossible_windows)
      return header

    count = squad.write_features(converted, record, metadata_path, make_header,
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

  def predict_raw(self, model) -> Dict[int, Dict[str, np.ndarray]]:
    """unique_id -> the model's inference outputs for that window."""
    data = squad.dataset(self.predict_features.record, self.opts.max_seq_length,
                         self.opts.predict_batch_size, is_training=False)
    if id(model) not in self._predict_fns:
      keys = ENCODER_INPUTS + ("p_mask",)
      self._predict_fns[id(model)] = tf.function(
          lambda batch: model({k: batch[k] for k in keys}, training=False))
    predict = self._predict_fns[id(model)]
    results = {}
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    batches = -(-len(self.predict_features.metadata) // self.opts.predict_batch_size)
    for batch in tqdm(data, total=batches, desc="predicting", unit="batch", leave=False,
                      disable=not self.opts.progress):
      outputs = {k: v.numpy() for k, v in predict(batch).items()}
      for i, unique_id in enumerate(batch["unique_ids"].numpy()):
        results[int(unique_id)] = {k: v[i] for k, v in outputs.items()}
    return results

  def predict(self, model):
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
    predictions, _, null_odds = self.predict(model)
    return self.evaluate_predictions(predictions, null_odds)

  # -- the run

  def run(self) -> Dict[str, Dict[str, float]]:
    opts, results = self.opts, {}
    if opts.do_train:
      results["train"] = self.train()
    if not opts.do_predict:
      return results
    set_precision(opts.dtype)
    with self.strategy.scope():
      model = self.build_model()
    weights = restore_for_inference(model, opts.output_dir, self.source)
    print(f"Predicting with {weights}")
    started = time.time()
    predictions, nbest, null_odds = self.predict(model)
    elapsed = time.time() - started
    files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
    if null_odds is not None:
      files["null_odds.json"] = null_odds
    for name, content in files.items():
      _write_json(os.path.join(opts.output_dir, name), content)
    print(f"Wrote {', '.join(files)} for {len(predictions)} questions to {opts.output_dir} "
          f"({len(predictions) / elapsed:.1f} questions/s)")
    results["predict"] = {"questions": len(predictions),
                          "questions_per_second": len(predictions) / elapsed}
    if self.has_gold:
      evaluation = self.evaluate_predictions(predictions, null_odds)
      write_results(os.path.join(opts.output_dir, "eval_results.txt"),
                    dict(checkpoint=os.path.basename(weights), **evaluation))
      results["eval"] = evaluation
    return results

  def train(self) -> Dict[str, float]:
    opts = self.opts
    features = self.train_features.header["features"]
    train_step = max(1, int(features / opts.train_batch_size * opts.num_train_epochs))
    loop = LoopOptions(
        output_dir=opts.output_dir, train_step=train_step,
        warmup_step=int(train_step * opts.warmup_proportion), learning_rate=opts.learning_rate,
        optimizer=opts.optimizer, train_batch_size=opts.train_batch_size,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max, dtype=opts.dtype, seed=opts.seed,
        log_steps=opts.log_steps, progress=opts.progress)
    print(f"Training {train_step} steps ({opts.num_train_epochs:g} epochs of {features} "
          f"features, batch {opts.train_batch_size})")
    tf.random.set_seed(opts.seed)
    train_data = squad.dataset(self.train_features.record, opts.max_seq_length,
                               opts.train_batch_size, is_training=True, seed=opts.seed)
    evaluate = self.evaluate if (opts.do_predict and self.has_gold) else None
    trainer = Finetuner(loop, self.strategy, self.build_model,
                        per_example_loss(opts.version_2_with_negative), train_data,
                        evaluate_fn=evaluate, best_metric="f1",
                        initialize=self.source.initialize)
    result = trainer.train()
    best = trainer.best()
    if best:
      print(f"Best F1 {best[1]:.2f} at step {best[0]}: "
            f"{os.path.join(opts.output_dir, BEST_PREFIX)}")
    return result


def _keep(converted, metadata: List[dict]):
  for features, meta in converted:
    metadata.append(meta)
    yield features, meta


def _report_reading(path: str, stats: squad.ReadStats, kept: int) -> None:
  if stats.mismatched_answers or stats.empty_questions:
    print(f"{path}: kept {kept} of {stats.questions} questions ({len(stats.mismatched_answers)} "
          f"with an answer_start that does not point at the answer text, "
          f"{len(stats.empty_questions)} empty; their ids are in the log)")


def _write_json(path: str, content) -> None:
  def default(value):
    if isinstance(value, (np.floating, np.integer)):
      return value.item()
    raise TypeError(type(value).__name__)

  with open(path + ".tmp", "w", encoding="utf-8") as f:
    json.dump(content, f, indent=4, ensure_ascii=False, default=default)
    f.write("\n")
  os.replace(path + ".tmp", path)


def run(opts: SquadOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains and/or predicts (and evaluates)."""
  return SquadRun(opts).run()
