"""ALBERT's tokenizer: its text normalization, then SentencePiece with the digit-comma rule,
or BERT's WordPiece for the Chinese releases' `vocab_chinese.txt`.

`FullTokenizer` reproduces google-research/albert `tokenization.py` on both
paths (the module's other names are here too: `BasicTokenizer`,
`WordpieceTokenizer`, `load_vocab`, ...): ids here are the ids the released
checkpoints were pretrained on.
"""

import re
import unicodedata
from typing import List, Sequence, Tuple, Union

import sentencepiece as spm

from albert_tf.text import wordpiece
# The original module's names, for code written against it.
from albert_tf.text.wordpiece import (  # pylint: disable=unused-import
    BasicTokenizer, WordpieceTokenizer, _is_control, _is_punctuation, _is_whitespace,
    convert_by_vocab, convert_ids_to_tokens, convert_to_unicode, convert_tokens_to_ids,
    load_vocab, printable_text, whitespace_tokenize)

SPIECE_UNDERLINE = "\u2581"
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>")
WORDPIECE_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[UNK]")


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
  if not keep_accents and not outputs.isascii():  # (ASCII has nothing to decompose)
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
  if lower:
    outputs = outputs.lower()
  return outputs


def normalize_with_offsets(text: str, lower: bool = False) -> Tuple[str, List[int], List[int]]:
  """`preprocess_text(text, lower=lower)` and where each of its characters came from.

  Returns (normalized, starts, ends): normalized character i comes from
  `text[starts[i]:ends[i]]`. Accent marks dropped by the normalization belong
  to the character before them, so a span of normalized characters maps back
  to the original text with its accents (SQuAD answers are cut from it).
  Lone surrogates are dropped, as `convert_to_unicode` drops them.
  """
  kept = [i for i, c in enumerate(text) if not "\ud800" <= c <= "\udfff"]
  if len(kept) < len(text):
    normalized, starts, ends = normalize_with_offsets("".join(text[i] for i in kept), lower)
    return normalized, [kept[i] for i in starts], [kept[i - 1] + 1 for i in ends]
  chars: List[List] = []                 # [character, start, end] of the output so far
  words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
  for w, (begin, end) in enumerate(words):
    if w:
      chars.append([" ", words[w - 1][1], begin])
    i = begin
    while i < end:
      c = text[i]
      if c in "`'" and i + 1 < end and text[i + 1] == c:       # `` and '' -> "
        chars.append(['"', i, i + 2])
        i += 2
        continue
      decomposed = "".join(d for d in unicodedata.normalize("NFKD", c)
                           if not unicodedata.combining(d))
      if not decomposed and chars and chars[-1][0] != " ":
        chars[-1][2] = i + 1                                 # a dropped accent joins its letter
      for d in (decomposed.lower() if lower else decomposed):
        chars.append([d, i, i + 1])
      i += 1
  normalized = "".join(c[0] for c in chars)
  reference = preprocess_text(text, lower=lower)
  if len(reference) == len(normalized):   # context-dependent casing (final sigma) keeps lengths
    normalized = reference
  return normalized, [c[1] for c in chars], [c[2] for c in chars]


def _split_digit_comma(piece: str) -> bool:
  return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _split_digit_comma_piece(sp_model: spm.SentencePieceProcessor, piece: str) -> List[str]:
  """"▁1990," -> pieces of "1990" (keeping the piece's own leading "▁" or lack of one) + [","]."""
  cur_pieces = sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
  if piece[0] != SPIECE_UNDERLINE and cur_pieces and cur_pieces[0][0] == SPIECE_UNDERLINE:
    if len(cur_pieces[0]) == 1:
      cur_pieces = cur_pieces[1:]
    else:
      cur_pieces[0] = cur_pieces[0][1:]
  return cur_pieces + [piece[-1]]


def _may_have_digit_comma(text: str) -> bool:
  """Whether a piece of normalized `text` can end in a comma (without a comma in ASCII
  text none can; other characters may normalize to one)."""
  return "," in text or not text.isascii()


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
  return _digit_comma_rule(sp_model, pieces) if _may_have_digit_comma(text) else pieces


def _digit_comma_rule(sp_model: spm.SentencePieceProcessor, pieces: List[str]) -> List[str]:
  new_pieces = []
  for piece in pieces:
    if _split_digit_comma(piece):
      new_pieces.extend(_split_digit_comma_piece(sp_model, piece))
    else:
      new_pieces.append(piece)
  return new_pieces


