"""Raw-text serving SavedModels: a fine-tuned classifier from sentences to probabilities.

`export_classifier` writes it (run_classifier.py --export_dir); `save_serving` is how every
end-to-end export (this one and `albert_tf.export.tagger`'s) is saved: traced once, for
inference, with its vocabulary and a record of what it was made from.
"""

import json
import os
from typing import Dict, Optional, Sequence, Tuple

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import save_context  # pylint: disable=g-direct-tensorflow-import

from albert_tf import problems
from albert_tf.export.loading import CLASSIFIER, EXPORT_RECORD
from albert_tf.export.tf_hub import attach_vocabulary, atomic_export
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.modeling.tracing import inference_only
from albert_tf.text.preprocessing import AlbertTokenizer, pack_segments
from albert_tf.text.tokenization import FullTokenizer


# The signature that takes a classifier's text inputs under the names older exports gave
# them (sentence1, sentence2), beside serving_default's (the run's names).
LEGACY_SIGNATURE = "serving_legacy"
LEGACY_INPUTS = ("sentence1", "sentence2")


class _ServingClassifier(tf.Module):
  """Raw sentences -> tokenizer -> packer -> classifier -> probabilities (or scores)."""

  def __init__(self, model, tokenizer: AlbertTokenizer, seq_length: int,
               problem: problems.Problem, threshold: Optional[float] = None,
               multi_label_threshold: Optional[float] = None):
    super().__init__(name="albert_classifier")
    # Saved: what `classify` reads (the variables, the dropout generators made now, since one
    # made in the first trace traces it twice, and the tokenizer's tensorflow-text
    # tokenizers), not the Keras model and layer, whose own saving traces their calls
    # again for metadata no server reads (two thirds of a small export's time).
    self.model_variables = list(model.variables)
    self.random_generators = random_generators(model)
    self.text_tokenizers = tokenizer.text_tokenizers
    def logits(segments):
      packed = pack_segments([tokenizer(s) for s in segments], seq_length, tokenizer.cls_id,
                             tokenizer.sep_id, tokenizer.pad_id)              # [B, seq_length]
      # Cut to the batch's longest: a batch of short texts does not pay for seq_length.
      width = tf.maximum(tf.reduce_max(tf.reduce_sum(packed["input_mask"], 1)), 1)
      return model({k: v[:, :width] for k, v in packed.items()}, training=False)  # [B, C]
    self._logits = logits
    self._threshold, self._multi_label_threshold = threshold, multi_label_threshold
    self._problem = problem

  def classify(self, segments):
    logits = self._logits(segments)                                          # [B, C]
    outputs = self._problem.serving_outputs(logits, self._multi_label_threshold)
    if self._threshold is not None:  # the original's --threshold_to_export, served along
      outputs["threshold"] = tf.fill(tf.shape(logits)[:1], self._threshold)  # [B]
    return outputs


def export_classifier(model, export_path: str, tokenizer: FullTokenizer, seq_length: int,
                      labels: Optional[Tuple[str, ...]],
                      inputs: Sequence[str] = ("sentence1", "sentence2"),
                      overwrite: bool = False, threshold: Optional[float] = None,
                      record: Optional[dict] = None,
                      multi_label_threshold: Optional[float] = None) -> str:
  """Writes an end-to-end classifier SavedModel that takes raw text.

  `serving_default` (also the root `__call__`) takes string [B] tensors named `inputs`
  (one text, or a sentence pair: the run's names for them, `albert_tf.runs.Run.
  text_inputs`), and where those are not `sentence1` (`sentence2`), the names older exports
  gave them, `serving_legacy` takes them under those, for clients written against them; it
  tokenizes in-graph (the ids
  of `tokenizer`), packs at `seq_length` and returns `probabilities` [B, C],
  `label_ids` [B] and `labels` [B] (the label strings), or `score` [B] for
  regression (`labels=None`), and `threshold` [B] when one is given. A multi-label
  classifier (`multi_label_threshold`) returns sigmoid `probabilities` [B, C],
  `label_mask` [B, C] (over the threshold) and `labels` [B, C] (the label's name where
  chosen, else ""). Loading
  it needs `import tensorflow_text`. albert_tf_export.json, beside saved_model.pb, says
  what it is (problem type, labels, inputs: what `albert_tf.Predictor` reads back) and
  what it was made from (`record`).
  """
  export_path = os.path.abspath(export_path)
  problem = problems.Problem.of_outputs(labels, multi_label_threshold)
  with atomic_export(export_path, overwrite) as (saved, staging):
    root = _ServingClassifier(model, AlbertTokenizer(tokenizer.spm_model_file,
                                                     tokenizer.do_lower_case,
                                                     tokenizer.vocab_file),
                              seq_length, problem, threshold, multi_label_threshold)
    spec = lambda name: tf.TensorSpec([None], tf.string, name=name)
    classify = lambda *texts: root.classify(list(texts))
    root.__call__ = tf.function(classify, input_signature=[spec(n) for n in inputs],
                                autograph=False)
    others, legacy = {}, list(LEGACY_INPUTS[:len(inputs)])
    if legacy != list(inputs):
      root.legacy = tf.function(classify, input_signature=[spec(n) for n in legacy],
                                autograph=False)
      others[LEGACY_SIGNATURE] = root.legacy
    save_serving(root, saved, staging, tokenizer, dict(
        kind=CLASSIFIER, problem_type=problem.type, labels=list(labels or []),
        inputs=list(inputs), seq_length=seq_length,
        multi_label_threshold=multi_label_threshold,
        **({"legacy_inputs": list(legacy)} if others else {}), **(record or {})), others)
  logging.info("Exported the classifier SavedModel to %s", export_path)
  return export_path


def save_serving(root: tf.Module, saved: str, staging: str, tokenizer: FullTokenizer,
                 record: dict, signatures: Optional[Dict[str, object]] = None) -> None:
  """Saves an end-to-end `root` (its `__call__` a tf.function of strings, traced here once,
  for inference; `signatures` more such, by name) with the vocabulary as an asset, and
  `record` beside saved_model.pb."""
  attach_vocabulary(root, staging, tokenizer.spm_model_file, tokenizer.vocab_file)
  options = tf.saved_model.SaveOptions()
  signatures = dict(serving_default=root.__call__, **(signatures or {}))
  with save_context.save_context(options), inference_only():   # traced once, for serving
    for function in signatures.values():
      function.get_concrete_function()
  tf.saved_model.save(root, saved, signatures=signatures, options=options)
  with open(os.path.join(saved, EXPORT_RECORD), "w") as f:
    json.dump(record, f, indent=2, sort_keys=True)
