"""Training an ALBERT SentencePiece vocabulary with the original options."""

import os
from typing import Optional, Sequence, Union

from absl import logging
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf.files import expand_files

CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
# The user-defined symbols of the released 30k-clean.model.
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")
# Every piece's score is rounded to a multiple of this. Segmentations of the same pieces in
# another order (a run of one repeated character, "================") have equal scores;
# SentencePiece sums scores in float32, `tokenizers` (transformers) in float64, and with
# arbitrary scores the two round such sums apart and pick different orders. Sums of
# multiples of 1/64 are exact in both while under 2**18 in magnitude (about 20,000
# pieces of one text), so both see the tie and break it alike (the earliest start wins).
# A score moves by 1/128 at most: a piece's probability by under 1%.
SCORE_STEP = 2.0 ** -6


def train_vocab(inputs: Union[str, Sequence[str]], model_prefix: str, vocab_size: int = 30000,
                input_sentence_size: int = 10_000_000, character_coverage: float = 0.99995,
                seed_sentencepiece_size: int = 1_000_000, num_threads: int = 2,
                overwrite: bool = False, score_step: Optional[float] = SCORE_STEP) -> str:
  """Trains a unigram SentencePiece model the way ALBERT's 30k-clean.model was made.

  pad_id=0, unk_id=1, no BOS/EOS, control symbols [CLS], [SEP], [MASK], the
  original user-defined symbols, and sentence sampling with
  `input_sentence_size`; then the scores rounded to multiples of `score_step`, so that
  other implementations of SentencePiece's search choose its pieces (`round_scores`;
  None leaves them as SentencePiece trained them, as the released models have them).
  Writes `<model_prefix>.model` and `.vocab`.

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
  if score_step:
    round_scores(model_prefix, score_step)
  return outputs[0]


def round_scores(model_prefix: str, step: float = SCORE_STEP) -> None:
  """Rewrites `<model_prefix>.model` and `.vocab` with every score a multiple of `step`."""
  proto = sentencepiece_model_pb2.ModelProto()
  with open(model_prefix + ".model", "rb") as f:
    proto.ParseFromString(f.read())
  for piece in proto.pieces:
    piece.score = round(piece.score / step) * step
  with open(model_prefix + ".model", "wb") as f:
    f.write(proto.SerializeToString())
  with open(model_prefix + ".vocab", "w", encoding="utf-8") as f:
    f.writelines(f"{p.piece}\t{p.score:.10g}\n" for p in proto.pieces)


def _has_text(path: str) -> bool:
  with open(path, "rb") as f:
    for line in f:
      if line.strip():
        return True
  return False
