"""The tokenizer files other libraries run alone give albert_tf's ids.

transformers' fast tokenizer reads an HF export's `tokenizer.json` (checked here with the
`tokenizers` library it runs on, which keras-hub brings; `make test-peers` checks
`AutoTokenizer` itself), and KerasHub's tokenizer runs a preset's SentencePiece model
alone. The texts: the tokenizer tests' tricky set, the rules' own cases and every paragraph
of Python's pydoc topics.
"""

import json
import re
import shutil

import numpy as np
import pytest

from albert_tf.text import huggingface, standalone, vocab
from albert_tf.text.packing import pack_inputs
from albert_tf.text.tokenization import FullTokenizer
from common import CORPUS, write_off_grid_vocabulary, write_wordpiece_vocab

tokenizers = pytest.importorskip("tokenizers")

# What each rule of FullTokenizer does, one case each (the examples among them).
RULES = ["well-known", "(re)bind", "v3.5", "It's ``quoted'' and ''twice''", "'''", "1,000,000",
         "x1, y22,z 7,a", "99,", "12, 34", "Ünïcödé ÀÉÎÕÜ", "ﬁne ＦＵＬＬ ①②", "£5 – €6",
         "tab\there  and\u3000there\u00a0", "  leading and trailing  ", "", " ",
         "中文字符 日本語 한국어", "a" * 300, "- . ( ) \" – £ €"]


def pydoc_paragraphs():
  from pydoc_data import topics  # pylint: disable=import-outside-toplevel
  return [p for name in sorted(topics.topics)
          for p in re.split(r"\n\s*\n", topics.topics[name]) if p.strip()]


def _ties(fast, albert, texts):
  """(texts whose ids differ, those of them with the same ids in another order)."""
  differ = [t for t in texts if fast(t) != albert(t)]
  return differ, [t for t in differ if sorted(fast(t)) == sorted(albert(t))]


def _fast_ids(albert, directory):
  huggingface.save_hf_tokenizer(albert, str(directory))
  fast = tokenizers.Tokenizer.from_file(str(directory / huggingface.TOKENIZER_JSON))
  return fast, lambda text: fast.encode(text, add_special_tokens=False).ids


def test_the_hf_export_s_tokenizer_json_gives_albert_tf_s_ids(spm_model, tmp_path):
  """SentencePiece, with a vocabulary of create_vocab.py (scores on its grid): every text
  of the tricky and rule sets and every pydoc paragraph. Pairs get `[CLS] A [SEP] B [SEP]`
  with B's type ids 1, as albert_tf packs them."""
  albert = FullTokenizer(spm_model_file=spm_model)
  fast, ids = _fast_ids(albert, tmp_path)
  for text in CORPUS + RULES + pydoc_paragraphs():
    assert ids(text) == albert.encode(text), (text[:80], fast.encode(text).tokens[:40],
                                              albert.tokenize(text)[:40])
  pair = fast.encode("well-known (re)bind", "v3.5 costs 1,000")
  packed = pack_inputs(albert.encode("well-known (re)bind"), albert.encode("v3.5 costs 1,000"),
                       len(pair.ids), albert.cls_id, albert.sep_id, albert.pad_id)
  assert pair.ids == list(packed["input_word_ids"])
  assert pair.type_ids == list(packed["input_type_ids"])
  # The one rule a character map cannot hold: a capital sigma ending a word.
  assert albert.tokenize("ΟΔΟΣ") != fast.encode("ΟΔΟΣ", add_special_tokens=False).tokens


def test_unrounded_scores_tie_apart_and_rounding_them_ties_alike(spm_model, tmp_path):
  """A vocabulary whose scores are any float32 (a released model's, here create_vocab.py's
  with each score moved by under 1e-3): SentencePiece sums them in float32 and
  `tokenizers` in float64, and on some pydoc paragraphs the two pick another order of the
  same pieces (a run of `=`), nothing else. `vocab.round_scores` on that very model puts
  them back on one grid, and the two agree on every paragraph again."""
  prefix = tmp_path / "unrounded"
  write_off_grid_vocabulary(spm_model, prefix)
  paragraphs = pydoc_paragraphs()
  albert = FullTokenizer(spm_model_file=str(prefix) + ".model")
  _, ids = _fast_ids(albert, tmp_path / "before")
  differ, ties = _ties(ids, albert.encode, paragraphs)
  assert differ and differ == ties, (len(differ), [t[:80] for t in differ if t not in ties][:5])
  vocab.round_scores(str(prefix))
  albert = FullTokenizer(spm_model_file=str(prefix) + ".model")
  _, ids = _fast_ids(albert, tmp_path / "after")
  assert [t[:80] for t in differ if ids(t) != albert.encode(t)] == []
  assert sum(ids(t) != albert.encode(t) for t in paragraphs[::7]) == 0


def test_a_wordpiece_export_s_tokenizer_json_gives_albert_tf_s_ids(tmp_path):
  """The Chinese releases' vocab_chinese.txt: BERT's normalization, pre-tokenization and
  WordPiece, the same ids on every text, lower-cased or not."""
  texts = CORPUS + RULES + ["2008年北京奥运会, Michael Phelps!", "ＡＢＣ１２３。「引用」"]
  vocab = tmp_path / "vocab.txt"
  write_wordpiece_vocab(vocab, texts)
  for lower in (True, False):
    albert = FullTokenizer(vocab_file=str(vocab), do_lower_case=lower)
    directory = tmp_path / str(lower)
    huggingface.save_hf_tokenizer(albert, str(directory))
    fast = tokenizers.Tokenizer.from_file(str(directory / huggingface.TOKENIZER_JSON))
    for text in texts:
      assert fast.encode(text, add_special_tokens=False).ids == albert.encode(text), text


