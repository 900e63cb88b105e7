"""ALBERT tokenization and segment packing as TensorFlow ops (tensorflow-text).

`AlbertTokenizer` turns a batch of strings into the same ids as
`tokenization.FullTokenizer`, all in-graph: for a SentencePiece model
ALBERT's normalization, SentencePiece and the digit-comma rule; for a
WordPiece vocabulary BERT's basic tokenization (written here with regular
expressions built from the Python predicates) and `FastWordpieceTokenizer`.
`AlbertPacker` packs one or two tokenized segments like
`packing.pack_inputs`. Both run inside `tf.data` and inside SavedModels.
"""

import functools
import itertools
import operator
import sys
import unicodedata
from typing import Dict, Sequence, Union

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras as keras

from albert_tf.text import tokenization, wordpiece

_UNDERLINE = tokenization.SPIECE_UNDERLINE


_PREDICATES = {
    # WordPiece (BasicTokenizer): what its clean-up removes, its word separators, its
    # punctuation, nonspacing marks (accents). (The SentencePiece path's classes and CJK
    # ideographs: `_unicode_tables`, `wordpiece.CJK_RANGES`.)
    "wp_removed": lambda c: c in "\x00\ufffd" or wordpiece._is_control(c),
    "wp_space": lambda c: wordpiece._is_whitespace(c) or c.isspace(),
    "wp_punctuation": wordpiece._is_punctuation,
    "wp_mn": lambda c: unicodedata.category(c) == "Mn",
}


_SIGMA, _FINAL_SIGMA = "\u03a3", "\u03c2"


def _every_code_point() -> np.ndarray:
  """Every code point but the surrogates, increasing: int64 [1,112,064]."""
  return np.concatenate([np.arange(0xD800), np.arange(0xE000, sys.maxunicode + 1)])


def _class_of(code_points: np.ndarray) -> str:
  """An RE2 character class of increasing `code_points`, as ranges."""
  if not len(code_points):
    return "[]"
  breaks = np.flatnonzero(np.diff(code_points) != 1)                 # a range ends before each
  starts = code_points[np.concatenate([[0], breaks + 1])].tolist()
  ends = code_points[np.concatenate([breaks, [len(code_points) - 1]])].tolist()
  return "[" + "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}"
                       for a, b in zip(starts, ends)) + "]"


def _final_sigma_after(prefixes) -> list:
  """For each prefix p: does Python lower-case the Σ in p + Σ to the final ς?"""
  ends = map(operator.itemgetter(-1), map(str.lower, map(operator.add, prefixes,
                                                           itertools.repeat(_SIGMA))))
  return list(map(_FINAL_SIGMA.__eq__, ends))


@functools.lru_cache(maxsize=None)
def _unicode_tables() -> Dict[str, np.ndarray]:
  """Python's own Unicode rules over every code point, for the SentencePiece path.

  Returns boolean masks over `_every_code_point()` ("assigned": neither unassigned nor
  private-use, "space": str.isspace, "digit":
  str.isdigit, "combining": unicodedata.combining != 0, the final-sigma classes:
  "sigma_cased", a Σ after it is final; "sigma_ignorable", skipped looking back for one;
  "sigma_other") and "lower", the one code point `str.lower` makes of each (0 where it
  makes none, or two). Unassigned and private-use code points (categories Cn, Co: 87%)
  have none of these properties, so Python's own functions are mapped over the others
  only, 64K code points at a time: 0.3 s, against 0.9 s asking about every code point
  one at a time (tests/test_tokenization.py checks that they agree).
  """
  cps = _every_code_point()
  tables = {k: np.zeros(len(cps), bool) for k in ("assigned", "space", "digit", "combining",
                                                 "sigma_cased", "sigma_ignorable")}
  lower = np.zeros(len(cps), np.int64)
  for start in range(0, len(cps), 1 << 16):
    chars = list(map(chr, cps[start:start + (1 << 16)].tolist()))
    categories = np.array(list(map(unicodedata.category, chars)))
    assigned = start + np.flatnonzero((categories != "Cn") & (categories != "Co"))
    chars = list(map(chr, cps[assigned].tolist()))
    tables["assigned"][assigned] = True
    tables["space"][assigned] = list(map(str.isspace, chars))
    tables["digit"][assigned] = list(map(str.isdigit, chars))
    tables["combining"][assigned] = list(map(unicodedata.combining, chars))
    tables["sigma_cased"][assigned] = _final_sigma_after(chars)
    # Case-ignorable: Python skips it looking back, so a Σ after a cased letter and it is final.
    tables["sigma_ignorable"][assigned] = _final_sigma_after(
        map(operator.add, itertools.repeat("A"), chars))
    lowered = list(map(str.lower, chars))
    single = np.array(list(map(len, lowered))) == 1
    lower[assigned[single]] = list(map(ord, itertools.compress(lowered, single)))
  tables["sigma_ignorable"] &= ~tables["sigma_cased"]
  tables["sigma_other"] = ~(tables["sigma_cased"] | tables["sigma_ignorable"])
  tables["lower"] = np.where(lower == cps, 0, lower)
  return tables


