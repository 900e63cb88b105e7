"""convert_checkpoint.py: any ALBERT model directory to a Hugging Face or a released TF1 one.

--model (the old name --input still works), recognized by what it holds:
- a Hugging Face directory (config.json + model.safetensors, shards or
  pytorch_model.bin; `architectures` says which heads);
- a released TF1 directory (albert_config.json + model.ckpt-best; the heads
  are those the checkpoint holds: `cls/predictions` and `cls/seq_relationship`,
  run_classifier's `output_weights`, `cls/squad`, ...);
- an output directory of run_classifier.py, run_ner.py, run_race.py, run_squad.py or
  run_pretraining.py (read through `albert_tf.runs`: its record, model.ckpt-best or the
  latest checkpoint);
- an encoder SavedModel of hub_export/export.py (its weights, config and vocabulary).

Outputs: `hf` (config.json, model.safetensors, spiece.model or vocab.txt,
tokenizer_config.json, special_tokens_map.json: what `from_pretrained` reads) or
`tf1` (albert_config.json, model.ckpt-best in the original names, 30k-clean.model
or vocab_chinese.txt: what the original code and `--albert_directory` read).
The output directory appears whole or not at all.
"""

import dataclasses
import os
import shutil
from typing import Dict, Optional

from albert_tf import problems, runs, sources
from albert_tf.cli import Checked, option
from albert_tf.files import atomic_directory
from albert_tf.formats import huggingface, keras_hub
from albert_tf.formats.tf1 import RELEASED_CHECKPOINT, RELEASED_CONFIG, save_original_checkpoint
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.sources import Source
from albert_tf.text import standalone
from albert_tf.text.huggingface import save_hf_tokenizer
from albert_tf.text.tokenization import FullTokenizer

FORMATS = ("hf", "tf1", "keras_hub")


def _special_ids(tokenizer: Optional[FullTokenizer]) -> Dict[str, int]:
  """pad / bos / eos ids for config.json, where the vocabulary has them."""
  if tokenizer is None:
    return {}
  out = {}
  for key, token in (("pad_token_id", tokenizer._pad), ("bos_token_id", "[CLS]"),  # pylint: disable=protected-access
                     ("eos_token_id", "[SEP]")):
    if token in tokenizer.special_ids:
      out[key] = tokenizer.special_ids[token]
  return out


def _run_metadata(source: Source) -> Dict[str, object]:
  """A run's `runs.Run.export_extras` (tuned thresholds, windows), or nothing."""
  return source.run.export_extras() if source.run is not None else {}


def write_hf(source: Source, output_dir: str) -> Dict[str, object]:
  """Writes `source` as a Hugging Face directory; returns what was written."""
  with atomic_directory(output_dir, "--output_dir") as tmp:
    left_out = huggingface.save_hf_model(
        source.model, tmp, labels=source.labels, problem_type=source.problem_type,
        classifier_dropout_prob=source.classifier_dropout_prob,
        special_ids=_special_ids(source.tokenizer), skip=source.fresh,
        extra=_run_metadata(source))
    if source.tokenizer is not None:
      # A run's own length: transformers' truncation=True then cuts where the run does.
      save_hf_tokenizer(source.tokenizer, tmp, model_max_length=(
          source.max_seq_length or source.config.max_position_embeddings))
    files = sorted(os.listdir(tmp))
  return dict(architecture=huggingface.architecture_of(source.model, source.fresh),
              files=files, left_out=left_out)


def write_tf1(source: Source, output_dir: str) -> Dict[str, object]:
  """Writes `source` as a released TF1 directory; returns what was written."""
  with atomic_directory(output_dir, "--output_dir") as tmp:
    source.config.to_json_file(os.path.join(tmp, RELEASED_CONFIG))
    save_original_checkpoint(source.model, os.path.join(tmp, RELEASED_CHECKPOINT),
                             skip=source.fresh)
    if source.tokenizer is not None:
      name = "30k-clean.model" if source.tokenizer.spm_model_file else "vocab_chinese.txt"
      shutil.copyfile(source.tokenizer.vocabulary_file, os.path.join(tmp, name))
    files = sorted(os.listdir(tmp))
  return dict(architecture=type(source.model).__name__, files=files, left_out=[])


