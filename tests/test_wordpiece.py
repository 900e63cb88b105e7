"""WordPiece tokenization (the Chinese releases' vocab_chinese.txt) against the original.

The first tests make every assertion of google-research/albert's
`tokenization_test.py` (written again here, through `albert_tf.tokenization`);
the fuzz test compares `BasicTokenizer` with the original algorithm written
out step by step in this file.
"""

import unicodedata

import pytest

from albert_tf import tokenization
from common import CORPUS, fuzz_texts, write_wordpiece_vocab

ORIGINAL_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
                       "##ing"]


def _write(path, lines):
  path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
  return str(path)


# --------------------------------------------------------------- tokenization_test.py


def test_full_tokenizer(tmp_path):
  # Exactly the original's vocabulary, which has no [MASK]: tokenizing needs none.
  vocab_file = _write(tmp_path / "vocab.txt", ORIGINAL_TEST_VOCAB + [","])
  tokenizer = tokenization.FullTokenizer(vocab_file)
  tokens = tokenizer.tokenize("UNwant\u00E9d,running")
  assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
  assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]


def test_chinese():
  assert tokenization.BasicTokenizer().tokenize("ah\u535A\u63A8zz") == \
      ["ah", "\u535A", "\u63A8", "zz"]


def test_basic_tokenizer_lower():
  tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
  assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == \
      ["hello", "!", "how", "are", "you", "?"]
  assert tokenizer.tokenize("H\u00E9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
  tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
  assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == \
      ["HeLLo", "!", "how", "Are", "yoU", "?"]


def test_wordpiece_tokenizer():
  vocab = {token: i for i, token in enumerate(ORIGINAL_TEST_VOCAB)}
  tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)
  assert tokenizer.tokenize("") == []
  assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
  assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_convert_tokens_to_ids():
  vocab = {token: i for i, token in enumerate(ORIGINAL_TEST_VOCAB)}
  assert tokenization.convert_tokens_to_ids(
      vocab, ["un", "##want", "##ed", "runn", "##ing"]) == [7, 4, 5, 8, 9]


def test_is_whitespace():
  for char in (" ", "\t", "\r", "\n", "\u00A0"):
    assert tokenization._is_whitespace(char), repr(char)
  for char in ("A", "-"):
    assert not tokenization._is_whitespace(char), repr(char)


def test_is_control():
  assert tokenization._is_control("\u0005")
  for char in ("A", " ", "\t", "\r", "\U0001F4A9"):
    assert not tokenization._is_control(char), repr(char)


def test_is_punctuation():
  for char in ("-", "$", "`", "."):
    assert tokenization._is_punctuation(char), repr(char)
  for char in ("A", " "):
    assert not tokenization._is_punctuation(char), repr(char)


# --------------------------------------------------------------- the rest of the module


def test_load_vocab_reads_lines_as_the_original(tmp_path):
  # First field of each line; a blank line is " "; a repeated token keeps its first id.
  path = tmp_path / "vocab.txt"
  path.write_bytes(b"[PAD]\r\na 17\n\n[UNK]\na\n\xe4\xb8\xad\nlast")
  assert list(tokenization.load_vocab(str(path)).items()) == \
      [("[PAD]", 0), ("a", 1), (" ", 2), ("[UNK]", 3), ("\u4e2d", 4), ("last", 5)]
  with pytest.raises(FileNotFoundError, match="missing.txt"):
    tokenization.load_vocab(str(tmp_path / "missing.txt"))


def test_full_tokenizer_vocab_and_errors(tmp_path):
  vocab_file = _write(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               "\u4e2d", "##\u6587", "x"])
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=True)
  assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.pad_id,
          tokenizer.unk_id, tokenizer.vocab_size) == (2, 3, 4, 0, 1, 8)
  assert tokenizer.inv_vocab[5] == "\u4e2d" and tokenizer.vocab["x"] == 7
  # CJK characters are words of their own, so "##文" never follows "中".
  assert tokenizer.tokenize("X\u4e2d\u6587") == ["x", "\u4e2d", "[UNK]"]
  assert tokenizer.convert_ids_to_tokens([7, 5, 1]) == ["x", "\u4e2d", "[UNK]"]
  with pytest.raises(ValueError, match="spm_model_file.*vocab_file"):
    tokenization.FullTokenizer()
  no_specials = tokenization.FullTokenizer(_write(tmp_path / "no_specials.txt", ["[UNK]", "a"]))
  assert no_specials.tokenize("A b") == ["a", "[UNK]"]
  with pytest.raises(ValueError, match=r"no_specials.txt lacks the special tokens \['\[CLS\]', "
                                       r"'\[SEP\]', '\[MASK\]'\], and \[CLS\] is needed"):
    no_specials.cls_id  # pylint: disable=pointless-statement
  # The original SentencePiece path is unchanged and also has vocab / inv_vocab.


