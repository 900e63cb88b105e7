"""Training an ALBERT SentencePiece vocabulary with the original options."""

import os
from typing import Sequence, Union

from absl import logging
import sentencepiece as spm

from albert_tf.files import expand_files

CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
# The user-defined symbols of the released 30k-clean.model.
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")


def train_vocab(inputs: Union[str, Sequence[str]], model_prefix: str, vocab_size: int = 30000,
                input_sentence_size: int = 10_000_000, character_coverage: float = 0.99995,
                seed_sentencepiece_size: int = 1_000_000, num_threads: int = 2,
                overwrite: bool = False) -> str:
  """Trains a unigram SentencePiece model the way ALBERT's 30k-clean.model was made.

  pad_id=0, unk_id=1, no BOS/EOS, control symbols [CLS], [SEP], [MASK], the
  original user-defined symbols, and sentence sampling with
  `input_sentence_size`. Writes `<model_prefix>.model` and `.vocab`.

  Returns:
    The path of the `.model` file.
  """
  outputs = [model_prefix + ".model", model_prefix + ".vocab"]
  existing = [p for p in outputs if os.path.exists(p)]
  if existing and not overwrite:
    raise FileExistsError(f"{', '.join(existing)} exists; choose another prefix or overwrite")
  files = expand_files(inputs)
  if not any(_has_text(f) for f in files):
    raise ValueError(f"the input files hold no text: {', '.join(files)}")
  os.makedirs(os.path.dirname(os.path.abspath(model_prefix)), exist_ok=True)
  logging.info("Training a %d-piece vocabulary on %d file(s)", vocab_size, len(files))
  try:
    spm.SentencePieceTrainer.Train(
        input=files, model_prefix=model_prefix, vocab_size=vocab_size, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=list(CONTROL_SYMBOLS), user_defined_symbols=list(USER_DEFINED_SYMBOLS),
        character_coverage=character_coverage, input_sentence_size=input_sentence_size,
        shuffle_input_sentence=True, seed_sentencepiece_size=seed_sentencepiece_size,
        num_threads=num_threads, hard_vocab_limit=True, minloglevel=2)
  except RuntimeError as e:  # e.g. "Vocabulary size too high (8000). Please set it to a value <= 3520."
    raise ValueError(f"SentencePiece training on {', '.join(files)} failed: {e}") from None
  return outputs[0]


def _has_text(path: str) -> bool:
  with open(path, "rb") as f:
    for line in f:
      if line.strip():
        return True
  return False
