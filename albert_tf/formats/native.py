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


def _shapes(item) -> list:
  """The sorted shapes of a checkpoint item's variables (empty before it is built)."""
  return sorted(tuple(v.shape.as_list()) for v in getattr(item, "variables", []))


def load(model, checkpoint_path: str) -> LoadReport:
  """Restores an albert_tf object checkpoint into `model`.

  Its `encoder` must be present and match; heads the checkpoint lacks, or holds with other
  shapes (a classifier of another label count: a run of another task to start from), stay
  freshly initialized and are reported. On an encoder mismatch a ValueError names the
  checkpoint; the model's weights may then be partly overwritten.
  """
  path = _prefix(checkpoint_path)
  keys, roots = _roots(path)
  items = model.checkpoint_items
  if "encoder" not in roots:
    raise ValueError(f"checkpoint {path} holds neither original ALBERT variables (bert/...) nor "
                     f"an albert_tf `encoder` (it has: {', '.join(sorted(roots)) or 'nothing'})")
  shapes = tf.train.load_checkpoint(path).get_variable_to_shape_map()
  resized = sorted(n for n in items if n != "encoder" and n in roots
                   and _shapes(items[n]) and _shapes(items[n]) != sorted(
                       tuple(shape) for key, shape in shapes.items()
                       if key.startswith(n + "/") and ".OPTIMIZER_SLOT" not in key
                       and key.endswith(".ATTRIBUTES/VARIABLE_VALUE")))
  present = sorted(n for n in items if n in roots and n not in resized)
  with reading_checkpoint(path):
    try:
      status = tf.train.Checkpoint(**{n: items[n] for n in present}).read(path)
      status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.NotFoundError) as e:
      raise ValueError(f"checkpoint {path} does not match the model "
                       f"({type(model).__name__}): {e}") from e
  status.expect_partial()
  report = LoadReport(path=path, loaded=sorted(k for k in keys if k.split("/")[0] in present),
                      freshly_initialized=sorted(set(items) - set(present) - set(resized))
                      + [f"{n} (of other shapes there)" for n in resized],
                      unused=sorted(roots - set(items)))
  logging.info("Restored %s from %s", ", ".join(present), path)
  if report.freshly_initialized:
    logging.warning("Not in %s, left freshly initialized: %s", path,
                    ", ".join(report.freshly_initialized))
  return report
