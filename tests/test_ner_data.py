"""Token classification data: the CoNLL reader, tag schemes, entities, windows."""

import random

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from albert_tf.data import ner
from albert_tf.text.tokenization import FullTokenizer
from common import assert_close

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_conll_2003_and_two_column_files_read_as_sentences(tmp_path):
  sentences = ner.read_sentences(write(tmp_path, "train.txt", CONLL))
  assert [s.words for s in sentences] == [["EU", "rejects", "German", "call", "."],
                                          ["Peter", "Blackburn"], ["BRUSSELS"]]
  assert [s.tags for s in sentences] == [["B-ORG", "O", "B-MISC", "O", "O"],
                                         ["B-PER", "I-PER"], ["B-LOC"]]
  assert sentences[1].lines == [9, 10] and sentences[2].lines == [14]
  chinese = ner.read_sentences(write(tmp_path, "msra.txt", "中 B-LOC\n国 I-LOC\n人 O\n\n\n好 O\r\n"))
  assert [("".join(s.words), s.tags) for s in chinese] == [("中国人", ["B-LOC", "I-LOC", "O"]),
                                                           ("好", ["O"])]


@pytest.mark.parametrize("text, message", [
    ("EU B-ORG\nrejects\n", r"bad.txt:2: 'rejects' has no tag"),
    ("", r"bad.txt: no sentence in it \(no token lines\)"),
    ("\n  \n", r"bad.txt: no sentence in it \(no token lines\)"),
    ("-DOCSTART- -X- -X- O\n\n-DOCSTART- -X- O\n", r"bad.txt: no sentence in it \(only -DOCSTART-"),
])
def test_bad_files_are_one_line_naming_file_and_line(tmp_path, text, message):
  with pytest.raises(ValueError, match=message):
    ner.read_sentences(write(tmp_path, "bad.txt", text))


def test_tags_outside_the_schemes_and_unknown_tags_name_the_line(tmp_path):
  path = write(tmp_path, "dev.txt", "a O\nb B-PER\n\nc PER\n")
  sentences = ner.read_sentences(path)
  with pytest.raises(ValueError, match=r"dev.txt:4: tag 'PER' is neither O nor B-, I-, E- or S-"):
    ner.check_tags(sentences, path)
  labels = ner.label_list(ner.read_sentences(write(tmp_path, "train.txt", CONLL)))
  assert labels == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]
  with pytest.raises(ValueError, match=r"dev.txt:4: tag 'PER' is not in the training set's tags"):
    ner.check_tags(sentences, path, labels)


# The same entities -- PER over words 0-1, LOC at 3, LOC at 4, ORG over 6-8 -- in each scheme.
SPANS = [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 6, 8)]
WRITTEN = {
    "IOB2": "B-PER I-PER O B-LOC B-LOC O B-ORG I-ORG I-ORG O",
    "IOB1": "I-PER I-PER O I-LOC B-LOC O I-ORG I-ORG I-ORG O",
    "BIOES": "B-PER E-PER O S-LOC S-LOC O B-ORG I-ORG E-ORG O",
}


@pytest.mark.parametrize("scheme", ner.SCHEMES)
def test_each_scheme_is_detected_and_gives_the_same_entities(scheme):
  tags = WRITTEN[scheme].split()
  sentence = ner.Sentence(list("abcdefghij"), tags, list(range(1, 11)))
  assert ner.detect_scheme([sentence]) == scheme
  assert ner.entities(tags, scheme) == SPANS


def test_entities_equal_seqeval_s_on_random_tag_sequences():
  """seqeval's get_entities (conlleval's chunk rules) as the independent reference: IOB
  tags in the IOB2 reading, and with E- and S- in the BIOES reading."""
  rng = random.Random(0)
  for with_es in (False, True):
    prefixes = ["B", "I", "E", "S"] if with_es else ["B", "I"]
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in ("PER", "LOC")]
    for _ in range(500):
      sequence = [rng.choice(tags) for _ in range(rng.randint(1, 12))]
      want = [(kind, start, end) for kind, start, end in get_entities(sequence)]
      assert ner.entities(sequence, "BIOES" if with_es else "IOB2") == want, sequence


def test_windows_predict_every_word_once_on_its_first_piece(spm_model):
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  words = ("Guido van Rossum created Python while working at Centrum Wiskunde Informatica "
           "in Amsterdam , long before multiprocessing existed").split()
  pieces = ner.word_pieces(tokenizer, words)
  assert sum(map(len, pieces)) > 20 and max(map(len, pieces)) > 1   # some words split
  tags = ["B-PER", "I-PER", "I-PER", "O", "B-MISC", "O", "O", "O", "B-ORG", "I-ORG", "I-ORG",
          "O", "B-LOC", "O", "O", "O", "O", "O"]
  labels = ["O", "B-LOC", "B-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
  sentence = ner.Sentence(words, tags, list(range(1, len(words) + 1)))
  for max_seq_length, stride in ((128, 8), (12, 4), (10, 3)):
    made = ner.convert([sentence], labels, tokenizer, max_seq_length, stride)
    assert (len(made) == 1) == (max_seq_length == 128)
    predicted = [w for window in made for w in window.word_index if w >= 0]
    assert sorted(predicted) == list(range(len(words)))               # each word once
    for window in made:
      assert len(window.input_ids) == len(window.label_ids) == max_seq_length
      assert window.input_ids[0] == tokenizer.cls_id
      for position, w in enumerate(window.word_index):
        if w >= 0:   # its first piece, labelled with its tag
          assert window.input_ids[position] == pieces[w][0]
          assert labels[window.label_ids[position]] == tags[w]
        else:
          assert window.label_ids[position] == ner.IGNORED
    gold = [[tag_id for tag_id in window.label_ids] for window in made]
    gold = [[max(i, 0) for i in row] for row in gold]
    assert ner.merge_predictions([sentence], made, gold, labels) == [tags]


def test_the_token_classifier_is_the_head_on_every_position():
  """Logits [B, S, C] equal the encoder's sequence output times the head's weights, in
  NumPy; dropout only in training; the config round-trips; the checkpoint holds the
  encoder and the head."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertTokenClassifier  # pylint: disable=import-outside-toplevel
  from common import TINY, encoder_inputs, random_inputs  # pylint: disable=import-outside-toplevel
  model = AlbertTokenClassifier(TINY, num_labels=5, dropout_rate=0.5, seed=1)
  x = encoder_inputs(random_inputs(TINY, batch=3, seq=11))
  logits = model(x).numpy()
  sequence = model.encoder(x)["sequence_output"].numpy()                       # [3, 11, 32]
  head = model.classifier
  want = sequence @ head.output_weights.numpy().T + head.output_bias.numpy()
  assert logits.shape == (3, 11, 5) and logits.dtype == np.float32
  assert_close(logits, want, 1e-5)
  assert np.abs(model(x, training=True).numpy() - logits).max() > 1e-3
  again = AlbertTokenClassifier.from_config(model.get_config())
  assert again.get_config() == model.get_config() and again.num_labels == 5
  assert sorted(model.checkpoint_items) == ["classifier", "encoder"]