@functools.lru_cache(maxsize=None)
def _char_class(kind: str) -> str:
  """An RE2 character class of every code point for which Python's predicate holds.

  Built from Python's own `str.isspace`, `str.isdigit`, `unicodedata` and the
  WordPiece predicates, so the in-graph rules match `preprocess_text`, the
  digit-comma rule and `BasicTokenizer` character for character.
  """
  cps = _every_code_point()
  if kind == "wp_cjk":
    members = np.zeros(len(cps), bool)
    for first, last in wordpiece.CJK_RANGES:
      members |= (cps >= first) & (cps <= last)
  elif kind in _PREDICATES:   # none holds for unassigned or private-use code points
    members = np.zeros(len(cps), bool)
    assigned = np.flatnonzero(_unicode_tables()["assigned"])
    members[assigned] = list(map(_PREDICATES[kind], map(chr, cps[assigned].tolist())))
  else:
    members = _unicode_tables()[kind]
  return _class_of(cps[members])


def normalize(strings: tf.Tensor, lower: bool = True) -> tf.Tensor:
  """`tokenization.preprocess_text` on a string tensor of any shape."""
  x = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
  x = tf.strings.regex_replace(x, _char_class("space") + "+", " ")
  x = tf.strings.regex_replace(x, "^ | $", "")
  x = tf.strings.regex_replace(x, "``|''", '"')
  x = tf_text.normalize_utf8(x, "NFKD")
  x = tf.strings.regex_replace(x, _char_class("combining"), "")
  if lower:
    x = _python_lower(x)
  return x


def _python_lower(strings: tf.Tensor) -> tf.Tensor:
  """`str.lower` on a string tensor of any shape, exactly.

  Not `tf.strings.lower`: it stops at the first NUL, and its ICU tables
  predate 40 of the lower-case pairs of Python's Unicode (U+2C2F, U+A7C0,
  the Vithkuqi letters, ...). The final sigma (Σ lower-cases to ς after a cased letter and not before
  one, case-ignorable characters skipped) is a regular expression, İ (the
  one code point that lower-cases to two) another, and every other code
  point goes through a table of Python's own mapping.
  """
  cased, ignorable, other = (_char_class(k) for k in ("sigma_cased", "sigma_ignorable",
                                                      "sigma_other"))
  x = tf.strings.regex_replace(strings, f"({cased}{ignorable}*)\u03a3({ignorable}*(?:{other}|$))",
                               "\\1\u03c2\\2")
  x = tf.strings.regex_replace(x, "\u0130", "i\u0307")
  lower = _unicode_tables()["lower"]
  keys = tf.constant(_every_code_point()[lower != 0], tf.int32)   # [K] increasing
  values = tf.constant(lower[lower != 0], tf.int32)              # [K]
  chars = tf.strings.unicode_decode(x, "UTF-8")                              # [N, (C)]
  flat = chars.flat_values
  index = tf.minimum(tf.searchsorted(keys, flat), keys.shape[0] - 1)
  lowered = tf.where(tf.gather(keys, index) == flat, tf.gather(values, index), flat)
  return tf.strings.unicode_encode(chars.with_flat_values(lowered), "UTF-8")


