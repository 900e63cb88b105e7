"""What every layout module returns: a model directory's config, weights and vocabulary.

Each layout module (`tf1`, `huggingface`, `tf_hub`, `keras_hub`, `native`) has the same
small interface and imports none of the others:

- `recognize(path) -> bool`: whether `path` is in that layout;
- `read_directory(path, flag) -> ModelDirectory`: the config, what `load` takes, the
  vocabulary and labels (directory layouts only);
- `load(model, path) -> LoadReport`: the weights, mapped onto the model's original TF1
  names (`albert_tf.modeling.checkpoints`) with every tensor's shape checked;
- a writer where albert_tf writes that layout (`save_original_checkpoint`, `save_hf_model`,
  `write_preset`; TF-Hub SavedModels are written by `albert_tf.export.tf_hub`).

`albert_tf.formats` holds the one dispatcher over them.
"""

import dataclasses
import os
from typing import List, Optional

from albert_tf.modeling.config import AlbertConfig


@dataclasses.dataclass
class ModelDirectory:
  """What a model directory holds."""
  path: str
  layout: str                        # "tf1", "hf", "tf_hub", "keras_hub"
  config: AlbertConfig
  checkpoint: str                    # what load_checkpoint takes: the directory or a prefix
  spm_model_file: Optional[str]
  vocab_file: Optional[str]
  do_lower_case: Optional[bool]      # None: the directory does not say (a released one)
  labels: Optional[list] = None      # label names of a classifier, in id order
  problem_type: Optional[str] = None
  vocabulary_error: Optional[str] = None   # why the directory has no vocabulary
  num_labels: Optional[int] = None   # a classifier's label count, where names are unknown
  heads: List[str] = dataclasses.field(default_factory=list)  # "mlm", "sop", "classifier", ...

  def require_vocabulary(self, flags: str = "--spm_model_file or --vocab_file") -> None:
    """A clear error when the directory has no vocabulary (and none was passed)."""
    path = self.spm_model_file or self.vocab_file
    if self.vocabulary_error:
      raise FileNotFoundError(f"{self.vocabulary_error}; pass {flags}")
    if not path or not os.path.exists(path):
      raise FileNotFoundError(f"{self.path} has no vocabulary ({path} not found); pass {flags}")
