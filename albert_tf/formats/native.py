"""albert_tf's own checkpoints: `tf.train.Checkpoint(**model.checkpoint_items)`.

What the training scripts write (`model.ckpt-best`, `ckpt-N`): object checkpoints whose
roots are the task model's `checkpoint_items` (`encoder`, and its heads by name). They
hold no config: the run's record does (`albert_tf.runs`).
"""

import os

from absl import logging
import tensorflow as tf

from albert_tf.files import reading_checkpoint
from albert_tf.modeling.checkpoints import LoadReport

NAME = "native"


def _prefix(path: str) -> str:
  if tf.io.gfile.exists(path + ".index"):
    return path
  latest = tf.train.latest_checkpoint(path) if tf.io.gfile.isdir(path) else None
  if latest:
    return latest
  raise FileNotFoundError(f"no checkpoint at {path} (looked for {path}.index and a "
                          "'checkpoint' file)")


def _roots(path: str):
  keys = tf.train.load_checkpoint(path).get_variable_to_shape_map()
  return keys, {k.split("/")[0] for k in keys if k.endswith(".ATTRIBUTES/VARIABLE_VALUE")}


def recognize(path: str) -> bool:
  """A checkpoint prefix (or directory) with an albert_tf `encoder` root."""
  try:
    return "encoder" in _roots(_prefix(path))[1]
  except (FileNotFoundError, ValueError, tf.errors.OpError):
    return False


def load(model, checkpoint_path: str) -> LoadReport:
  """Restores an albert_tf object checkpoint into `model`.

  Its `encoder` must be present and match; heads the checkpoint lacks stay freshly
  initialized and are reported. On a mismatch a ValueError names the checkpoint; the
  model's weights may then be partly overwritten.
  """
  path = _prefix(checkpoint_path)
  keys, roots = _roots(path)
  items = model.checkpoint_items
  if "encoder" not in roots:
    raise ValueError(f"checkpoint {path} holds neither original ALBERT variables (bert/...) nor "
                     f"an albert_tf `encoder` (it has: {', '.join(sorted(roots)) or 'nothing'})")
  present = sorted(n for n in items if n in roots)
  with reading_checkpoint(path):
    try:
      status = tf.train.Checkpoint(**{n: items[n] for n in present}).read(path)
      status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.NotFoundError) as e:
      raise ValueError(f"checkpoint {path} does not match the model "
                       f"({type(model).__name__}): {e}") from e
  status.expect_partial()
  report = LoadReport(path=path, loaded=sorted(k for k in keys if k.split("/")[0] in present),
                      freshly_initialized=sorted(set(items) - set(present)),
                      unused=sorted(roots - set(items)))
  logging.info("Restored %s from %s", ", ".join(present), path)
  if report.freshly_initialized:
    logging.warning("Not in %s, left freshly initialized: %s", path,
                    ", ".join(report.freshly_initialized))
  return report