def wordpiece_words(strings: tf.Tensor, lower: bool = True) -> tf.RaggedTensor:
  """`wordpiece.BasicTokenizer(lower).tokenize` on strings [N] -> words [N, (W)]."""
  x = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
  x = tf.strings.regex_replace(x, _char_class("wp_removed"), "")
  x = tf.strings.regex_replace(x, _char_class("wp_space"), " ")
  if lower:
    x = _python_lower(x)
    x = tf_text.normalize_utf8(x, "NFD")
    x = tf.strings.regex_replace(x, _char_class("wp_mn"), "")
  kept = f"{_char_class('wp_punctuation')}|{_char_class('wp_cjk')}"
  return tf_text.regex_split(x, f" |{kept}", kept)


def word_spans(strings: tf.Tensor, per_character: bool = False):
  """The words of raw strings [N], where `BasicTokenizer` would cut them, with their spans.

  Words end at whitespace and around each punctuation mark and CJK character (the
  basic tokenizer's boundaries, on the text as given: nothing is normalized or
  removed); with `per_character`, every non-space character is a word (character
  tagging, as the Chinese NER sets are). Returns words [N, (W)] and their byte
  offsets `begin`, `end` [N, (W)] int64 (end exclusive).
  """
  space = _char_class("wp_space")
  if per_character:
    kept = "[^" + space[1:]
    return tf_text.regex_split_with_offsets(strings, f"{space}|{kept}", kept)
  kept = f"{_char_class('wp_punctuation')}|{_char_class('wp_cjk')}"
  return tf_text.regex_split_with_offsets(strings, f"{space}+|{kept}", kept)


def _fast_wordpiece_vocab(vocab: Dict[str, int], vocab_file: str) -> list:
  """The tokens in id order, those FastWordpieceTokenizer cannot hold made unreachable.

  It takes tokens of at most 256 UTF-8 bytes (without "##"); a longer one
  keeps its id under a name no word can have (words never hold NUL), and a
  word spelling it exactly gets other pieces in-graph than in Python.
  """
  tokens = list(vocab)
  too_long = [i for i, t in enumerate(tokens) if len(t.removeprefix("##").encode()) > 256]
  for i in too_long:
    tokens[i] = f"\x00{i}"
  if too_long:
    logging.warning("%s: %d token(s) longer than 256 bytes (ids %s) cannot be matched "
                    "in-graph", vocab_file, len(too_long), too_long[:5])
  return tokens


