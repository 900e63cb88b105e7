"""The model a command reads, wherever it comes from: one resolver and one flag.

`read(value, flag)` takes what a user names as "the model":
- a local directory in any layout `albert_tf.formats` reads (a released TF1 one, a
  Hugging Face one, a KerasHub preset, an encoder SavedModel of hub_export/export.py or a
  TF-Hub ALBERT module of tf-models-official);
- an output directory of run_classifier.py, run_ner.py, run_race.py, run_squad.py or
  run_pretraining.py, read through its owner, `albert_tf.runs`;
- a name: a TF-Hub handle or a Hugging Face repo id (`formats.names`, offline from the
  clients' caches).
It returns a `Source`: the model with its weights, its vocabulary (checked against the
model's vocab_size here, once) and what a run recorded.

`describe(...)` takes the same sources through the original scripts' flags
(`--albert_directory`, `--albert_config_file`, `--init_checkpoint`, `--spm_model_file` /
`--vocab_file`) and returns a `Description`: the config, the checkpoint to start from and
the vocabulary, with nothing built yet. Fine-tuning, pretraining and the TF-Hub export
start from it, each building its own model.

The commands that are not the original's scripts (convert_checkpoint.py and the
exporters under hub_export/ but export.py) take it as `--model`; `model_flag` accepts
the names they had before as aliases, with one line saying so. The training scripts and
hub_export/export.py keep the original repository's flags (`--albert_config_file`,
`--init_checkpoint`, `--albert_hub_module_handle`).
"""

import dataclasses
import os
from typing import List, Optional, Sequence, Tuple

from albert_tf import formats, runs
from albert_tf.cli import option
from albert_tf.data import glue
from albert_tf.formats import huggingface
from albert_tf.formats.tf1 import RELEASED_CHECKPOINT
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import for_heads
from albert_tf.text.tokenization import FullTokenizer

FLAG = "--model"
HELP = ("The model to read: a model directory (released TF1, Hugging Face, KerasHub, an "
        "encoder SavedModel), a run_classifier / run_ner / run_race / run_squad / "
        "run_pretraining --output_dir, a TF-Hub handle or a Hugging Face repo id.")


def model_option(more: str = ""):
  """The `--model` field of a command's options (`more`: what this command makes of it)."""
  return option(None, HELP + (" " + more if more else ""))


def old_name_option():
  """The field of one of a command's earlier names of `--model` (see `model_flag`)."""
  return option(None, f"An old name of {FLAG} (it still works).")


@dataclasses.dataclass
class Source:
  """A model read from any layout, with what its writers need besides the weights."""
  path: str
  kind: str                                  # what it was read as, for messages
  model: object                              # AlbertEncoder, AlbertPretrainer or a task model
  tokenizer: Optional[FullTokenizer]
  labels: Optional[List[str]] = None         # a classifier's label names, in id order
  problem_type: Optional[str] = None
  classifier_dropout_prob: float = 0.1
  task: Optional[glue.GlueTask] = None       # a run_classifier.py run's GLUE task
  max_seq_length: Optional[int] = None       # a fine-tuning run's sequence length
  fresh: List[str] = dataclasses.field(default_factory=list)   # heads the input did not hold
  run: Optional[runs.Run] = None             # the run, when the source is one

  @property
  def config(self) -> AlbertConfig:
    return self.encoder.config

  @property
  def encoder(self) -> AlbertEncoder:
    return self.model if isinstance(self.model, AlbertEncoder) else self.model.encoder


def model_flag(opts, aliases: Sequence[str]) -> Tuple[str, str]:
  """(value, flag) of `--model` or of the one alias given (`aliases`: option names the
  command had before `--model`); none, or more than one, is an error naming them. An alias
  prints one line: it still works, `--model` is its name now."""
  given = [name for name in ("model",) + tuple(aliases) if getattr(opts, name, None)]
  if len(given) > 1:
    raise ValueError(f"pass one of {FLAG} and its old names ("
                     + ", ".join(f"--{a}" for a in aliases) + "); got "
                     + ", ".join(f"--{g}" for g in given))
  if not given:
    raise ValueError(f"pass {FLAG}: {HELP}")
  name = given[0]
  if name != "model":
    print(f"--{name} is an old name of {FLAG} (it still works): the model to read")
  return getattr(opts, name), f"--{name}"


