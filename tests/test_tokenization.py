import json
import os
import re
import unicodedata

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
import tf_keras as keras

from albert_tf.text import packing, preprocessing, tokenization, vocab
from common import BYTES, CORPUS, fuzz_texts, run_script


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return tokenization.FullTokenizer(spm_model_file=spm_model, do_lower_case=True)


def test_preprocess_text():
  assert tokenization.preprocess_text("  a \t b\n\nc  ") == "a b c"
  assert tokenization.preprocess_text("``hi''") == '"hi"'
  assert tokenization.preprocess_text("Café naïve", lower=True) == "cafe naive"
  assert tokenization.preprocess_text("Café", keep_accents=True) == "Café"
  assert tokenization.preprocess_text("ＡＢ１") == "AB1"  # NFKD folds full width
  assert tokenization.preprocess_text(b"ok \xff\xc3\xa9") == "ok e"


def test_special_ids_and_round_trip(tokenizer):
  assert tokenizer.special_ids == {"[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "<pad>": 0, "<unk>": 1}
  assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.pad_id) == (2, 3, 4, 0)
  tokens = tokenizer.tokenize("The assert statement raises AssertionError.")
  assert tokenizer.convert_ids_to_tokens(tokenizer.convert_tokens_to_ids(tokens)) == tokens
  assert "".join(tokens).replace(tokenization.SPIECE_UNDERLINE, " ").strip() == \
      "the assert statement raises assertionerror."


def test_digit_comma_rule(tokenizer):
  for text in ("1,000,000", "pay 12, 34 or 3,5", "99,"):
    tokens = tokenizer.tokenize(text)
    assert not any(len(t) > 1 and t.endswith(",") and t[-2].isdigit() for t in tokens), tokens
    assert "".join(tokens).replace(tokenization.SPIECE_UNDERLINE, " ").strip() == text
  # Without the rule SentencePiece does produce digit-comma pieces, so the rule is exercised.
  raw = tokenizer.sp_model.EncodeAsPieces("1,000,000 12, 34 99,")
  assert any(len(t) > 1 and t.endswith(",") and t[-2].isdigit() for t in raw)


def test_tokenize_lines_equals_tokenize_line_by_line(tokenizer):
  """The batched path of create_pretraining_data: SentencePiece on all lines in one call,
  the digit-comma rule where a line has a comma or characters NFKD may turn into one."""
  from albert_tf.data import sample_corpus  # pylint: disable=import-outside-toplevel
  lines = [s for d in sample_corpus.pydoc_documents() for s in d][:3000]
  lines += ["In 1990, 2,000 men came.", "caf\u00e9 1\uff0c000 and x\ufe502,5,", "``quoted'' 7,",
            "\u00c0 la carte, 12,345", "  ", "\x07", "ARG1, ARG2,", "1,", ","]
  assert tokenizer.tokenize_lines(lines) == [tokenizer.tokenize(t) for t in lines]
  assert any("," in p and len(p) > 1 for t in lines for p in tokenizer.sp_model.EncodeAsPieces(
      tokenization.preprocess_text(t, lower=True)))   # the rule had work to do


def test_bytes_and_invalid_utf8(tokenizer):
  for b in BYTES:
    assert tokenizer.tokenize(b) == tokenizer.tokenize(b.decode("utf-8", "ignore"))


def test_sampling(tokenizer):
  text = "interpreters evaluate expressions"
  samples = {tuple(tokenizer.tokenize(text, sample=True)) for _ in range(30)}
  assert len(samples) > 1
  for s in samples:
    assert "".join(s).replace(tokenization.SPIECE_UNDERLINE, " ").strip() == text


def test_bad_models(tmp_path, spm_model):
  with pytest.raises(FileNotFoundError, match="nowhere.model"):
    tokenization.FullTokenizer(spm_model_file=str(tmp_path / "nowhere.model"))
  with pytest.raises(ValueError, match="spm_model_file.*vocab_file"):
    tokenization.FullTokenizer()
  with pytest.raises(FileNotFoundError, match="nowhere.txt"):   # WordPiece, a missing file
    tokenization.FullTokenizer(vocab_file=str(tmp_path / "nowhere.txt"))
  not_a_model = tmp_path / "junk.model"
  not_a_model.write_bytes(b"not a protobuf at all")
  with pytest.raises(ValueError, match="junk.model"):
    tokenization.FullTokenizer(spm_model_file=str(not_a_model))
  corpus = tmp_path / "c.txt"
  corpus.write_text("some text for a plain model\n" * 50 + "with more words here\n" * 50)
  spm.SentencePieceTrainer.Train(input=str(corpus), model_prefix=str(tmp_path / "plain"),
                                 vocab_size=20, minloglevel=2)
  # Tokenizing needs no special piece; using one the model lacks names them all.
  plain = tokenization.FullTokenizer(spm_model_file=str(tmp_path / "plain.model"))
  assert plain.tokenize("some text") and plain.unk_id == 0
  with pytest.raises(ValueError, match=r"lacks ALBERT's special pieces \['\[CLS\]', '\[SEP\]', "
                                       r"'\[MASK\]', '<pad>'\], and \[MASK\] is needed"):
    plain.mask_id  # pylint: disable=pointless-statement


