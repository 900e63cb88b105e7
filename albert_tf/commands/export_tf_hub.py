"""hub_export/export.py: a model from any source to the TF-Hub encoder and preprocessor
SavedModels (written by `albert_tf.export.tf_hub`)."""

import dataclasses
from typing import Dict, Optional

from absl import logging
import tensorflow as tf

from albert_tf import formats
from albert_tf.sources import describe
from albert_tf.cli import Checked, Original, option
from albert_tf.export.tf_hub import (check_export_target, compute_dtype, export_encoder,
                                     export_preprocessor)
from albert_tf.modeling import precision
from albert_tf.modeling.models import AlbertPretrainer


def export_from_sources(export_path: Optional[str] = None,
                        export_preprocessing_path: Optional[str] = None, *,
                        albert_directory: Optional[str] = None,
                        albert_config_file: Optional[str] = None,
                        init_checkpoint: Optional[str] = None,
                        spm_model_file: Optional[str] = None,
                        vocab_file: Optional[str] = None,
                        checkpoint_name: str = "model.ckpt-best", do_lower_case: bool = True,
                        default_seq_length: Optional[int] = None,
                        overwrite: bool = False, dtype: str = "float32") -> Dict[str, str]:
  """What `hub_export/export.py` does; arguments are its flags.

  Files default to those of `albert_directory`: a released one
  (`albert_config.json`, `30k-clean.model` or, in the Chinese releases,
  `vocab_chinese.txt`, and `checkpoint_name`) or a Hugging Face one
  (`config.json`, `model.safetensors`, `spiece.model` or `vocab.txt`, and
  `do_lower_case` from its tokenizer_config.json); explicit ones take precedence.
  At most one of `spm_model_file` and `vocab_file`. `init_checkpoint="none"` exports fresh weights.
  Every input is checked, and both targets, before anything is written.
  `dtype="bfloat16"` writes an encoder that computes in bfloat16 (float32
  variables, float32 outputs): where the CPU has fast bfloat16 matmuls (amx_bf16, and
  avx512_bf16 on AMD EPYC) several times faster, within bfloat16 precision of the float32
  export (docs/tf_hub.md gives the measured speed and difference); `dtype="auto"` measures
  which of the two is faster here (`training.precision`).
  `default_seq_length` (the preprocessor's packing length) defaults to 128, or
  the model's max_position_embeddings when that is smaller; a larger value is
  refused. An encoder exported without a vocabulary is written with a warning.

  Returns:
    {"encoder": path, "preprocessor": path} for what was written.
  """
  if not (export_path or export_preprocessing_path):
    raise ValueError("nothing to do: pass --export_path and/or --export_preprocessing_path")
  for flag, path in (("export_path", export_path),
                     ("export_preprocessing_path", export_preprocessing_path)):
    if path:
      check_export_target(path, overwrite, f"--{flag}")
  described = describe(albert_directory, config_file=albert_config_file,
                       init_checkpoint=init_checkpoint, spm_model_file=spm_model_file,
                       vocab_file=vocab_file, do_lower_case=do_lower_case,
                       checkpoint_name=checkpoint_name)
  config, init_checkpoint = described.config, described.checkpoint
  if export_preprocessing_path and not (described.spm_model_file or described.vocab_file):
    raise ValueError("--export_preprocessing_path needs --spm_model_file or --vocab_file (or "
                     "--albert_directory)")
  if export_path and not (config and init_checkpoint):
    raise ValueError("--export_path needs --albert_config_file and --init_checkpoint (or "
                     "--albert_directory); --init_checkpoint=none exports random weights")
  if config is not None and export_preprocessing_path:
    limit = config.max_position_embeddings
    if default_seq_length is not None and default_seq_length > limit:
      raise ValueError(f"--default_seq_length={default_seq_length} exceeds the model's "
                       f"max_position_embeddings={limit} ({described.config_source})")
    default_seq_length = default_seq_length or min(128, limit)
  default_seq_length = default_seq_length or 128
  tokenizer = described.tokenizer(required=False)   # checked against the config, if any
  if export_path and tokenizer is None:
    message = (f"exporting {export_path} without a vocabulary (no --spm_model_file): "
               "--spm_model_file=from_tf_hub (or --vocab_file=from_tf_hub) cannot be used "
               "with it")
    logging.warning(message)
    print(f"Warning: {message}")
  spm_model_file, vocab_file = described.spm_model_file, described.vocab_file
  do_lower_case = described.do_lower_case
  written = {}
  if export_path:
    dtype = precision.resolve(dtype, precision.probe_shape(config, default_seq_length))
    with compute_dtype(dtype):
      model = AlbertPretrainer(config)
      if init_checkpoint.lower() == "none":
        logging.warning("--init_checkpoint=none: exporting freshly initialized weights")
      else:
        try:
          report = formats.load_checkpoint(model, init_checkpoint)
        except tf.errors.OpError as e:
          raise ValueError(f"cannot read checkpoint {init_checkpoint}: {e.message}") from None
        logging.info("Restored %d variables from %s", len(report.loaded), report.path)
      written["encoder"] = export_encoder(model, export_path, spm_model_file=spm_model_file,
                                          do_lower_case=do_lower_case, overwrite=overwrite,
                                          vocab_file=vocab_file)
  if export_preprocessing_path:
    written["preprocessor"] = export_preprocessor(
        spm_model_file, export_preprocessing_path, do_lower_case=do_lower_case,
        default_seq_length=default_seq_length, overwrite=overwrite, vocab_file=vocab_file)
  return written