def locate(value: str, flag: str = FLAG) -> str:
  """The local directory `value` names (a hub handle or repo id resolved first)."""
  path = formats.resolve(value, flag)
  if not os.path.isdir(path):
    raise FileNotFoundError(f"{flag}={path} is not a directory")
  return path


def read(value: str, flag: str = FLAG, spm_model_file: Optional[str] = None,
         vocab_file: Optional[str] = None, do_lower_case: bool = True,
         checkpoint_name: str = RELEASED_CHECKPOINT,
         require_vocabulary: bool = False) -> Source:
  """Reads `value` (any source above); `spm_model_file` / `vocab_file` give or replace its
  vocabulary, which must fit the model's vocab_size. Errors name `flag` and the file."""
  path = locate(value, flag)
  if runs.Run.exists(path):
    run = runs.Run.read(path, flag)
    return Source(path, f"{run.task} run", run.model(), run.tokenizer(spm_model_file, vocab_file),
                  run.labels, run.problem_type, run.dropout, run.glue_task, run.max_seq_length,
                  run=run)
  found = formats.read_model_directory(path, flag, checkpoint_name,
                                       also=f"a run's --output_dir (no {runs.RECORD})")
  explicit = bool(spm_model_file or vocab_file)
  if not explicit:
    if require_vocabulary:
      found.require_vocabulary("a directory with one")
    spm_model_file, vocab_file = found.spm_model_file, found.vocab_file
    do_lower_case = do_lower_case if found.do_lower_case is None else found.do_lower_case
  if found.layout == huggingface.NAME:
    model, report = huggingface.build_hf_model(path)
    info = huggingface.read_hf_config(path)[1]
    source = Source(path, "Hugging Face directory", model, None, info.labels, info.problem_type,
                    info.classifier_dropout_prob or 0.1)
  else:
    model = for_heads(found.heads, found.config, found.num_labels)
    report = formats.load_checkpoint(model, found.checkpoint)
    kinds = {"tf1": "released TF1 directory", "tf_hub": "TF-Hub encoder SavedModel",
             "keras_hub": "KerasHub preset"}
    # A classifier with a label count but no names (KerasHub, TF1) is named as transformers
    # names them, so that its config.json says how many there are.
    labels = found.labels or ([f"LABEL_{i}" for i in range(found.num_labels)]
                              if found.num_labels else None)
    source = Source(path, kinds[found.layout], model, None, labels, found.problem_type)
  # Heads the source did not hold (a tf-models module has no sentence-order head) are
  # not written out as if trained.
  source.fresh = [n.split(" ")[0] for n in report.freshly_initialized]
  vocabulary = spm_model_file or vocab_file
  if not explicit and (not vocabulary or not os.path.exists(vocabulary)):
    print(f"{path} holds no vocabulary{': ' + found.vocabulary_error if found.vocabulary_error else ''}")
    return source   # the weights alone
  source.tokenizer = Description(
      source.config, f"{flag}={value}", spm_model_file=spm_model_file, vocab_file=vocab_file,
      do_lower_case=True if do_lower_case is None else do_lower_case,
      vocabulary_from=(f"--spm_model_file={spm_model_file}" if explicit and spm_model_file
                       else f"--vocab_file={vocab_file}" if explicit
                       else f"{vocabulary} (the vocabulary of {path})")).tokenizer()
  return source