def test_pack_inputs_single_and_pair():
  single = packing.pack_inputs([5, 6, 7], None, 8, cls_id=2, sep_id=3)
  assert single == dict(input_word_ids=[2, 5, 6, 7, 3, 0, 0, 0],
                        input_mask=[1, 1, 1, 1, 1, 0, 0, 0],
                        input_type_ids=[0, 0, 0, 0, 0, 0, 0, 0])
  pair = packing.pack_inputs([5, 6], [7], 7, cls_id=2, sep_id=3)
  assert pair == dict(input_word_ids=[2, 5, 6, 3, 7, 3, 0], input_mask=[1] * 6 + [0],
                      input_type_ids=[0, 0, 0, 0, 1, 1, 0])
  # Truncation drops from the end of the longer segment, the second on ties.
  long = packing.pack_inputs(list(range(10, 20)), [30, 31], 9, cls_id=2, sep_id=3)
  assert long["input_word_ids"] == [2, 10, 11, 12, 13, 3, 30, 31, 3]
  tie = packing.pack_inputs([10, 11, 12], [20, 21, 22], 8, cls_id=2, sep_id=3)
  assert tie["input_word_ids"] == [2, 10, 11, 12, 3, 20, 21, 3]
  assert packing.pack_inputs(list(range(10, 30)), None, 5, 2, 3)["input_word_ids"] == [2, 10, 11, 12, 3]
  with pytest.raises(ValueError, match="max_seq_length"):
    packing.pack_inputs([1], [2], 2, 2, 3)


def test_unicode_tables_are_python_s_rules_at_every_code_point():
  """The in-graph rules' tables ask Python's functions about assigned code points only:
  unassigned and private-use ones (87%) must have none of the properties; the others
  must be in each class exactly when Python's own predicate says so."""
  tables = preprocessing._unicode_tables()
  cps = preprocessing._every_code_point()
  sigma = lambda prefix: (prefix + "\u03a3").lower()[-1] == "\u03c2"
  rules = {"space": str.isspace, "digit": str.isdigit,
           "combining": lambda c: unicodedata.combining(c) != 0,
           "sigma_cased": sigma, "sigma_ignorable": lambda c: not sigma(c) and sigma("A" + c),
           "lower": lambda c: len(c.lower()) == 1 and c.lower() != c,
           **preprocessing._PREDICATES}
  others = [chr(cp) for cp in cps[~tables["assigned"]].tolist()]
  assert len(others) > 900_000 and {unicodedata.category(c) for c in others} == {"Cn", "Co"}
  for kind, rule in rules.items():   # every one of them (the WordPiece rules: every 7th)
    held = [c for c in (others if kind in ("space", "digit", "combining", "sigma_cased",
                                           "sigma_ignorable", "lower") else others[::7])
            if rule(c)]
    assert not held, (kind, [hex(ord(c)) for c in held[:5]])
  assigned = [chr(cp) for cp in cps[tables["assigned"]].tolist()]
  classes = {kind: tables[kind] for kind in ("space", "digit", "combining", "sigma_cased",
                                             "sigma_ignorable")}
  classes["lower"] = tables["lower"] != 0
  for kind in preprocessing._PREDICATES:   # the classes as RE2 ranges, read back
    members = np.zeros(len(cps), bool)
    for a, b in re.findall(r"\\x\{(\w+)\}(?:-\\x\{(\w+)\})?", preprocessing._char_class(kind)):
      members[np.searchsorted(cps, int(a, 16)):np.searchsorted(cps, int(b or a, 16)) + 1] = True
    classes[kind] = members
  for kind, members in classes.items():
    got = members[tables["assigned"]].tolist()
    wrong = [c for c, m in zip(assigned, got) if m != rules[kind](c)]
    assert not wrong, (kind, [hex(ord(c)) for c in wrong[:5]])
  lowered = {ord(c): ord(c.lower()) for c in assigned if rules["lower"](c)}
  assert dict(zip(cps[classes["lower"]].tolist(),
                  tables["lower"][classes["lower"]].tolist())) == lowered
  assert tables["sigma_other"].tolist() == (~(tables["sigma_cased"] |
                                              tables["sigma_ignorable"])).tolist()


def test_in_graph_ids_identical(tokenizer, spm_model):
  layer = preprocessing.AlbertTokenizer(spm_model)
  texts = CORPUS + BYTES
  got = layer(tf.constant(texts)).to_list()
  for text, ids in zip(texts, got):
    assert ids == tokenizer.encode(text), text
  assert layer.special_ids == tokenizer.special_ids and layer.vocab_size == tokenizer.vocab_size


