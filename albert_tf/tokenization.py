"""ALBERT's tokenizer: its text normalization, then SentencePiece with the digit-comma rule.

`FullTokenizer` reproduces google-research/albert `tokenization.py` for the
SentencePiece path (the one every released ALBERT model uses): ids here are
the ids the released checkpoints were pretrained on.
"""

import unicodedata
from typing import List, Sequence, Union

import sentencepiece as spm

SPIECE_UNDERLINE = "\u2581"
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>")


def convert_to_unicode(text: Union[str, bytes]) -> str:
  """str as is; bytes decoded as UTF-8 with invalid sequences dropped, as the original."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise TypeError(f"text must be str or bytes, got {type(text).__name__}")


def preprocess_text(text: Union[str, bytes], remove_space: bool = True, lower: bool = False,
                    keep_accents: bool = False) -> str:
  """ALBERT's normalization before SentencePiece.

  Collapses runs of whitespace to one space and strips the ends, turns ``
  and '' into ", removes accents (NFKD, then drops combining marks) unless
  `keep_accents`, and lower-cases when `lower`.
  """
  outputs = convert_to_unicode(text)
  if remove_space:
    outputs = " ".join(outputs.strip().split())
  outputs = outputs.replace("``", '"').replace("''", '"')
  if not keep_accents:
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
  if lower:
    outputs = outputs.lower()
  return outputs


def encode_pieces(sp_model: spm.SentencePieceProcessor, text: str, sample: bool = False) -> List[str]:
  """SentencePiece pieces of normalized `text`, with the original digit-comma rule.

  A piece longer than one character that ends in "," right after a digit
  ("1,", "▁000,") is encoded again without the comma, and the comma becomes
  a piece of its own, so numbers tokenize the same whatever follows them.
  """
  if sample:
    pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
  else:
    pieces = sp_model.EncodeAsPieces(text)
  new_pieces = []
  for piece in pieces:
    if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
      cur_pieces = sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
      if piece[0] != SPIECE_UNDERLINE and cur_pieces and cur_pieces[0][0] == SPIECE_UNDERLINE:
        if len(cur_pieces[0]) == 1:
          cur_pieces = cur_pieces[1:]
        else:
          cur_pieces[0] = cur_pieces[0][1:]
      cur_pieces.append(piece[-1])
      new_pieces.extend(cur_pieces)
    else:
      new_pieces.append(piece)
  return new_pieces


class FullTokenizer:
  """ALBERT's end-to-end tokenizer: normalization, SentencePiece, digit-comma rule.

  Args:
    vocab_file: accepted for the original signature; ALBERT models use
      `spm_model_file`, and WordPiece vocabularies are not supported.
    do_lower_case: lower-case after normalization (true for every released model).
    spm_model_file: path of the SentencePiece model (e.g. `30k-clean.model`).
  """

  def __init__(self, vocab_file=None, do_lower_case: bool = True, spm_model_file: str = None):
    if not spm_model_file:
      raise ValueError("FullTokenizer needs spm_model_file (ALBERT's SentencePiece model, "
                       "e.g. 30k-clean.model); WordPiece vocab files are not supported")
    self.spm_model_file = spm_model_file
    self.do_lower_case = do_lower_case
    self.sp_model = spm.SentencePieceProcessor()
    try:
      with open(spm_model_file, "rb") as f:
        self.sp_model.LoadFromSerializedProto(f.read())
    except OSError as e:
      raise FileNotFoundError(f"cannot read SentencePiece model {spm_model_file}: {e}") from None
    except RuntimeError as e:
      raise ValueError(f"{spm_model_file} is not a SentencePiece model: {e}") from None
    self.vocab_size = self.sp_model.GetPieceSize()
    self.special_ids = {}
    missing = []
    for token in SPECIAL_TOKENS:
      piece_id = self.sp_model.PieceToId(token)
      # PieceToId maps unknown pieces to unk_id; only <unk> itself may map there.
      if self.sp_model.IdToPiece(piece_id) != token:
        missing.append(token)
      self.special_ids[token] = piece_id
    if missing:
      raise ValueError(f"SentencePiece model {spm_model_file} lacks ALBERT's special "
                       f"pieces {missing}; train one with create_vocab.py")

  @property
  def cls_id(self) -> int:
    return self.special_ids["[CLS]"]

  @property
  def sep_id(self) -> int:
    return self.special_ids["[SEP]"]

  @property
  def mask_id(self) -> int:
    return self.special_ids["[MASK]"]

  @property
  def pad_id(self) -> int:
    return self.special_ids["<pad>"]

  @property
  def unk_id(self) -> int:
    return self.special_ids["<unk>"]

  def tokenize(self, text: Union[str, bytes], sample: bool = False) -> List[str]:
    """Normalized, SentencePiece-encoded pieces of `text` (str or UTF-8 bytes)."""
    return encode_pieces(self.sp_model, preprocess_text(text, lower=self.do_lower_case), sample)

  def encode(self, text: Union[str, bytes]) -> List[int]:
    """Ids of `tokenize(text)`."""
    return self.convert_tokens_to_ids(self.tokenize(text))

  def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
    return [self.sp_model.PieceToId(t) for t in tokens]

  def convert_ids_to_tokens(self, ids: Sequence[int]) -> List[str]:
    return [self.sp_model.IdToPiece(int(i)) for i in ids]
