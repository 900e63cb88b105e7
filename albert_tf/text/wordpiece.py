"""BERT's WordPiece tokenization, as the original ALBERT reads `--vocab_file`.

The Chinese ALBERT releases (`albert_*_zh`) ship `vocab_chinese.txt`, a
WordPiece vocabulary, instead of a SentencePiece model. The original
`tokenization.py` then runs `BasicTokenizer` (clean-up, CJK characters one
per token, lower-casing and accent stripping, punctuation split) and
`WordpieceTokenizer` (greedy longest match first, `##` continuations). This
module does the same, character for character; `albert_tf.tokenization`
exposes it under the original names.
"""

import collections
import unicodedata
from typing import Dict, List, Tuple, Union

import tensorflow as tf


def convert_to_unicode(text: Union[str, bytes]) -> str:
  """str as is; bytes decoded as UTF-8 with invalid sequences dropped, as the original.

  Lone surrogates in a str (JSON's "\\ud800" reads as one) are dropped too: they
  are not characters, and the in-graph tokenizer, which sees the same text as
  UTF-8 bytes, drops them as invalid.
  """
  if isinstance(text, str):
    try:
      text.encode("utf-8")
      return text
    except UnicodeEncodeError:
      return text.encode("utf-8", "surrogatepass").decode("utf-8", "ignore")
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise TypeError(f"text must be str or bytes, got {type(text).__name__}")


def printable_text(text: Union[str, bytes]) -> str:
  """Text for printing or logging: str as is, bytes decoded as UTF-8."""
  return convert_to_unicode(text)


def load_vocab(vocab_file: str) -> Dict[str, int]:
  """One token per line -> {token: id}, as the original reads it.

  A line's first whitespace-separated field is its token (a blank line is
  the token " "); a token seen before keeps its first id, so ids count the
  distinct tokens in order.
  """
  vocab = collections.OrderedDict()
  try:
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
      lines = f.read().decode("utf-8", "ignore").split("\n")
  except (OSError, tf.errors.OpError) as e:
    raise FileNotFoundError(f"cannot read vocabulary file {vocab_file}: {e}") from None
  if lines[-1] == "":          # the end of the last line, not a blank line
    lines.pop()
  for line in lines:
    token = line.strip().split()[0] if line.strip() else " "
    if token not in vocab:
      vocab[token] = len(vocab)
  return vocab


def whitespace_tokenize(text: str) -> List[str]:
  """`text.split()`: runs of whitespace separate tokens, the ends are dropped."""
  return text.split()


def convert_by_vocab(vocab, items) -> list:
  return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens) -> List[int]:
  return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids) -> List[str]:
  return convert_by_vocab(inv_vocab, ids)


