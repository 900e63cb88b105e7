"""What an albert_tf classifier export was made from (`albert_tf_export.json`).

Reading encoder SavedModels (config, vocabulary, weights) is `albert_tf.formats.tf_hub`'s.
"""

import json
import os
from typing import Optional

import tensorflow as tf

EXPORT_RECORD = "albert_tf_export.json"   # beside saved_model.pb: what an export was made from


def export_record(export_path: str) -> Optional[dict]:
  """What the albert_tf classifier export in `export_path` was made from, or None."""
  try:
    with tf.io.gfile.GFile(os.path.join(export_path, EXPORT_RECORD)) as f:
      return json.load(f)
  except (OSError, ValueError, tf.errors.OpError):
    return None
