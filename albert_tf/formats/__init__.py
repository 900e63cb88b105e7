"""Every model layout albert_tf reads and writes, one module each, and the one dispatcher.

| layout | module | recognized by | read | written by |
|---|---|---|---|---|
| KerasHub preset | `keras_hub` | config.json naming `keras_hub>AlbertBackbone` | config, backbone, classifier head, tokenizer | `keras_hub.write_preset` |
| Hugging Face | `huggingface` | config.json + safetensors / pytorch_model.bin | config, every head, vocabulary, labels | `huggingface.save_hf_model` |
| TF-Hub SavedModel | `tf_hub` | saved_model.pb (albert_tf's exports and tf-models') | config, encoder, `.mlm` | `albert_tf.export.tf_hub` |
| original TF1 | `tf1` | albert_config.json, or a checkpoint in `bert/...` names | config, every head, vocabulary | `tf1.save_original_checkpoint` |
| albert_tf checkpoint | `native` | a checkpoint with an `encoder` root | weights (the config is the run's) | the Trainer |

Each module has the interface `base` describes and imports none of the others. Names
(hub handles, Hugging Face repo ids) are resolved to a local path by `names.resolve`
before a path gets here.
"""

import os
from typing import Optional

from albert_tf.formats import huggingface, keras_hub, native, tf1, tf_hub
from albert_tf.formats.base import ModelDirectory
from albert_tf.formats.names import resolve
from albert_tf.formats.tf1 import (RELEASED_CHECKPOINT, RELEASED_CONFIG, load_original_checkpoint,
                                   resolve_checkpoint_path, save_original_checkpoint)
from albert_tf.modeling.checkpoints import LoadReport

# Most specific first: a KerasHub preset's config.json is no Hugging Face one, a TF1 hub
# module's saved_model.pb no TF2 one.
LAYOUTS = (keras_hub, huggingface, tf_hub, tf1, native)


def layout_of(path) -> Optional[object]:
  """The layout module that recognizes `path`, or None."""
  if not path:
    return None
  for layout in LAYOUTS:
    if layout.recognize(path):
      return layout
  return None


def read_model_directory(path: str, flag: str = "--albert_directory",
                         checkpoint_name: str = RELEASED_CHECKPOINT,
                         also: str = "") -> ModelDirectory:
  """The config, weights and vocabulary of a model directory in any layout; errors name
  `flag` and the file (and `also`, what else the flag takes, when it is none of them)."""
  if not os.path.isdir(path):
    raise FileNotFoundError(f"{flag}={path} is not a directory")
  for layout in (keras_hub, huggingface, tf_hub):
    if layout.recognize(path):
      return layout.read_directory(path, flag)
  if os.path.exists(os.path.join(path, RELEASED_CONFIG)):
    return tf1.read_directory(path, flag, checkpoint_name)
  if os.path.exists(os.path.join(path, huggingface.CONFIG)):
    return huggingface.read_directory(path, flag)   # says what the config.json lacks
  raise FileNotFoundError(
      f"{flag}={path} is none of the model directories albert_tf reads: a released one (no "
      f"{RELEASED_CONFIG}), a Hugging Face one or a KerasHub preset (no config.json), or a "
      "TF-Hub SavedModel (no saved_model.pb)" + (f"; nor {also}" if also else ""))


def load_checkpoint(model, checkpoint_path: str, init_from_group0: bool = False) -> LoadReport:
  """Restores `model`'s weights from any layout: a KerasHub preset, a Hugging Face
  directory, a TF-Hub SavedModel (albert_tf's or tf-models'), an original TF1 checkpoint
  (a released directory, a TF1 hub module, a prefix) or an albert_tf checkpoint.

  Encoder weights must all be there, with the right shapes; heads the source lacks stay
  freshly initialized and are reported (see each layout's `load`).
  `init_from_group0` (the original's flag) applies to original TF1 checkpoints.
  """
  layout = layout_of(checkpoint_path)
  if init_from_group0 and layout is not tf1:
    raise ValueError(f"--init_from_group0 reads original checkpoints (bert/... names); "
                     f"{checkpoint_path} is {_described(layout)}")
  if layout is tf1:
    return tf1.load(model, checkpoint_path, init_from_group0)
  if layout is None:
    resolve_checkpoint_path(checkpoint_path)   # a clear error when nothing is there
    layout = native                            # ... and native's when it holds neither
  return layout.load(model, checkpoint_path)


def _described(layout) -> str:
  return {keras_hub: "a KerasHub preset", huggingface: "a Hugging Face directory",
          tf_hub: "a TF-Hub SavedModel", native: "an albert_tf checkpoint"}.get(
              layout, "not an original checkpoint")


__all__ = ["LAYOUTS", "ModelDirectory", "layout_of", "read_model_directory", "load_checkpoint",
           "load_original_checkpoint", "save_original_checkpoint", "resolve",
           "resolve_checkpoint_path", "huggingface", "keras_hub", "native", "tf1", "tf_hub"]
