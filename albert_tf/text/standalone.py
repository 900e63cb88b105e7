"""ALBERT's tokenizer as files that other tokenizers run alone.

`FullTokenizer` is ALBERT's normalization (whitespace, `` and '' to ", NFKD, accents
removed, lower-casing), then SentencePiece, then the digit-comma rule. Tokenizers that run
a SentencePiece model by itself (KerasHub's, TFLite's) or a `tokenizer.json`
(transformers' and every `tokenizers` user's) get the same ids from what is written here:

* `albert_sentencepiece_model`: the model with ALBERT's normalization composed with its
  own NFKC normalizer and compiled into its `precompiled_charsmap`.
* `standalone_sentencepiece_model`: that, with the pieces the digit-comma rule splits
  (`1,`) marked unused, so that SentencePiece never produces them and splits the digits
  from the comma itself (KerasHub presets).
* `tokenizer_json`: the same as `tokenizers` components (docs/huggingface.md, "The fast
  tokenizer"): that charsmap as a `Precompiled` normalizer (the two quote pairs, which
  span characters, as `Replace` before it), `Metaspace`, and a `Unigram` model whose
  user-defined symbols score as SentencePiece scores them (always chosen, so none needs
  an added token and none gets an invented `▁`) and whose digit-comma pieces score so low
  that they are never chosen; or BERT's WordPiece for a `vocab.txt`.

Known differences (measured in tests/test_tokenization.py and docs/huggingface.md): a
capital sigma that ends a word lower-cases to σ here and to ς in Python; with a
vocabulary whose scores are not on create_vocab.py's grid (`vocab.SCORE_STEP`: a
released model's), `tokenizers` may break ties between segmentations of equal score (a
run of one repeated character, `================`) the other way round from SentencePiece,
which adds the scores in float32; and a special token written in the text (`[CLS]`) is
that token to transformers, pieces to albert_tf.
"""

import base64
import functools
import io
import sys
import unicodedata
from typing import Dict, List, Tuple

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf.text import tokenization

_Piece = sentencepiece_model_pb2.ModelProto.SentencePiece
NEVER = -1e4    # a tokenizer.json score no segmentation chooses while another exists


def _albert_normalize_char(c: str, lower: bool) -> str:
  """`preprocess_text` of one character (its whitespace collapse left to SentencePiece)."""
  if c.isspace():
    return " "
  kept = "".join(x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x))
  return kept.lower() if lower else kept


def _rules(model: bytes, lower: bool) -> Dict[str, str]:
  """Raw text -> what SentencePiece sees after ALBERT's and the model's own normalization.

  Every code point whose result differs from itself, ALBERT's two quote
  pairs, and the Hangul jamo sequences that NFKC composes back into
  syllables (NFKD splits them; composition spans characters).
  """
  own = spm.SentencePieceNormalizer(model_proto=model, add_dummy_prefix=False,
                                    escape_whitespaces=False, remove_extra_whitespaces=False)
  chars = [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
  # ALBERT's normalization leaves unassigned and private-use code points (87%) as they are
  # (tests/test_tflite.py): asked about the others only, the model's own about all, in one
  # call (0.7 s a conversion, against 1.4 s one code point at a time).
  albert = [c if unicodedata.category(c) in ("Cn", "Co") else _albert_normalize_char(c, lower)
            for c in chars]
  rules = {c: target for c, target in zip(chars, own.normalize(albert)) if target != c}
  for quotes in ("``", "''"):
    rules[quotes] = own.normalize('"')
  for cp in range(0xAC00, 0xD7A4):                     # Hangul syllables
    jamo = unicodedata.normalize("NFD", chr(cp))      # L V or L V T
    rules[jamo] = own.normalize(jamo)
    if len(jamo) == 3:                                # an LV syllable followed by a T jamo
      rules[chr(cp - (cp - 0xAC00) % 28) + jamo[2]] = own.normalize(jamo)
  return rules


def _compile_charsmap(rules: Dict[str, str]) -> bytes:
  """SentencePiece's own compiled form (a double-array trie) of `rules`."""
  hexes = lambda s: " ".join(f"{ord(c):X}" for c in s)
  tsv = "".join(f"{hexes(k)}\t{hexes(v)}\n" for k, v in rules.items())
  # The trainer is the only public way to compile a rule table; it trains a tiny model
  # whose normalizer carries the compiled map.
  import tempfile  # pylint: disable=g-import-not-at-top
  with tempfile.NamedTemporaryFile("w", suffix=".tsv", encoding="utf-8") as f:
    f.write(tsv)
    f.flush()
    out = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(["abc"] * 20), model_writer=out, vocab_size=8,
        normalization_rule_tsv=f.name, hard_vocab_limit=False, minloglevel=3)
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(out.getvalue())
  return proto.normalizer_spec.precompiled_charsmap


@functools.lru_cache(maxsize=4)
def albert_sentencepiece_model(model: bytes, lower: bool = True) -> bytes:
  """`model` (a serialized SentencePiece model) with ALBERT's normalization built in.

  Encoding raw text with the result gives the pieces `FullTokenizer` gets from
  `preprocess_text` then the original model (before the digit-comma rule),
  but for a word-final capital sigma.
  """
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(model)
  spec = proto.normalizer_spec
  spec.precompiled_charsmap = _compile_charsmap(_rules(model, lower))
  spec.name = f"albert_{'lower_' if lower else ''}{spec.name}"
  spec.normalization_rule_tsv = ""
  return proto.SerializeToString()