def write_keras_hub(source: Source, output_dir: str) -> Dict[str, object]:
  """Writes `source` as a KerasHub preset: the backbone with its tokenizer, or an
  AlbertTextClassifier (a classifier's head and label count) that `from_preset` loads."""
  classifier = (getattr(source.model, "KERAS_HUB_TASK", None) == "AlbertTextClassifier"
                and "output_weights" not in source.fresh)
  keras_hub.check_writable(source.config)
  spm = None
  if source.tokenizer is not None and source.tokenizer.spm_model_file:
    # KerasHub runs SentencePiece alone: ALBERT's normalization and digit-comma rule go
    # into the model it is given.
    with open(source.tokenizer.spm_model_file, "rb") as f:
      spm = standalone.standalone_sentencepiece_model(f.read(), source.tokenizer.do_lower_case)
  with atomic_directory(output_dir, "--output_dir") as tmp:
    written = keras_hub.write_preset(
        source.model, tmp, spm, num_classes=source.model.num_classes if classifier else None,
        dropout=source.classifier_dropout_prob,
        sequence_length=source.max_seq_length or source.config.max_position_embeddings,
        activation=problems.Problem.of(source.problem_type).activation,
        labels=source.labels if classifier else None,
        problem_type=source.problem_type if classifier else None,
        extra=_run_metadata(source) if classifier else None)
    files = sorted(os.listdir(tmp))
  headless = classifier or isinstance(source.model, AlbertEncoder)
  return dict(architecture=written, files=files,
              left_out=[] if headless else [f"{type(source.model).__name__}'s head (KerasHub "
                                            "has an AlbertTextClassifier head only)"])


@dataclasses.dataclass(kw_only=True)
class ConvertOptions(Checked):
  """convert_checkpoint.py's flags."""
  model: Optional[str] = sources.model_option()
  input: Optional[str] = sources.old_name_option()
  output_format: str = option(help="hf (config.json + model.safetensors, for transformers), "
                              "tf1 (albert_config.json + model.ckpt-best, the original names) "
                              "or keras_hub (a KerasHub preset for Keras 3).",
                              choices=FORMATS)
  output_dir: str = option(help="Where to write; must not exist (or be empty).")
  spm_model_file: Optional[str] = option(None, "SentencePiece model to write with the weights "
                                         "(default: the input's own, when it has one).")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary to write with the weights "
                                     "instead of --spm_model_file.")
  do_lower_case: bool = option(True, "With --spm_model_file / --vocab_file: lower-case.")
  checkpoint_name: str = option(RELEASED_CHECKPOINT, "Checkpoint prefix in a released "
                                "--model directory.")


def run(opts: ConvertOptions) -> Dict[str, Dict[str, object]]:
  """What convert_checkpoint.py does: reads, checks the target, writes, reports."""
  if opts.spm_model_file and opts.vocab_file:
    raise ValueError("pass one of --spm_model_file and --vocab_file, not both")
  value, flag = sources.model_flag(opts, ("input",))
  target = os.path.abspath(opts.output_dir)
  if os.path.exists(target) and not (os.path.isdir(target) and not os.listdir(target)):
    raise FileExistsError(f"--output_dir={opts.output_dir} exists and is not empty; nothing "
                          "was written (choose a new directory)")
  if target == os.path.abspath(value):
    raise ValueError(f"--output_dir must differ from {flag}")
  source = sources.read(value, flag, opts.spm_model_file, opts.vocab_file, opts.do_lower_case,
                        opts.checkpoint_name)
  writers = dict(hf=write_hf, tf1=write_tf1, keras_hub=write_keras_hub)
  written = writers[opts.output_format](source, opts.output_dir)
  print(f"Read {source.kind} {value} ({type(source.model).__name__}); wrote "
        f"{opts.output_dir}: {written['architecture']}, {', '.join(written['files'])}")
  if written["left_out"]:
    print(f"Not written (no place for them in {opts.output_format}): "
          + ", ".join(written["left_out"]))
  if source.tokenizer is None:
    print("No vocabulary written: the input has none; pass --spm_model_file or --vocab_file")
  note = runs.windows_note(source.run, "the model written", dict(
      hf="its config.json", keras_hub="its metadata.json").get(opts.output_format))
  if note:
    print(note)
  if opts.output_format == "tf1" and source.config.hidden_act == "gelu_exact":
    print("Note: hidden_act is gelu_exact (transformers' \"gelu\"); the original TF1 code knows "
          "only its tanh \"gelu\", albert_tf reads both")
  return {}