def test_the_standalone_sentencepiece_model_gives_albert_tf_s_ids(spm_model):
  """What KerasHub presets carry: SentencePiece alone on raw text gives FullTokenizer's
  ids, ALBERT's normalization and digit-comma rule included, on every text here."""
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  albert = FullTokenizer(spm_model_file=spm_model)
  with open(spm_model, "rb") as f:
    alone = spm.SentencePieceProcessor(model_proto=standalone.standalone_sentencepiece_model(
        f.read()))
  for text in CORPUS + RULES + pydoc_paragraphs():
    assert alone.encode(text) == albert.encode(text), text[:80]
  # The plain model alone misses them (what a preset carried before).
  plain = spm.SentencePieceProcessor(model_file=spm_model)
  assert plain.encode("Well-Known 1,000") != albert.encode("Well-Known 1,000")


def test_reading_an_hf_directory_whose_tokenizer_json_disagrees_says_so(spm_model, tmp_path,
                                                                          capsys):
  """albert_tf reads spiece.model; a tokenizer.json that tokenizes otherwise (here, the one
  transformers' converter makes: Metaspace `always` after added user-defined symbols,
  no digit-comma rule) is named in one line. Its own export is read without a word."""
  albert = FullTokenizer(spm_model_file=spm_model)
  huggingface.save_hf_tokenizer(albert, str(tmp_path / "ours"))
  assert huggingface.read_hf_vocabulary(str(tmp_path / "ours")).spm_model_file
  assert "tokenizer.json" not in capsys.readouterr().out
  theirs = tmp_path / "theirs"
  shutil.copytree(tmp_path / "ours", theirs)
  data = json.loads((theirs / huggingface.TOKENIZER_JSON).read_text(encoding="utf-8"))
  symbols = [i for i, (piece, _) in enumerate(data["model"]["vocab"])
             if piece in ("(", ")", "-", ".", '"')]
  data["added_tokens"] += [dict(id=i, content=data["model"]["vocab"][i][0], single_word=False,
                                lstrip=False, rstrip=False, normalized=False, special=False)
                           for i in symbols]
  data["model"]["vocab"] = [[p, min(s, 0.0)] if s == standalone.NEVER else [p, s]
                            for p, s in data["model"]["vocab"]]
  (theirs / huggingface.TOKENIZER_JSON).write_text(json.dumps(data), encoding="utf-8")
  found = huggingface.read_hf_vocabulary(str(theirs))
  assert found.spm_model_file == str(theirs / huggingface.SPIECE)
  lines = [l for l in capsys.readouterr().out.splitlines() if "tokenizer.json" in l]
  assert len(lines) == 1 and "spiece.model" in lines[0], lines
  assert len(albert.encode(huggingface.PROBE)) > 10


def test_a_keras_hub_preset_tokenizes_raw_text_as_albert_tf(spm_model, tmp_path):
  """convert_checkpoint.py --output_format=keras_hub: the preset's own tokenizer and
  preprocessor, given raw text, give albert_tf's ids and packing (capitals, accents,
  quotes and digit commas included), and its classifier the run's probabilities."""
  import keras_hub  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertClassifier  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import convert  # pylint: disable=import-outside-toplevel
  from common import TINY, write_classifier_run  # pylint: disable=import-outside-toplevel
  cfg = dict(TINY, vocab_size=1500, max_position_embeddings=64)
  run = write_classifier_run(tmp_path / "run", AlbertClassifier(cfg, 2), cfg, 64,
                             task="classification", problem_type="single_label_classification",
                             labels=["neg", "pos"], text_columns=["text"],
                             spm_model_file=spm_model)
  convert.run(convert.ConvertOptions(model=str(run), output_format="keras_hub",
                                     output_dir=str(tmp_path / "preset")))
  albert = FullTokenizer(spm_model_file=spm_model)
  theirs = keras_hub.models.AlbertTokenizer.from_preset(str(tmp_path / "preset"))
  texts = [t for t in CORPUS + RULES if t.strip()] + pydoc_paragraphs()[:300]
  for text in texts:
    assert np.asarray(theirs(text)).tolist() == albert.encode(text), text[:80]
  preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor.from_preset(
      str(tmp_path / "preset"))
  a, b = "Well-Known (re)bind, ``v3.5''", "ÉLAN costs 1,000 €"
  # (A pair as x=: a tuple given by position is read as (x, y) by KerasHub's layers.)
  x = preprocessor(x=(np.array([a]), np.array([b])))
  packed = pack_inputs(albert.encode(a), albert.encode(b), 64, albert.cls_id, albert.sep_id,
                       albert.pad_id)
  assert np.asarray(x["token_ids"])[0].tolist() == list(packed["input_word_ids"])
  assert np.asarray(x["segment_ids"])[0].tolist() == list(packed["input_type_ids"])
  # The preset's classifier on raw text answers as the run (capitals and all).
  from albert_tf import Predictor  # pylint: disable=import-outside-toplevel
  task = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "preset"))
  raw = ["Well-Known (re)bind, ``v3.5''", "ÉLAN costs 1,000 €", "UPPER CASE Straße"]
  logits = np.asarray(task.predict(np.array(raw), verbose=0))
  theirs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  ours = [[a["probabilities"][k] for k in ("neg", "pos")]
          for a in Predictor.load(str(run), dtype="float32").predict(raw)]
  np.testing.assert_allclose(theirs, ours, atol=1e-5)