def _read_model(spm_model: Union[str, bytes]) -> bytes:
  if isinstance(spm_model, bytes):
    return spm_model
  with tf.io.gfile.GFile(spm_model, "rb") as f:
    return f.read()


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTokenizer(keras.layers.Layer):
  """Strings [B] -> int32 ids RaggedTensor [B, (T)], identical to FullTokenizer.

  Args:
    spm_model_file: path of ALBERT's SentencePiece model; or
    vocab_file: a WordPiece vocabulary (the Chinese releases' vocab_chinese.txt),
      used when no `spm_model_file` is given.
    do_lower_case: lower-case (and for WordPiece strip accents), as FullTokenizer.
  """

  def __init__(self, spm_model_file: str = None, do_lower_case: bool = True,
               vocab_file: str = None, **kwargs):
    super().__init__(**kwargs)
    self.spm_model_file, self.vocab_file = spm_model_file, vocab_file
    self.do_lower_case = do_lower_case
    reference = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case,
                                           spm_model_file=spm_model_file)
    self.special_ids = dict(reference.special_ids)
    self._reference = reference    # its special ids are checked when used, as there
    self.vocab_size = reference.vocab_size
    if spm_model_file:
      self._sp = tf_text.SentencepieceTokenizer(model=_read_model(spm_model_file),
                                                out_type=tf.string)
      self._digit_comma = ".*" + _char_class("digit") + ","
    else:
      unk = reference.wordpiece_tokenizer
      self._unk_token, self._max_chars = unk.unk_token, unk.max_input_chars_per_word
      # Words are counted in bytes there, in characters in the original: the
      # longer ones are replaced by the unknown token before (see call).
      self._wordpiece = tf_text.FastWordpieceTokenizer(
          vocab=_fast_wordpiece_vocab(reference.vocab, vocab_file), unknown_token=self._unk_token,
          max_bytes_per_word=4 * self._max_chars, token_out_type=tf.int32,
          no_pretokenization=True)

  def tokenize_pieces(self, strings: tf.Tensor) -> tf.RaggedTensor:
    """Strings [B] -> pieces RaggedTensor [B, (T)] of strings."""
    pieces = self._sp.tokenize(normalize(strings, self.do_lower_case))     # [B, (P)]
    split = pieces.with_flat_values(self._split_digit_commas(pieces.flat_values))  # [B, (P), (k)]
    return split.merge_dims(1, 2)

  def _split_digit_commas(self, flat: tf.Tensor) -> tf.RaggedTensor:
    """The digit-comma rule on flat pieces [F] -> [F, (k)] replacement pieces."""
    matched = tf.strings.regex_full_match(flat, self._digit_comma)        # [F]
    matched_idx = tf.where(matched)[:, 0]
    kept_idx = tf.where(~matched)[:, 0]
    pieces = tf.gather(flat, matched_idx)                                   # [M]
    # Re-encode the piece without its comma and without word-start marks.
    lengths = tf.strings.length(pieces)
    stripped = tf.strings.regex_replace(
        tf.strings.substr(pieces, tf.zeros_like(lengths), lengths - 1), _UNDERLINE, "")
    again = self._sp.tokenize(stripped)                                     # [M, (k)]
    # A piece that did not start a word must not gain a word-start mark.
    starts = again.row_starts()
    first = tf.gather(again.values, starts)
    fix = (~tf.strings.regex_full_match(pieces, _UNDERLINE + ".*")
           & tf.strings.regex_full_match(first, _UNDERLINE + ".*"))
    drop = fix & tf.equal(first, _UNDERLINE)
    trimmed = tf.where(fix, tf.strings.substr(first, len(_UNDERLINE.encode()), -1), first)
    values = tf.tensor_scatter_nd_update(again.values, starts[:, None], trimmed)
    keep = tf.tensor_scatter_nd_update(tf.ones_like(again.values, tf.bool), starts[:, None], ~drop)
    again = tf.ragged.boolean_mask(again.with_values(values), again.with_values(keep))
    commas = tf.RaggedTensor.from_row_lengths(tf.fill(tf.shape(pieces), ","),
                                              tf.ones_like(matched_idx))
    replaced = tf.concat([again, commas], axis=1)                           # [M, (k+1)]
    singles = tf.RaggedTensor.from_row_lengths(tf.gather(flat, kept_idx),
                                               tf.ones_like(kept_idx))      # [F-M, (1)]
    order = tf.math.invert_permutation(tf.concat([kept_idx, matched_idx], 0))
    return tf.gather(tf.concat([singles, replaced], axis=0), order)        # [F, (k)]

  def call(self, strings: tf.Tensor) -> tf.RaggedTensor:
    """Strings [B] -> int32 ids [B, (T)]."""
    if not self.spm_model_file:
      words = wordpiece_words(strings, self.do_lower_case)                  # [B, (W)]
      flat = words.flat_values
      too_long = tf.strings.length(flat, unit="UTF8_CHAR") > self._max_chars
      flat = tf.where(too_long, self._unk_token, flat)  # which the vocabulary has
      return words.with_flat_values(self._wordpiece.tokenize(flat)).merge_dims(1, 2)
    pieces = self.tokenize_pieces(strings)
    return pieces.with_flat_values(
        tf.cast(self._sp.string_to_id(pieces.flat_values), tf.int32))

  @property
  def text_tokenizers(self) -> list:
    """Its tensorflow-text tokenizers: what a SavedModel that calls it must track."""
    return [t for t in (getattr(self, "_sp", None), getattr(self, "_wordpiece", None)) if t]

  @property
  def cls_id(self) -> int:
    return self._reference.cls_id

  @property
  def sep_id(self) -> int:
    return self._reference.sep_id

  @property
  def pad_id(self) -> int:
    return self._reference.pad_id

  @property
  def mask_id(self) -> int:
    return self._reference.mask_id

  def get_config(self):
    config = super().get_config()
    config.update(spm_model_file=self.spm_model_file, vocab_file=self.vocab_file,
                  do_lower_case=self.do_lower_case)
    return config


