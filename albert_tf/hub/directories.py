"""Model directories every script accepts as `--albert_directory`: a released one or a
Hugging Face one, resolved to a config, weights and a vocabulary.

- Released (the original's downloads, and what `convert_checkpoint.py
  --output_format=tf1` writes): `albert_config.json`, `30k-clean.model` (or the
  Chinese releases' `vocab_chinese.txt`) and a TF1 checkpoint (`model.ckpt-best`).
- Hugging Face (a local snapshot of a Hub repository, and what
  `convert_checkpoint.py --output_format=hf` writes): `config.json`,
  `model.safetensors` (or its shards, or `pytorch_model.bin`), and `spiece.model`
  or `vocab.txt` with `tokenizer_config.json`.
"""

import dataclasses
import os
from typing import Optional, Tuple

import tensorflow as tf

from albert_tf.modeling import huggingface
from albert_tf.modeling.config import AlbertConfig
from albert_tf.text.huggingface import read_hf_vocabulary

RELEASED_CONFIG = "albert_config.json"
RELEASED_CHECKPOINT = "model.ckpt-best"


@dataclasses.dataclass
class ModelDirectory:
  """What a model directory holds."""
  path: str
  layout: str                        # "hf" or "tf1"
  config: AlbertConfig
  checkpoint: str                    # what load_checkpoint takes: the directory or a prefix
  spm_model_file: Optional[str]
  vocab_file: Optional[str]
  do_lower_case: Optional[bool]      # None: the directory does not say (a released one)
  labels: Optional[list] = None      # id2label of a Hugging Face classifier
  problem_type: Optional[str] = None
  vocabulary_error: Optional[str] = None   # why a Hugging Face directory has no vocabulary

  def require_vocabulary(self, flags: str = "--spm_model_file or --vocab_file") -> None:
    """A clear error when the directory has no vocabulary (and none was passed)."""
    path = self.spm_model_file or self.vocab_file
    if self.vocabulary_error:
      raise FileNotFoundError(f"{self.vocabulary_error}; pass {flags}")
    if not os.path.exists(path):
      raise FileNotFoundError(f"{self.path} has no vocabulary ({path} not found); pass {flags}")


def released_vocabulary(albert_directory: str) -> Tuple[Optional[str], Optional[str]]:
  """(spm_model_file, vocab_file) of a released model directory: `vocab_chinese.txt` where
  a Chinese release has it, else `30k-clean.model` (the English releases; a missing one is
  reported when it is read)."""
  chinese = os.path.join(albert_directory, "vocab_chinese.txt")
  english = os.path.join(albert_directory, "30k-clean.model")
  if os.path.exists(chinese) and not os.path.exists(english):
    return None, chinese
  return english, None


def read_model_directory(path: str, flag: str = "--albert_directory",
                         checkpoint_name: str = RELEASED_CHECKPOINT) -> ModelDirectory:
  """Resolves a released or Hugging Face model directory; errors name `flag` and the file."""
  if not os.path.isdir(path):
    raise FileNotFoundError(f"{flag}={path} is not a directory")
  if os.path.exists(os.path.join(path, huggingface.CONFIG)):
    if not huggingface.is_hf_directory(path):
      raise FileNotFoundError(f"{flag}={path} has a config.json but no weights (none of "
                              f"{', '.join(huggingface.WEIGHT_FILES)})")
    config, info = huggingface.read_hf_config(path)
    try:
      vocabulary = read_hf_vocabulary(path)
    except (FileNotFoundError, ValueError) as e:   # raised when a vocabulary is needed
      return ModelDirectory(path, "hf", config, path, None, None, None, info.labels,
                            info.problem_type, vocabulary_error=str(e))
    return ModelDirectory(path, "hf", config, path, vocabulary.spm_model_file,
                          vocabulary.vocab_file, vocabulary.do_lower_case, info.labels,
                          info.problem_type)
  config_file = os.path.join(path, RELEASED_CONFIG)
  if not os.path.exists(config_file):
    raise FileNotFoundError(f"{flag}={path} is neither a released model directory (no "
                            f"{RELEASED_CONFIG}) nor a Hugging Face one (no config.json)")
  checkpoint = os.path.join(path, checkpoint_name)
  if not tf.io.gfile.exists(checkpoint + ".index"):
    raise FileNotFoundError(f"{flag}={path} has no checkpoint {checkpoint_name} "
                            f"({checkpoint}.index not found)")
  spm_model_file, vocab_file = released_vocabulary(path)
  return ModelDirectory(path, "tf1", AlbertConfig.from_json_file(config_file), checkpoint,
                        spm_model_file, vocab_file, None)