def _is_whitespace(char: str) -> bool:
  """Space, tab, newline, carriage return and the Zs category."""
  return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
  """Categories Cc and Cf, except tab, newline and carriage return (whitespace here)."""
  return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
  """Every non-alphanumeric printable ASCII character, and the P* categories."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


# The CJK ideograph blocks the original splits one character per token.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_chinese_char(cp: int) -> bool:
  return any(a <= cp <= b for a, b in CJK_RANGES)


def _strip_accents(text: str) -> str:
  """NFD, then without the nonspacing marks (category Mn)."""
  return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


class BasicTokenizer:
  """Clean-up, CJK split, lower-casing + accent stripping, punctuation split.

  Args:
    do_lower_case: lower-case (`str.lower`) and strip accents.
  """

  def __init__(self, do_lower_case: bool = True):
    self.do_lower_case = do_lower_case

  def tokenize(self, text: Union[str, bytes]) -> List[str]:
    """The tokens of `text`, as the original `BasicTokenizer.tokenize`."""
    return [token for chars, _ in self._words(convert_to_unicode(text))
            for token in self._split_word(chars)]

  def tokenize_with_offsets(self, text: str) -> List[Tuple[str, int, int]]:
    """(token, start, end) for each token of `tokenize(text)`: it comes from `text[start:end]`."""
    return [token for chars, offsets in self._words(text)
            for token in self._split_word_with_offsets(chars, offsets)]

  def _words(self, text: str) -> List[Tuple[str, List[int]]]:
    """The clean-up and the split into words: (characters, offset of each in `text`).

    NUL, U+FFFD, control characters and lone surrogates (see
    `convert_to_unicode`) are dropped; whitespace separates words; each CJK
    ideograph is a word of its own.
    """
    words, word = [], []
    for i, char in enumerate(text):
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or _is_control(char) or 0xD800 <= cp <= 0xDFFF:
        continue
      if _is_whitespace(char) or char.isspace() or _is_chinese_char(cp):
        if word:
          words.append(word)
        word = []
        if _is_chinese_char(cp):
          words.append([(char, i)])
        continue
      word.append((char, i))
    if word:
      words.append(word)
    return [("".join(c for c, _ in w), [i for _, i in w]) for w in words]

  def _split_word(self, chars: str) -> List[str]:
    """One word: lower-cased and stripped of accents (with `do_lower_case`), split around
    punctuation."""
    text = _strip_accents(chars.lower()) if self.do_lower_case else chars
    return " ".join(_split_on_punctuation(text)).split()

  def _split_word_with_offsets(self, chars: str, offsets: List[int]
                               ) -> List[Tuple[str, int, int]]:
    """`_split_word` done character by character, to know where each token comes from."""
    per_char = list(chars)
    if self.do_lower_case:
      lowered = chars.lower()     # as a whole: the final sigma depends on its neighbours
      per_char = list(lowered) if len(lowered) == len(chars) else _align(chars, lowered)
      per_char = [_strip_accents(p) for p in per_char]
    tokens, current, current_start, current_end = [], "", 0, 0
    for piece, i in zip(per_char, offsets):
      for char in piece:
        if _is_punctuation(char) or char.isspace():
          if current:
            tokens.append((current, current_start, current_end))
          if not char.isspace():
            tokens.append((char, i, i + 1))
          current = ""
        else:
          if not current:
            current_start = i
          current += char
          current_end = i + 1
    if current:
      tokens.append((current, current_start, current_end))
    expected = self._split_word(chars)
    if [t for t, _, _ in tokens] != expected:   # normalization across characters
      return [(t, offsets[0], offsets[-1] + 1) for t in expected]
    return tokens


def _split_on_punctuation(text: str) -> List[str]:
  """Each punctuation character becomes a token of its own."""
  out, start_new = [], True
  for char in text:
    if _is_punctuation(char):
      out.append(char)
      start_new = True
    else:
      if start_new:
        out.append("")
      start_new = False
      out[-1] += char
  return out


def _align(chars: str, lowered: str) -> List[str]:
  """`chars.lower()` split into each character's share (one character may lower to two)."""
  out, k = [], 0
  for c in chars:
    n = len(c.lower())
    out.append(lowered[k:k + n])
    k += n
  return out


class WordpieceTokenizer:
  """Greedy longest-match-first WordPiece with `##` continuations.

  Args:
    vocab: {token: id}.
    unk_token: the token of a word that cannot be matched.
    max_input_chars_per_word: longer words become `unk_token`.
  """

  def __init__(self, vocab, unk_token: str = "[UNK]", max_input_chars_per_word: int = 200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text: Union[str, bytes]) -> List[str]:
    """Whitespace-separated words (already through `BasicTokenizer`) -> word pieces."""
    output = []
    for token in whitespace_tokenize(convert_to_unicode(text)):
      output.extend(self.tokenize_word(token))
    return output

  def tokenize_word(self, word: str) -> List[str]:
    """One word -> its pieces, or [unk_token] if it is too long or cannot be matched."""
    if len(word) > self.max_input_chars_per_word:
      return [self.unk_token]
    pieces, start = [], 0
    while start < len(word):
      end = len(word)
      while end > start:
        piece = word[start:end] if start == 0 else "##" + word[start:end]
        if piece in self.vocab:
          break
        end -= 1
      if end == start:
        return [self.unk_token]
      pieces.append(piece)
      start = end
    return pieces
