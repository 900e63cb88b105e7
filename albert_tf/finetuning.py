"""Setup every fine-tuning script shares: where the encoder and the vocabulary come
from (an original/native checkpoint or an exported TF-Hub SavedModel), checks
before any work starts, and the output directory's record of its run.
"""

import dataclasses
import json
import os
from typing import Optional

from absl import logging
import tensorflow as tf

from albert_tf.checkpoints import load_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.encoder import AlbertEncoder
from albert_tf.export import FROM_TF_HUB, config_from_hub, load_saved_model, spm_model_from_hub
from albert_tf.tokenization import FullTokenizer
from albert_tf.training import BEST_PREFIX


@dataclasses.dataclass
class ModelSource:
  """The encoder and tokenizer a fine-tuning run starts from."""
  config: AlbertConfig
  tokenizer: FullTokenizer
  hub_handle: Optional[str] = None       # a local encoder SavedModel from hub_export
  init_checkpoint: Optional[str] = None  # original TF1 or albert_tf checkpoint

  def build_encoder(self):
    """A fresh AlbertEncoder, or the SavedModel as a trainable hub.KerasLayer."""
    if self.hub_handle:
      import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
      return hub.KerasLayer(self.hub_handle, trainable=True, name="albert_hub")
    return AlbertEncoder(self.config)

  def initialize(self, model) -> None:
    """Loads --init_checkpoint into a task model (hub weights are already in place)."""
    if self.init_checkpoint:
      report = load_checkpoint(model, self.init_checkpoint)
      print(f"Initialized from {report.path} ({len(report.loaded)} variables"
            + (f"; fresh: {', '.join(report.freshly_initialized)}"
               if report.freshly_initialized else "") + ")")
    elif not self.hub_handle:
      logging.warning("No --init_checkpoint and no --albert_hub_module_handle: "
                      "fine-tuning from random weights")


def resolve_model_source(albert_config_file: Optional[str], albert_hub_module_handle: Optional[str],
                         init_checkpoint: Optional[str], spm_model_file: Optional[str],
                         do_lower_case: bool, max_seq_length: int) -> ModelSource:
  """Reads and cross-checks the model flags; every error names the flag or file.

  Checks: exactly one model description (config file or hub handle), the
  checkpoint exists, the SentencePiece model loads and its size equals the
  model's vocab_size, and max_seq_length fits max_position_embeddings.
  """
  if albert_hub_module_handle:
    if not os.path.isdir(albert_hub_module_handle):
      raise FileNotFoundError(f"--albert_hub_module_handle={albert_hub_module_handle} is not a "
                              "directory (a SavedModel written by hub_export/export.py)")
    hub_module = load_saved_model(albert_hub_module_handle)  # read once for config and vocabulary
    config = config_from_hub(hub_module)
    if albert_config_file:
      logging.warning("--albert_config_file is ignored: the config comes from the SavedModel")
  elif albert_config_file:
    config = AlbertConfig.from_json_file(albert_config_file)
  else:
    raise ValueError("pass --albert_config_file (with --init_checkpoint) or "
                     "--albert_hub_module_handle")
  if init_checkpoint and not (tf.io.gfile.exists(init_checkpoint + ".index")
                              or tf.io.gfile.isdir(init_checkpoint)):
    raise FileNotFoundError(f"--init_checkpoint={init_checkpoint}: no checkpoint there "
                            f"({init_checkpoint}.index not found)")
  if not spm_model_file:
    raise ValueError("--spm_model_file is required (a path, or from_tf_hub with "
                     "--albert_hub_module_handle)")
  if spm_model_file == FROM_TF_HUB:
    if not albert_hub_module_handle:
      raise ValueError("--spm_model_file=from_tf_hub needs --albert_hub_module_handle")
    spm_model_file, do_lower_case = spm_model_from_hub(hub_module)
  elif not os.path.exists(spm_model_file):
    raise FileNotFoundError(f"--spm_model_file={spm_model_file} not found")
  tokenizer = FullTokenizer(spm_model_file=spm_model_file, do_lower_case=do_lower_case)
  if tokenizer.vocab_size != config.vocab_size:
    raise ValueError(f"the vocabulary {spm_model_file} has {tokenizer.vocab_size} pieces but the "
                     f"model's vocab_size is {config.vocab_size}; use the model's own "
                     "SentencePiece model")
  if max_seq_length > config.max_position_embeddings:
    raise ValueError(f"--max_seq_length={max_seq_length} exceeds the model's "
                     f"max_position_embeddings={config.max_position_embeddings}")
  if max_seq_length < 3:
    raise ValueError(f"--max_seq_length={max_seq_length} leaves no room for [CLS] and [SEP]")
  return ModelSource(config, tokenizer, albert_hub_module_handle, init_checkpoint)


def restore_for_inference(model, output_dir: str, source: ModelSource) -> str:
  """Loads model.ckpt-best of `output_dir`, else its latest checkpoint, else the
  source's initial weights; returns what was loaded."""
  best = os.path.join(output_dir, BEST_PREFIX)
  latest = tf.train.latest_checkpoint(output_dir)
  for prefix in (best, latest):
    if prefix and tf.io.gfile.exists(prefix + ".index"):
      tf.train.Checkpoint(**model.checkpoint_items).read(prefix).expect_partial()
      return prefix
  source.initialize(model)
  return source.init_checkpoint or source.hub_handle or "random initialization"


def write_results(path: str, results: dict) -> None:
  """`key = value` lines, as the original eval_results.txt; atomic."""
  with open(path + ".tmp", "w") as f:
    for k, v in results.items():
      f.write(f"{k} = {v}\n")
  os.replace(path + ".tmp", path)


def claim_output_dir(output_dir: str, record: dict) -> None:
  """Records what a run is in `output_dir/run_config.json`; refuses a directory that
  holds another run (a rerun of the same one resumes)."""
  path = os.path.join(output_dir, "run_config.json")
  record = json.loads(json.dumps(record, sort_keys=True))
  if os.path.exists(path):
    with open(path) as f:
      previous = json.load(f)
    if previous != record:
      changed = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
      raise ValueError(f"--output_dir={output_dir} holds another run ({path} differs in: "
                       f"{', '.join(changed)}); use a new --output_dir, or the same flags "
                       "to resume")
    return
  if os.path.isdir(output_dir) and os.listdir(output_dir):
    raise ValueError(f"--output_dir={output_dir} exists and is not empty (and is not an "
                     "albert_tf run); use a new --output_dir")
  os.makedirs(output_dir, exist_ok=True)
  with open(path, "w") as f:
    json.dump(record, f, indent=2, sort_keys=True)
