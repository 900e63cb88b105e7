"""What an albert_tf classifier export was made from (`albert_tf_export.json`).

Reading encoder SavedModels (config, vocabulary, weights) is `albert_tf.formats.tf_hub`'s.
"""

import dataclasses
import json
import os
from typing import List, Optional

import tensorflow as tf

EXPORT_RECORD = "albert_tf_export.json"   # beside saved_model.pb: what an export was made from


@dataclasses.dataclass(frozen=True)
class ServingRecord:
  """What a raw-text serving export says it is: its kind ("classifier" or "tagger"), a
  classifier's problem type (None: an older albert_tf's export, which did not say), labels
  and text inputs, and the length it packs."""
  kind: Optional[str]
  problem_type: Optional[str] = None
  labels: List[str] = dataclasses.field(default_factory=list)
  inputs: List[str] = dataclasses.field(default_factory=list)
  seq_length: int = 512
  multi_label_threshold: object = None   # multi-label's: a number, or one per label

  @classmethod
  def of(cls, record: Optional[dict]) -> "ServingRecord":
    record = record or {}
    threshold = record.get("multi_label_threshold")
    return cls(record.get("kind"), record.get("problem_type"), list(record.get("labels") or []),
               list(record.get("inputs") or []), int(record.get("seq_length") or 512),
               tuple(threshold) if isinstance(threshold, list) else threshold)


def export_record(export_path: str) -> Optional[dict]:
  """What the albert_tf classifier export in `export_path` was made from, or None."""
  try:
    with tf.io.gfile.GFile(os.path.join(export_path, EXPORT_RECORD)) as f:
      return json.load(f)
  except (OSError, ValueError, tf.errors.OpError):
    return None