# Flags of the original export_to_tfhub.py that are not options here.
ORIGINAL_FLAGS = {
    "use_einsum": Original(bool, True, "ignored: the encoder always computes its dense layers "
                           "as tf.matmul on [batch * seq, width] (what --use_einsum=false chose)"),
}


@dataclasses.dataclass(kw_only=True)
class ExportOptions(Checked):
  """hub_export/export.py's flags."""
  albert_directory: Optional[str] = option(
      None, "A model directory: a released one (albert_config.json, 30k-clean.model or "
      "vocab_chinese.txt, and the checkpoint named by --checkpoint_name), a Hugging Face one "
      "(config.json, model.safetensors, spiece.model or vocab.txt) or its repo id, a KerasHub "
      "preset, or a TF-Hub encoder SavedModel or handle. Explicit file flags take precedence.")
  checkpoint_name: str = option("model.ckpt-best", "Checkpoint prefix in --albert_directory.")
  albert_config_file: Optional[str] = option(None, "albert_config.json of the model.")
  init_checkpoint: Optional[str] = option(
      None, "Checkpoint (prefix or directory), original TF1 names or albert_tf's own; 'none' "
      "exports freshly initialized weights.")
  spm_model_file: Optional[str] = option(None, "SentencePiece model of the vocabulary.")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary (vocab_chinese.txt), instead "
                                     "of --spm_model_file.")
  export_path: Optional[str] = option(None, "Directory for the encoder SavedModel.")
  export_preprocessing_path: Optional[str] = option(None, "Directory for the preprocessor "
                                                    "SavedModel.")
  do_lower_case: bool = option(True, "Lower-case the input text (the released models do).")
  default_seq_length: Optional[int] = option(None, "Sequence length of the preprocessor's root "
                                             "call (default: 128, or the model's "
                                             "max_position_embeddings if smaller).",
                                             at_least=3)
  overwrite: bool = option(False, "Replace an earlier export (a directory with "
                           "saved_model.pb), nothing else.")
  dtype: str = option("float32", "The encoder's compute dtype: float32, bfloat16 (float32 "
                      "variables and outputs), or auto: the faster of the two on this machine, "
                      "measured at the model's shapes in about a second.",
                      choices=("float32", "bfloat16", precision.AUTO))


def run(opts: ExportOptions) -> Dict[str, str]:
  """What hub_export/export.py does: the exports the flags ask for; prints where they went."""
  kwargs = dataclasses.asdict(opts)
  written = export_from_sources(kwargs.pop("export_path"), kwargs.pop("export_preprocessing_path"),
                                **kwargs)
  for kind, path in written.items():
    print(f"{kind} SavedModel: {path}")
  return written