def digit_comma_table(tokenizer: tokenization.FullTokenizer) -> Tuple[List[int], List[List[int]]]:
  """The digit-comma rule as ids: (ids of the pieces it splits, the ids each becomes)."""
  keys, values = [], []
  for i in range(tokenizer.vocab_size):
    piece = tokenizer.sp_model.IdToPiece(i)
    if tokenization._split_digit_comma(piece):  # pylint: disable=protected-access
      keys.append(i)
      values.append(tokenizer.convert_tokens_to_ids(
          tokenization._split_digit_comma_piece(tokenizer.sp_model, piece)))  # pylint: disable=protected-access
  return keys, values


@functools.lru_cache(maxsize=4)
def standalone_sentencepiece_model(model: bytes, lower: bool = True) -> bytes:
  """`albert_sentencepiece_model(model, lower)` with the digit-comma pieces unused: what
  SentencePiece alone encodes raw text with into FullTokenizer's ids."""
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(albert_sentencepiece_model(model, lower))
  for i in _digit_comma_ids(proto):
    proto.pieces[i].type = _Piece.UNUSED
  return proto.SerializeToString()


def _digit_comma_ids(proto) -> List[int]:
  return [i for i, p in enumerate(proto.pieces)
          if p.type == _Piece.NORMAL and tokenization._split_digit_comma(p.piece)]  # pylint: disable=protected-access


# ----------------------------------------------------------------------------- tokenizer.json

def _special(i: int, token: str) -> dict:
  return dict(id=i, content=token, single_word=False, lstrip=False, rstrip=False,
              normalized=False, special=True)


def _template(cls_id: int, sep_id: int, cls: str, sep: str) -> dict:
  """`[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]`, B's tokens of type 1."""
  token = lambda name, type_id: {"SpecialToken": {"id": name, "type_id": type_id}}
  sequence = lambda name, type_id: {"Sequence": {"id": name, "type_id": type_id}}
  return {"type": "TemplateProcessing",
          "single": [token(cls, 0), sequence("A", 0), token(sep, 0)],
          "pair": [token(cls, 0), sequence("A", 0), token(sep, 0), sequence("B", 1),
                   token(sep, 1)],
          "special_tokens": {name: {"id": name, "ids": [i], "tokens": [name]}
                             for name, i in ((cls, cls_id), (sep, sep_id))}}


def tokenizer_json(tokenizer: tokenization.FullTokenizer) -> dict:
  """The `tokenizer.json` (the `tokenizers` library's format) that tokenizes as
  `tokenizer` does, `[CLS] A [SEP] (B [SEP])` added by its post-processor."""
  if tokenizer.sp_model is None:
    return _wordpiece_json(tokenizer)
  with open(tokenizer.spm_model_file, "rb") as f:
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(albert_sentencepiece_model(f.read(), tokenizer.do_lower_case))
  # SentencePiece adds a user-defined symbol's length x the best score of a normal piece,
  # less 0.1, so that it is always chosen (unigram_model.cc); the digit-comma pieces are
  # never (the rule splits them).
  best = max(p.score for p in proto.pieces if p.type == _Piece.NORMAL)
  never = set(_digit_comma_ids(proto))
  vocab = []
  for i, p in enumerate(proto.pieces):
    score = p.score
    if p.type == _Piece.USER_DEFINED:
      score = len(p.piece) * best - 0.1
    elif i in never or p.type == _Piece.UNUSED:
      score = NEVER
    vocab.append([p.piece, score])
  unk = next(i for i, p in enumerate(proto.pieces) if p.type == _Piece.UNKNOWN)
  metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
               "split": True}
  charsmap = base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode("ascii")
  cls, sep = tokenizer.cls_id, tokenizer.sep_id
  return {
      "version": "1.0", "truncation": None, "padding": None,
      "added_tokens": [_special(i, p.piece) for i, p in enumerate(proto.pieces)
                       if p.type in (_Piece.UNKNOWN, _Piece.CONTROL)],
      "normalizer": {"type": "Sequence", "normalizers": [
          {"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
          {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
          {"type": "Precompiled", "precompiled_charsmap": charsmap},
          # SentencePiece's remove_extra_whitespaces:
          {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
          {"type": "Strip", "strip_left": True, "strip_right": True}]},
      "pre_tokenizer": metaspace,
      "post_processor": _template(cls, sep, proto.pieces[cls].piece, proto.pieces[sep].piece),
      "decoder": metaspace,
      "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": False},
  }


def _wordpiece_json(tokenizer: tokenization.FullTokenizer) -> dict:
  """BERT's WordPiece (the Chinese releases' vocab_chinese.txt), as BertTokenizer's."""
  vocab = dict(tokenizer.vocab)
  specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab]
  return {
      "version": "1.0", "truncation": None, "padding": None,
      "added_tokens": [_special(vocab[t], t) for t in specials],
      "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                     "strip_accents": None, "lowercase": tokenizer.do_lower_case},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": _template(vocab["[CLS]"], vocab["[SEP]"], "[CLS]", "[SEP]"),
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 200, "vocab": vocab},
  }