class FullTokenizer:
  """ALBERT's end-to-end tokenizer, SentencePiece or WordPiece, as the original chooses.

  With `spm_model_file` (every English release's `30k-clean.model`): ALBERT's
  normalization, SentencePiece and the digit-comma rule. Otherwise
  `vocab_file` (the Chinese releases' `vocab_chinese.txt`): BERT's
  `BasicTokenizer` then `WordpieceTokenizer` (see `albert_tf.text.wordpiece`).
  `vocab` ({token: id}) and `inv_vocab` exist for both, as in the original.

  Args:
    vocab_file: WordPiece vocabulary, one token per line; used when no
      `spm_model_file` is given.
    do_lower_case: lower-case (and, for WordPiece, strip accents); true for
      every released model.
    spm_model_file: path of the SentencePiece model.
  """

  def __init__(self, vocab_file=None, do_lower_case: bool = True, spm_model_file: str = None):
    self.vocab_file, self.spm_model_file = vocab_file, spm_model_file
    self.do_lower_case = do_lower_case
    self.sp_model = None
    self._piece_ids = {}
    if spm_model_file:
      self._load_sentencepiece(spm_model_file)
      self.vocab = {self.sp_model.IdToPiece(i): i for i in range(self.vocab_size)}
    elif vocab_file:
      self._load_wordpiece(vocab_file)
    else:
      raise ValueError("FullTokenizer needs spm_model_file (a SentencePiece model such as "
                       "30k-clean.model) or vocab_file (a WordPiece vocabulary such as "
                       "vocab_chinese.txt)")
    self.inv_vocab = {v: k for k, v in self.vocab.items()}

  def _load_sentencepiece(self, spm_model_file: str):
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
    for token in SPECIAL_TOKENS:
      piece_id = self.sp_model.PieceToId(token)
      # PieceToId maps unknown pieces to unk_id; only <unk> itself may map there.
      if self.sp_model.IdToPiece(piece_id) == token:
        self.special_ids[token] = piece_id
    self._pad, self._unk = "<pad>", "<unk>"

  def _load_wordpiece(self, vocab_file: str):
    self.vocab = wordpiece.load_vocab(vocab_file)
    self.vocab_size = len(self.vocab)
    self.special_ids = {t: self.vocab[t] for t in WORDPIECE_SPECIAL_TOKENS if t in self.vocab}
    # The original pads with id 0 whatever the vocabulary ([PAD] in BERT's and ALBERT's).
    self.special_ids["[PAD]"] = 0
    self._pad, self._unk = "[PAD]", "[UNK]"
    self.basic_tokenizer = wordpiece.BasicTokenizer(do_lower_case=self.do_lower_case)
    self.wordpiece_tokenizer = wordpiece.WordpieceTokenizer(vocab=self.vocab)

  @property
  def vocabulary_file(self) -> str:
    """The file the ids come from: the SentencePiece model or the WordPiece vocabulary."""
    return self.spm_model_file or self.vocab_file

  def check_fits(self, vocab_size: int, model: str = "", hint: str = "") -> None:
    """Raises a ValueError naming both sides unless the vocabulary has the model's
    `vocab_size` ids (the one check every command that pairs a vocabulary with a model
    makes); `model` says where the model's config is, `hint` what to do."""
    if self.vocab_size == vocab_size:
      return
    unit = "pieces" if self.spm_model_file else "entries"
    raise ValueError(f"the vocabulary {self.vocabulary_file} has {self.vocab_size} {unit} but "
                     f"the model's vocab_size is {vocab_size}"
                     + (f" ({model})" if model else "") + (f"; {hint}" if hint else ""))

  def special_id(self, token: str) -> int:
    """The id of special token `token`; a ValueError naming the vocabulary when it lacks
    it. Tokenizing needs none of them (the original's tokenization_test vocabulary has
    no [MASK]); packing inputs needs [CLS] and [SEP], pretraining data [MASK]."""
    if token not in self.special_ids:
      expected = SPECIAL_TOKENS if self.sp_model is not None else WORDPIECE_SPECIAL_TOKENS
      missing = [t for t in expected if t not in self.special_ids]
      if self.sp_model is not None:
        raise ValueError(f"SentencePiece model {self.spm_model_file} lacks ALBERT's special "
                         f"pieces {missing}, and {token} is needed here; train one with "
                         "create_vocab.py")
      raise ValueError(f"WordPiece vocabulary {self.vocab_file} lacks the special tokens "
                       f"{missing}, and {token} is needed here")
    return self.special_ids[token]

  @property
  def cls_id(self) -> int:
    return self.special_id("[CLS]")

  @property
  def sep_id(self) -> int:
    return self.special_id("[SEP]")

  @property
  def mask_id(self) -> int:
    return self.special_id("[MASK]")

  @property
  def pad_id(self) -> int:
    return self.special_id(self._pad)

  @property
  def unk_id(self) -> int:
    return self.special_id(self._unk)

  def tokenize(self, text: Union[str, bytes], sample: bool = False) -> List[str]:
    """The tokens of `text` (str or UTF-8 bytes).

    `sample` draws a SentencePiece segmentation (subword regularization);
    WordPiece has one segmentation only.
    """
    if self.sp_model is None:
      return [piece for token in self.basic_tokenizer.tokenize(text)
              for piece in self.wordpiece_tokenizer.tokenize_word(token)]
    return encode_pieces(self.sp_model, preprocess_text(text, lower=self.do_lower_case), sample)

  def tokenize_lines(self, texts: Sequence[Union[str, bytes]]) -> List[List[str]]:
    """`[tokenize(t) for t in texts]`, SentencePiece's part in one call (faster)."""
    if self.sp_model is None:
      return [self.tokenize(t) for t in texts]
    normalized = [preprocess_text(t, lower=self.do_lower_case) for t in texts]
    batch = self.sp_model.EncodeAsPieces(normalized, num_threads=1)
    return [_digit_comma_rule(self.sp_model, pieces) if _may_have_digit_comma(text) else pieces
            for text, pieces in zip(normalized, batch)]

  def tokenize_with_offsets(self, text: str) -> Tuple[List[str], List[int], List[int]]:
    """`tokenize(text)` and each piece's characters in `text`: (pieces, starts, ends).

    Piece k covers `text[starts[k]:ends[k]]` without the whitespace its
    leading "▁" stands for; pieces that cover no character of their own
    (a lone "▁") have starts[k] == ends[k]. A WordPiece token covers the
    characters of its word's part (`##` excluded); all pieces of a word that
    became [UNK] cover the whole word.
    """
    if self.sp_model is None:
      return self._wordpiece_with_offsets(convert_to_unicode(text) if isinstance(text, bytes)
                                          else text)
    normalized, char_starts, char_ends = normalize_with_offsets(text, self.do_lower_case)

    spans = []                 # (piece, first, last + 1) in normalized characters
    # sentencepiece < 0.2.2 gives begin/end in characters of the str it was given.
    for p in self.sp_model.EncodeAsImmutableProto(normalized).pieces:
      begin, end = p.begin, p.end
      if not _split_digit_comma(p.piece):
        spans.append((p.piece, begin, end))
        continue
      # The digit-comma rule (see encode_pieces): the number again without the comma, then ",".
      pieces = _split_digit_comma_piece(self.sp_model, p.piece)
      inner = p.piece[:-1].replace(SPIECE_UNDERLINE, "")
      surface_end = end - 1
      surface_begin = surface_end - len(inner)
      if surface_begin >= begin and normalized[surface_begin:surface_end] == inner:
        sub = self.sp_model.EncodeAsImmutableProto(inner).pieces
        offsets = [(surface_begin + q.begin, surface_begin + q.end) for q in sub]
        if len(offsets) != len(pieces) - 1:   # the rule dropped a lone leading "▁"
          offsets = offsets[len(offsets) - (len(pieces) - 1):]
      else:                                   # SentencePiece normalized these characters
        offsets = [(begin, surface_end)] * (len(pieces) - 1)
      spans.extend((piece, b, e) for piece, (b, e) in zip(pieces[:-1], offsets))
      spans.append((",", end - 1, end))

    pieces, starts, ends = [], [], []
    for piece, begin, end in spans:
      while begin < end and normalized[begin].isspace():
        begin += 1
      while end > begin and normalized[end - 1].isspace():
        end -= 1
      pieces.append(piece)
      if begin < end:
        starts.append(char_starts[begin])
        ends.append(char_ends[end - 1])
      else:
        anchor = char_starts[begin] if begin < len(normalized) else len(text)
        starts.append(anchor)
        ends.append(anchor)
    return pieces, starts, ends

  def _wordpiece_with_offsets(self, text: str) -> Tuple[List[str], List[int], List[int]]:
    pieces, starts, ends = [], [], []
    for token, start, end in self.basic_tokenizer.tokenize_with_offsets(text):
      word_pieces = self.wordpiece_tokenizer.tokenize_word(token)
      # Each piece's characters, when the token has one character per original character.
      exact = word_pieces != [self.wordpiece_tokenizer.unk_token] and end - start == len(token)
      position = start
      for i, piece in enumerate(word_pieces):
        length = len(piece) - 2 if i else len(piece)        # "##" is not in the text
        pieces.append(piece)
        starts.append(position if exact else start)
        ends.append(position + length if exact else end)
        position += length
    return pieces, starts, ends

  def encode(self, text: Union[str, bytes]) -> List[int]:
    """Ids of `tokenize(text)`."""
    return self.convert_tokens_to_ids(self.tokenize(text))

  def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
    if self.sp_model is None:
      return convert_by_vocab(self.vocab, tokens)
    ids, known = [], self._piece_ids  # PieceToId once per distinct piece
    for t in tokens:
      i = known.get(t)
      if i is None:
        i = known[t] = self.sp_model.PieceToId(t)
      ids.append(i)
    return ids

  def convert_ids_to_tokens(self, ids: Sequence[int]) -> List[str]:
    if self.sp_model is None:
      return convert_by_vocab(self.inv_vocab, [int(i) for i in ids])
    return [self.sp_model.IdToPiece(int(i)) for i in ids]