def test_sentencepiece_tokenizer_has_the_original_vocab_dicts(spm_model):
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  assert len(tokenizer.vocab) == tokenizer.vocab_size
  assert tokenizer.vocab["[CLS]"] == tokenizer.cls_id and tokenizer.inv_vocab[0] == "<pad>"


# --------------------------------------------------------------- the original, written out

def _original_basic_tokenize(text, do_lower_case):
  """BasicTokenizer.tokenize as the original does it, one pass after another."""
  def cat(c):
    return unicodedata.category(c)
  cjk = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
         (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
  text = "".join(c for c in text if not 0xD800 <= ord(c) <= 0xDFFF)  # as convert_to_unicode
  cleaned = ""
  for c in text:
    if ord(c) in (0, 0xFFFD) or (c not in "\t\n\r" and cat(c) in ("Cc", "Cf")):
      continue
    cleaned += " " if c in " \t\n\r" or cat(c) == "Zs" else c
  spaced = "".join(f" {c} " if any(a <= ord(c) <= b for a, b in cjk) else c for c in cleaned)
  tokens = []
  for token in spaced.strip().split():
    if do_lower_case:
      token = "".join(c for c in unicodedata.normalize("NFD", token.lower()) if cat(c) != "Mn")
    ascii_punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    tokens.extend("".join(f" {c} " if c in ascii_punctuation or cat(c).startswith("P") else c
                          for c in token).split())
  return " ".join(tokens).split()


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_basic_tokenizer_matches_the_original_on_fuzz(do_lower_case):
  texts = CORPUS + fuzz_texts(2000, seed=3)
  tokenizer = tokenization.BasicTokenizer(do_lower_case)
  differ = [t for t in texts if tokenizer.tokenize(t) != _original_basic_tokenize(t, do_lower_case)]
  assert not differ, differ[:3]


def test_offsets_point_at_each_pieces_characters(tmp_path):
  texts = CORPUS + ["\u5728\u5317\u4eacBeijing\u5e02\uff0c2008\u5e74\u5965\u8fd0\u4f1a",
                    "Stra\u00dfe \u0130stanbul \u039f\u0394\u039f\u03a3 caf\u00e9"]
  vocab_file = write_wordpiece_vocab(tmp_path / "vocab.txt", texts)
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file)
  checked = 0
  for text in texts:
    pieces, starts, ends = tokenizer.tokenize_with_offsets(text)
    assert pieces == tokenizer.tokenize(text)
    for piece, start, end in zip(pieces, starts, ends):
      surface = text[start:end]
      assert surface.strip() == surface and surface, (text, piece, start, end)
      if piece != "[UNK]":
        # The piece is the normalized surface, or (where normalization changed the
        # length, e.g. a dropped combining mark) lies inside its word's surface.
        want = piece[2:] if piece.startswith("##") else piece
        normalized = "".join(tokenization.BasicTokenizer().tokenize(surface))
        assert want in normalized, (text, piece, surface)
        checked += want == normalized
  assert checked > 100


# --------------------------------------------------------------- in-graph: the same ids

NAMED_CASES = {
    "mixed Chinese and English": "\u5728\u5317\u4eac(Beijing)\u5e02\uff0c2008\u5e74\u5965\u8fd0\u4f1a",
    "full-width forms": "\uff21\uff22\uff23\uff11\uff12\uff13\uff0c\uff01",
    "accents and combining marks": "Caf\u00e9 e\u0301 a\u0308\u0304 na\u00efve \u00c5ngstr\u00f6m",
    "German sharp s": "Stra\u00dfe STRASSE \u1e9e",   # case folding would give "strasse"
    "Turkish dotted I": "\u0130stanbul \u0130",       # Python: i + U+0307, then stripped
    "final sigma": "\u039f\u0394\u039f\u03a3. A\u03a3'\u03a3 \u03a3\u03a3",
    "control characters": "a\x00b\x05c\x7fd\x85e\u200ef\ufffdg",
    "zero-width and unusual whitespace": "a\u200bb\ufeffc\u00a0d\u3000e\u2028f\u2029g\u2003h",
    "emoji": "\U0001f600\U0001f389\U0001f44d\U0001f3fd ok",
    "ASCII symbols": "$5^2 `code` a~b|c\\d",
    "very long words": "x" * 201 + " " + "y" * 200 + " " + "\ud55c" * 201 + " " + "\ud55c" * 200,
    "numbers with commas": "1,000,000 and 3,5 and 12, 34",
    "CJK compatibility ideographs": "\uf900\uf901 \U0002f800",
    "a symbol that decomposes into punctuation": "a\u1fefb a\u037eb",
    "letters newer than ICU's case tables": "\u2c2f\ua7c0 \U00010570\U00010571 \ua7d0",
}