@dataclasses.dataclass
class Description:
  """A model named by the original scripts' flags, not built yet."""
  config: Optional[AlbertConfig]
  config_source: str                         # where the config came from, for messages
  checkpoint: Optional[str] = None           # what formats.load_checkpoint takes
  spm_model_file: Optional[str] = None
  vocab_file: Optional[str] = None
  do_lower_case: bool = True
  vocabulary_from: str = ""                  # the flag or directory it came from
  no_vocabulary: str = ""                    # why the source has none, when it has none

  def tokenizer(self, required: bool = True) -> Optional[FullTokenizer]:
    """The vocabulary, checked to exist and to fit the config's vocab_size (the one place
    those are checked for the original's flags); None, if not `required`, when there is
    none."""
    path = self.spm_model_file or self.vocab_file
    if not path:
      if required:
        raise ValueError(self.no_vocabulary or VOCABULARY_FLAGS)
      return None
    if not os.path.exists(path):
      raise FileNotFoundError(f"{self.vocabulary_from} not found" + (
          "" if self.vocabulary_from.startswith("--") else
          "; pass --spm_model_file or --vocab_file"))
    tokenizer = FullTokenizer(vocab_file=self.vocab_file, spm_model_file=self.spm_model_file,
                              do_lower_case=self.do_lower_case)
    if self.config is not None:
      flag = "--spm_model_file" if self.spm_model_file else "--vocab_file"
      tokenizer.check_fits(self.config.vocab_size, self.config_source,
                           hint=f"pass the model's own vocabulary as {flag}")
    return tokenizer


VOCABULARY_FLAGS = ("pass exactly one of --spm_model_file (a SentencePiece model such as "
                    "30k-clean.model) and --vocab_file (a WordPiece vocabulary such as "
                    "vocab_chinese.txt)")


def describe(directory: Optional[str] = None, flag: str = "--albert_directory", *,
             config_file: Optional[str] = None, init_checkpoint: Optional[str] = None,
             spm_model_file: Optional[str] = None, vocab_file: Optional[str] = None,
             do_lower_case: bool = True,
             checkpoint_name: str = RELEASED_CHECKPOINT) -> Description:
  """The model the original's flags name. `directory` (given as `flag`) is any source
  `read` takes: a model directory, a run's --output_dir (its best checkpoint) or a name;
  the explicit `config_file`, `init_checkpoint` and vocabulary take precedence over what
  it holds. Errors name the flag."""
  if spm_model_file and vocab_file:
    raise ValueError(VOCABULARY_FLAGS + ", not both")
  described = Description(None, config_file or "")
  if directory:
    path = locate(directory, flag)
    where = f"{flag}={directory}"
    if runs.Run.exists(path):
      run = runs.Run.read(path, flag)
      spm, vocab = run.vocabulary()
      described = Description(run.config, where, run.own_checkpoint(), spm, vocab,
                              run.do_lower_case,
                              f"{spm or vocab} (the vocabulary {where} recorded)",
                              "" if spm or vocab else f"{where} recorded no vocabulary; "
                              "pass --spm_model_file or --vocab_file")
    else:
      found = formats.read_model_directory(path, flag, checkpoint_name)
      lower = do_lower_case if found.do_lower_case is None else found.do_lower_case
      described = Description(found.config, where, found.checkpoint,
                              None if found.vocabulary_error else found.spm_model_file,
                              None if found.vocabulary_error else found.vocab_file, lower,
                              f"{found.spm_model_file or found.vocab_file} (the vocabulary of "
                              f"{where})", f"{found.vocabulary_error}; pass --spm_model_file or "
                              "--vocab_file" if found.vocabulary_error else "")
  if config_file:
    described.config, described.config_source = AlbertConfig.from_json_file(config_file), config_file
  if init_checkpoint:
    described.checkpoint = formats.resolve(init_checkpoint, "--init_checkpoint")
  if spm_model_file or vocab_file:
    described.spm_model_file, described.vocab_file = spm_model_file, vocab_file
    described.do_lower_case = do_lower_case
    described.vocabulary_from = (f"--spm_model_file={spm_model_file}" if spm_model_file
                                 else f"--vocab_file={vocab_file}")
  return described
