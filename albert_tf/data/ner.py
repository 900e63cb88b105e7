"""Token classification data: CoNLL-style files -> sentences -> labelled windows.

A file holds one token per line with its tag in the last column (CoNLL-2003:
`EU NNP B-NP B-ORG`; the Chinese NER sets, MSRA and People's Daily: `中 B-LOC`),
blank lines between sentences; `-DOCSTART-` lines are skipped. Tags are `O` or
`<prefix>-<type>` in one of three schemes: IOB2 (every entity opens with `B-`),
IOB1 (`I-` opens an entity; `B-` only between two of the same type) or BIOES
(`S-` for one token, `B-` ... `E-` around longer ones).

A sentence becomes one or more windows of `max_seq_length` pieces: a word's tag
goes on its first piece, its other pieces are ignored (label -1); a sentence
longer than a window is cut into windows `stride` pieces apart, and each word is
predicted in exactly one of them, the one where it has the most context on both
sides (SQuAD's doc-stride rule), so predictions merge back to one tag per word.
"""

import dataclasses
import os
from typing import Iterable, Iterator, List, Optional, Sequence

from albert_tf.data.squad import max_context_windows
from albert_tf.files import text_lines
from albert_tf.text import packing

DOCSTART = "-DOCSTART-"
SCHEMES = ("IOB2", "IOB1", "BIOES")
IGNORED = -1   # the label of a piece that is not a word's first, or not predicted here


@dataclasses.dataclass
class Sentence:
  """One sentence of a file: its words, their tags, and each word's line (1-based)."""
  words: List[str]
  tags: List[str]
  lines: List[int]


def read_sentences(path: str) -> List[Sentence]:
  """Every sentence of a CoNLL-style file, in order (`iter_sentences`, in a list)."""
  return list(iter_sentences(path))


def iter_sentences(path: str) -> Iterator[Sentence]:
  """Each sentence of a CoNLL-style file, in order, read as it is needed.

  Errors name `file:line`: a token line without a tag; and the file: not found (at once),
  or no sentence in it (empty, blank, or only `-DOCSTART-` lines).
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{path} not found")
  return _sentences(path)


def _sentences(path: str) -> Iterator[Sentence]:
  words, tags, lines, docstarts, found = [], [], [], 0, 0
  for number, line in enumerate(text_lines(path), 1):
    line = line.rstrip("\n")
    columns = line.split()
    if not columns or columns[0] == DOCSTART:
      docstarts += bool(columns)
      if words:
        found += 1
        yield Sentence(words, tags, lines)
        words, tags, lines = [], [], []
      continue
    if len(columns) < 2:
      raise ValueError(f"{path}:{number}: {line.strip()!r} has no tag (expected a token, "
                       "then its tag in the last column)")
    words.append(columns[0])
    tags.append(columns[-1])
    lines.append(number)
  if words:
    found += 1
    yield Sentence(words, tags, lines)
  if not found:
    what = "only -DOCSTART- lines" if docstarts else "no token lines"
    raise ValueError(f"{path}: no sentence in it ({what}); expected one token and its tag "
                     "per line, sentences separated by blank lines")


@dataclasses.dataclass
class Survey:
  """What a run reads off its training sentences in one pass: their tags (`label_list`'s
  order), tag scheme (`detect_scheme`'s), whether every word is one character, and how
  many sentences there are."""
  labels: List[str]
  scheme: str
  per_character: bool
  sentences: int


def survey(sentences: Iterable[Sentence], path: str) -> Survey:
  """The training sentences' `Survey`, each checked (`check_tags`) as it comes."""
  tags, per_character, count, schemes = set(), True, 0, set()
  for sentence in sentences:
    check_tags([sentence], path)
    tags.update(sentence.tags)
    per_character = per_character and all(len(w) == 1 for w in sentence.words)
    schemes.add(detect_scheme([sentence]))
    count += 1
  scheme = next((s for s in ("BIOES", "IOB1") if s in schemes), "IOB2")
  return Survey(tag_order(tags), scheme, per_character, count)


def split_tag(tag: str):
  """'B-PER' -> ('B', 'PER'); 'O' -> ('O', None); anything else -> (None, None)."""
  if tag == "O":
    return "O", None
  prefix, dash, kind = tag.partition("-")
  if dash and kind and prefix in ("B", "I", "E", "S"):
    return prefix, kind
  return None, None


def check_tags(sentences: Sequence[Sentence], path: str,
               known: Optional[Sequence[str]] = None) -> None:
  """Every tag is `O` or B-/I-/E-/S-<type>; given the training set's (checked) tags
  `known`, every tag is one of them. Errors name `file:line`."""
  for sentence in sentences:
    for tag, line in zip(sentence.tags, sentence.lines):
      if known is None and split_tag(tag)[0] is None:
        raise ValueError(f"{path}:{line}: tag {tag!r} is neither O nor B-, I-, E- or "
                         "S-<type>")
      if known is not None and tag not in known:
        raise ValueError(f"{path}:{line}: tag {tag!r} is not in the training set's tags "
                         f"({', '.join(known)})")


def detect_scheme(sentences: Sequence[Sentence]) -> str:
  """BIOES if any tag is E- or S-; IOB1 if an entity opens with I- (after O, another
  type, or at a sentence's start); else IOB2."""
  iob1 = False
  for sentence in sentences:
    previous = ("O", None)
    for tag in sentence.tags:
      prefix, kind = split_tag(tag)
      if prefix in ("E", "S"):
        return "BIOES"
      if prefix == "I" and (previous[0] == "O" or previous[1] != kind):
        iob1 = True
      previous = (prefix, kind)
  return "IOB1" if iob1 else "IOB2"


def entities(tags: Sequence[str], scheme: str) -> List[tuple]:
  """(type, first, last) word indices of the entities in one sentence's tags.

  IOB2 and BIOES: an entity opens at B- (or S-, which also closes it); I-/E- of
  the open type continue it (E- closes it); an I- or E- that continues nothing
  opens one, as conlleval does. IOB1: I- opens an entity unless it continues one
  of its type; B- always opens one.
  """
  if scheme not in SCHEMES:
    raise ValueError(f"unknown tag scheme {scheme!r}; one of {', '.join(SCHEMES)}")
  found, start, open_kind = [], None, None
  for i, tag in enumerate(list(tags) + ["O"]):
    prefix, kind = split_tag(tag)
    continues = open_kind is not None and kind == open_kind and prefix in ("I", "E")
    if open_kind is not None and not continues:
      found.append((open_kind, start, i - 1))
      open_kind = None
    if prefix in ("B", "S", "I", "E") and not continues:
      start, open_kind = i, kind
    if prefix in ("E", "S") and scheme == "BIOES" and open_kind is not None:
      found.append((open_kind, start, i))
      open_kind = None
  return found


def label_list(sentences: Sequence[Sentence]) -> List[str]:
  """The tags of the training sentences: O first, then the others sorted by type and
  prefix (B, I, E, S)."""
  return tag_order({tag for sentence in sentences for tag in sentence.tags})


def tag_order(tags: Iterable[str]) -> List[str]:
  """`tags` in `label_list`'s order: O first, then by type and prefix (B, I, E, S)."""
  tags = set(tags) - {"O"}
  order = {"B": 0, "I": 1, "E": 2, "S": 3}
  return ["O"] + sorted(tags, key=lambda t: (split_tag(t)[1], order[split_tag(t)[0]]))


# ----------------------------------------------------------------------------- windows

@dataclasses.dataclass
class Window:
  """One model input: `input_ids` etc. of `max_seq_length`, `label_ids` (IGNORED where
  nothing is predicted), and for each position the index of the word it predicts
  (-1 elsewhere)."""
  sentence: int
  input_ids: List[int]
  input_mask: List[int]
  segment_ids: List[int]
  label_ids: List[int]
  word_index: List[int]


def word_pieces(tokenizer, words: Sequence[str]) -> List[List[int]]:
  """Piece ids of each word, tokenized alone; a word that gives no piece gets [UNK]."""
  return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(w)) or [tokenizer.unk_id]
          for w in words]


