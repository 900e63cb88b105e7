"""Packing token ids into ALBERT's model inputs, in Python (the reference for the in-graph packer)."""

import random
from typing import Dict, List, Optional, Sequence, Tuple


def truncate_seq_pair(tokens_a: List, tokens_b: List, max_length: int,
                      rng: Optional[random.Random] = None) -> None:
  """Drops tokens from the longer list (ties: the second) until both fit, in place.

  From the end, as the original `_truncate_seq_pair` of fine-tuning; with
  `rng`, from the front or the end at random, as its pretraining data tool.
  """
  while len(tokens_a) + len(tokens_b) > max_length:
    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng is not None and rng.random() < 0.5:
      del longer[0]
    else:
      longer.pop()


def pack_texts(tokenizer, texts: Sequence[str], max_seq_length: int) -> Dict[str, List[int]]:
  """One example of one or two texts (a sentence pair), tokenized by `tokenizer` (a
  FullTokenizer) and packed as `pack_inputs` packs them."""
  ids = [tokenizer.encode(t) for t in texts]
  return pack_inputs(ids[0], ids[1] if len(ids) > 1 else None, max_seq_length,
                     tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)


def pack_inputs(ids_a: Sequence[int], ids_b: Optional[Sequence[int]], max_seq_length: int,
                cls_id: int, sep_id: int, pad_id: int = 0) -> Dict[str, List[int]]:
  """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, padded to `max_seq_length`.

  Returns a dict of int lists `input_word_ids`, `input_mask` (1 on real
  tokens) and `input_type_ids` (0 for [CLS] A [SEP], 1 for B [SEP]).
  """
  ids_a = list(ids_a)
  ids_b = None if ids_b is None else list(ids_b)
  specials = 3 if ids_b is not None else 2
  if max_seq_length < specials:
    raise ValueError(f"max_seq_length ({max_seq_length}) leaves no room for [CLS] and [SEP]")
  if ids_b is not None:
    truncate_seq_pair(ids_a, ids_b, max_seq_length - 3)
  else:
    del ids_a[max_seq_length - 2:]
  word_ids = [cls_id] + ids_a + [sep_id]
  type_ids = [0] * len(word_ids)
  if ids_b is not None:
    word_ids += ids_b + [sep_id]
    type_ids += [1] * (len(ids_b) + 1)
  padding = max_seq_length - len(word_ids)
  return dict(input_word_ids=word_ids + [pad_id] * padding,
              input_mask=[1] * len(word_ids) + [0] * padding,
              input_type_ids=type_ids + [0] * padding)


def window_starts(length: int, room: int, stride: int) -> List[int]:
  """Where the windows of `length` pieces start, `room` pieces each, `stride` apart (at
  most `room`), the last reaching the end: SQuAD's and NER's rule for long documents."""
  starts = [0]
  while starts[-1] + room < length:
    starts.append(starts[-1] + min(stride, room))
  return starts


def pack_windows(tokenizer, text: str, max_seq_length: int, stride: int,
                 max_windows: Optional[int] = None) -> Tuple[List[Dict[str, List[int]]], int]:
  """(`[CLS] window [SEP]` of each of the first `max_windows` windows of one text's pieces
  (`window_starts`), packed as `pack_inputs` packs them: one window for a text that fits;
  how many windows the whole text has)."""
  ids = tokenizer.encode(text)
  room = max_seq_length - 2
  starts = window_starts(len(ids), room, stride)
  return [pack_inputs(ids[start:start + room], None, max_seq_length, tokenizer.cls_id,
                      tokenizer.sep_id, tokenizer.pad_id)
          for start in starts[:max_windows]], len(starts)