def _keep_first(segment: tf.RaggedTensor, lengths: tf.Tensor) -> tf.RaggedTensor:
  """The first `lengths[i]` items of each row of a ragged-rank-1 `segment` [B, (T)].

  On the flat values, not a ragged comparison: `positions < lengths[:, None]` on a
  RaggedTensor broadcasts through dynamic ragged shapes, a third of a preprocessor
  export's tracing (the same result).
  """
  splits = segment.row_splits
  keep = tf.clip_by_value(tf.cast(lengths, splits.dtype), 0, segment.row_lengths())   # [B]
  rows = segment.value_rowids()                                                         # [N]
  position = tf.range(tf.shape(rows, out_type=splits.dtype)[0]) - tf.gather(splits, rows)
  values = tf.boolean_mask(segment.values, position < tf.gather(keep, rows))            # [M]
  return tf.RaggedTensor.from_row_lengths(values, keep, validate=False)


def pack_segments(segments: Sequence[tf.RaggedTensor], seq_length, cls_id: int, sep_id: int,
                  pad_id: int = 0) -> Dict[str, tf.Tensor]:
  """`[CLS] A [SEP] (B [SEP])` packing of one or two id segments [B, (T)] or [B, (W), (T)].

  `seq_length` may be a Python int or a scalar tensor (the TF-Hub
  `bert_pack_inputs(..., seq_length=N)` convention). Pairs are truncated as
  the original `_truncate_seq_pair`. Returns int32 [B, seq_length]
  `input_word_ids`, `input_mask` and `input_type_ids`.
  """
  segments = list(segments) if isinstance(segments, (list, tuple)) else [segments]
  if len(segments) not in (1, 2):
    raise ValueError(f"ALBERT packs one or two segments, got {len(segments)}")
  segments = [s if s.ragged_rank == 1 else s.merge_dims(1, -1) for s in segments]
  if tf.is_tensor(seq_length):
    seq_length = tf.cast(seq_length, tf.int64)
  if len(segments) == 1:
    a = segments[0]
    segments = [_keep_first(a, tf.minimum(a.row_lengths(), seq_length - 2))]
  else:
    budget = seq_length - 3
    a, b = segments
    la, lb = a.row_lengths(), b.row_lengths()                        # [B], [B]
    over = la + lb > budget
    keep_a = tf.where(over, tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2)), la)
    keep_b = tf.where(over, budget - keep_a, lb)
    segments = [_keep_first(a, keep_a), _keep_first(b, keep_b)]
  segments = [tf.cast(s, tf.int32) for s in segments]
  word_ids, type_ids = tf_text.combine_segments(
      segments, start_of_sequence_id=cls_id, end_of_segment_id=sep_id)
  word_ids, mask = tf_text.pad_model_inputs(word_ids, seq_length, pad_value=pad_id)
  type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length, pad_value=0)
  return dict(input_word_ids=word_ids, input_mask=tf.cast(mask, tf.int32),
              input_type_ids=tf.cast(type_ids, tf.int32))


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertPacker(keras.layers.Layer):
  """One or two id segments [B, (T)] -> `[CLS] A [SEP] (B [SEP])` inputs at `seq_length`.

  Truncates a pair as the original `_truncate_seq_pair` (drop from the end of
  the longer segment, the second one on ties) and returns int32 [B, seq_length]
  `input_word_ids`, `input_mask` and `input_type_ids`.

  Args:
    seq_length: length of the packed inputs.
    cls_id, sep_id, pad_id: ids of [CLS], [SEP] and <pad>.
  """

  def __init__(self, seq_length: int, cls_id: int, sep_id: int, pad_id: int = 0, **kwargs):
    super().__init__(**kwargs)
    if seq_length < 3:
      raise ValueError(f"seq_length must be at least 3, got {seq_length}")
    self.seq_length = seq_length
    self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id

  def call(self, segments: Sequence[tf.RaggedTensor]) -> Dict[str, tf.Tensor]:
    return pack_segments(segments, self.seq_length, self.cls_id, self.sep_id, self.pad_id)

  def get_config(self):
    config = super().get_config()
    config.update(seq_length=self.seq_length, cls_id=self.cls_id, sep_id=self.sep_id,
                  pad_id=self.pad_id)
    return config