def windows(sentence_index: int, pieces: Sequence[Sequence[int]], tag_ids: Sequence[int],
            tokenizer, max_seq_length: int, stride: int) -> Iterator[Window]:
  """The windows of one sentence: `[CLS] pieces [SEP]`, `stride` pieces apart when the
  sentence is longer than `max_seq_length - 2`; each word predicted in one window."""
  room = max_seq_length - 2
  if room < 1 or stride < 1:
    raise ValueError(f"max_seq_length={max_seq_length} and stride={stride} leave no room")
  flat, owner, first = [], [], []
  for w, ids in enumerate(pieces):
    first.append(len(flat))
    flat.extend(ids)
    owner.extend([w] * len(ids))
  starts = packing.window_starts(len(flat), room, stride)
  # Each piece's window of most context (SQuAD's rule, as for its document windows).
  best = max_context_windows([(start, len(flat[start:start + room])) for start in starts],
                             len(flat))
  for k, start in enumerate(starts):
    chunk = flat[start:start + room]
    labels, words = [IGNORED] * max_seq_length, [-1] * max_seq_length
    for offset in range(len(chunk)):
      w = owner[start + offset]
      if first[w] == start + offset and best[start + offset] == k:
        labels[offset + 1], words[offset + 1] = tag_ids[w], w
    ids = [tokenizer.cls_id] + chunk + [tokenizer.sep_id]
    padding = max_seq_length - len(ids)
    yield Window(sentence_index, ids + [tokenizer.pad_id] * padding,
                 [1] * len(ids) + [0] * padding, [0] * max_seq_length, labels, words)


def convert(sentences: Iterable[Sentence], labels: Sequence[str], tokenizer,
            max_seq_length: int, stride: int) -> List[Window]:
  """Every sentence's windows, in order (`iter_windows`, in a list)."""
  return list(iter_windows(sentences, labels, tokenizer, max_seq_length, stride))


def iter_windows(sentences: Iterable[Sentence], labels: Sequence[str], tokenizer,
                 max_seq_length: int, stride: int) -> Iterator[Window]:
  """Each sentence's windows, in order, made as the sentences come."""
  index = {tag: i for i, tag in enumerate(labels)}
  for s, sentence in enumerate(sentences):
    tag_ids = [index.get(t, IGNORED) for t in sentence.tags]
    yield from windows(s, word_pieces(tokenizer, sentence.words), tag_ids, tokenizer,
                       max_seq_length, stride)


def merge_predictions(sentences: Sequence[Sentence], all_windows: Sequence[Window],
                      predicted: Sequence[Sequence[int]],
                      labels: Sequence[str]) -> List[List[str]]:
  """Per sentence, one predicted tag per word, from each window's predicted label ids
  [max_seq_length] at the positions it predicts."""
  tags: List[List[Optional[str]]] = [[None] * len(s.words) for s in sentences]
  for window, row in zip(all_windows, predicted):
    for position, w in enumerate(window.word_index):
      if w >= 0:
        tags[window.sentence][w] = labels[int(row[position])]
  missing = [(s, w) for s, row in enumerate(tags) for w, t in enumerate(row) if t is None]
  if missing:
    raise AssertionError(f"words without a prediction (sentence, word): {missing[:5]}")
  return tags   # type: ignore[return-value]