@pytest.fixture(scope="module")
def wordpiece_vocab(tmp_path_factory):
  texts = CORPUS + list(NAMED_CASES.values()) + fuzz_texts(2000, seed=5)
  path = tmp_path_factory.mktemp("wordpiece") / "vocab_chinese.txt"
  return write_wordpiece_vocab(path, texts, max_words=1000), texts


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_in_graph_ids_equal_python_on_fuzz(wordpiece_vocab, do_lower_case):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from albert_tf.text import preprocessing  # pylint: disable=g-import-not-at-top
  vocab_file, texts = wordpiece_vocab
  python = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
  layer = preprocessing.AlbertTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
  texts = texts + [b"invalid \xff\xfe utf-8 \xc3\xa9 ok"]
  got = layer(tf.constant([t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
                           for t in texts])).to_list()
  want = [python.encode(t) for t in texts]
  wrong = [t for t, g, w in zip(texts, got, want) if g != w]
  assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:3]!r}"
  # The vocabulary covers most of it: real pieces are compared, not only [UNK].
  ids = [i for row in want for i in row]
  assert sum(i == python.unk_id for i in ids) < 0.25 * len(ids)
  assert sum(python.inv_vocab[i].startswith("##") for i in ids) > 300


@pytest.mark.parametrize("name", sorted(NAMED_CASES))
def test_in_graph_ids_equal_python_by_case(wordpiece_vocab, name):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from albert_tf.text import preprocessing  # pylint: disable=g-import-not-at-top
  vocab_file, _ = wordpiece_vocab
  text = NAMED_CASES[name]
  python = tokenization.FullTokenizer(vocab_file=vocab_file)
  layer = preprocessing.AlbertTokenizer(vocab_file=vocab_file)
  assert layer(tf.constant([text])).to_list()[0] == python.encode(text)


def test_the_cases_where_case_folding_is_not_lower_casing(wordpiece_vocab):
  """What the in-graph path must not do: tensorflow-text's case folding (BertTokenizer's
  lower_case) differs from str.lower on these, so the lower-casing is Python's own."""
  import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  folded = tf_text.case_fold_utf8(["Stra\u00dfe", "\u039f\u0394\u039f\u03a3"]).numpy()
  assert [f.decode() for f in folded] == ["strasse", "\u03bf\u03b4\u03bf\u03c3"]
  # ... and tf.strings.lower lags behind Python's Unicode.
  assert tf.strings.lower("\u2c2f", encoding="utf-8").numpy().decode() != "\u2c2f".lower()
  basic = tokenization.BasicTokenizer()
  assert basic.tokenize("Stra\u00dfe") == ["stra\u00dfe"]
  assert basic.tokenize("\u0130stanbul") == ["istanbul"]
  assert basic.tokenize("\u039f\u0394\u039f\u03a3 A\u03a3'\u03a3 \u03a3\u03a3") == \
      ["\u03bf\u03b4\u03bf\u03c2", "a\u03c3", "'", "\u03c2", "\u03c3\u03c2"]


def test_long_words_are_counted_in_characters(tmp_path):
  """max_input_chars_per_word=200 characters, as the original (tensorflow-text counts bytes)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from albert_tf.text import preprocessing  # pylint: disable=g-import-not-at-top
  # Three bytes in UTF-8 and no decomposition (NFD splits Hangul syllables into jamo).
  hiragana = "\u3042"
  vocab_file = _write(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               hiragana, "##" + hiragana])
  python = tokenization.FullTokenizer(vocab_file=vocab_file)
  layer = preprocessing.AlbertTokenizer(vocab_file=vocab_file)
  texts = [hiragana * 201, hiragana * 200, "x" * 201]
  assert [python.encode(t) for t in texts] == [[1], [5] + [6] * 199, [1]]
  assert layer(tf.constant(texts)).to_list() == [python.encode(t) for t in texts]