def test_in_graph_ids_identical_on_fuzz(tokenizer, spm_model):
  """2,000 random strings: the SavedModel's tokenizer (UTF-8 bytes in) gives Python's ids.

  Caught: tf.strings.lower stopping at a NUL, lone surrogates crashing Python, and
  sentencepiece >= 0.2.2 breaking score ties unlike the copy in tensorflow-text."""
  texts = fuzz_texts(2000) + [json.loads('"lone \\ud800 and paired \\ud83d\\ude00"')]
  layer = preprocessing.AlbertTokenizer(spm_model)
  got = layer(tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])).to_list()
  wrong = [t for t, ids in zip(texts, got) if ids != tokenizer.encode(t)]
  assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:3]!r}"
  for text in texts[:400]:
    pieces, starts, ends = tokenizer.tokenize_with_offsets(text)
    assert pieces == tokenizer.tokenize(text), repr(text)
    assert all(0 <= b <= e <= len(text) for b, e in zip(starts, ends))


@pytest.mark.parametrize("seq_length", [3, 8, 16, 64])
def test_in_graph_packing_identical(tokenizer, spm_model, seq_length):
  layer = preprocessing.AlbertTokenizer(spm_model)
  packer = preprocessing.AlbertPacker(seq_length, tokenizer.cls_id, tokenizer.sep_id,
                                      tokenizer.pad_id)
  firsts, seconds = CORPUS, CORPUS[::-1]
  single = packer([layer(tf.constant(firsts))])
  pair = packer([layer(tf.constant(firsts)), layer(tf.constant(seconds))])
  for i, (a, b) in enumerate(zip(firsts, seconds)):
    want = packing.pack_inputs(tokenizer.encode(a), None, seq_length, 2, 3, 0)
    assert {k: v[i].numpy().tolist() for k, v in single.items()} == want
    want = packing.pack_inputs(tokenizer.encode(a), tokenizer.encode(b), seq_length, 2, 3, 0)
    assert {k: v[i].numpy().tolist() for k, v in pair.items()} == want
  assert all(v.dtype == tf.int32 and v.shape == (len(CORPUS), seq_length) for v in pair.values())


def test_in_graph_inside_tf_data(tokenizer, spm_model):
  layer = preprocessing.AlbertTokenizer(spm_model)
  packer = preprocessing.AlbertPacker(32, 2, 3, 0)
  pairs = tf.data.Dataset.from_tensor_slices((CORPUS, CORPUS[::-1])).batch(4).map(
      lambda a, b: packer([layer(a), layer(b)]), num_parallel_calls=tf.data.AUTOTUNE)
  rows = [r for batch in pairs for r in batch["input_word_ids"].numpy().tolist()]
  assert rows == [packing.pack_inputs(tokenizer.encode(a), tokenizer.encode(b), 32, 2, 3)
                  ["input_word_ids"] for a, b in zip(CORPUS, CORPUS[::-1])]


def test_layer_configs(spm_model):
  for layer in (preprocessing.AlbertTokenizer(spm_model, do_lower_case=False),
                preprocessing.AlbertPacker(16, 2, 3, 0)):
    again = keras.layers.deserialize(keras.layers.serialize(layer))
    assert again.get_config() == layer.get_config()


def test_train_vocab_errors(tmp_path, spm_model):
  with pytest.raises(FileNotFoundError, match="missing"):
    vocab.train_vocab(str(tmp_path / "missing*.txt"), str(tmp_path / "v"))
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n  \n")
  with pytest.raises(ValueError, match="no text"):
    vocab.train_vocab(str(empty), str(tmp_path / "v"))
  prefix = spm_model[:-len(".model")]
  before = open(spm_model, "rb").read()
  with pytest.raises(FileExistsError, match="exists"):
    vocab.train_vocab(str(empty), prefix)
  assert open(spm_model, "rb").read() == before


def test_create_vocab_command(tmp_path):
  corpus = tmp_path / "text.txt"
  from albert_tf.data import sample_corpus
  sample_corpus.write_pydoc_corpus(str(corpus))
  run = run_script("create_vocab.py", f"--input_file={corpus}", f"--model_prefix={tmp_path / 'v'}",
                   "--vocab_size=500", "--input_sentence_size=2000")
  assert run.returncode == 0, run.stderr[-2000:]
  tok = tokenization.FullTokenizer(spm_model_file=str(tmp_path / "v.model"))
  assert tok.vocab_size == 500 and os.path.exists(tmp_path / "v.vocab")
  pieces = [line.split("\t")[0] for line in open(tmp_path / "v.vocab", encoding="utf-8")]
  assert pieces[:5] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
  assert set(vocab.USER_DEFINED_SYMBOLS) <= set(pieces)
  again = run_script("create_vocab.py", f"--input_file={tmp_path / 'nothing.txt'}",
                     f"--model_prefix={tmp_path / 'w'}")
  assert again.returncode != 0 and "nothing.txt" in again.stderr
