"""A small English corpus that ships with Python: the stdlib's pydoc topics.

Used by `make demo` and the tests to train vocabularies and pretrain tiny
models without any download; `TRICKY_TEXTS` are what the tokenizer tests and benchmarks
compare tokenizers on. Written in the pretraining input format: one
sentence per line, a blank line between documents.
"""

import os
import re
from typing import List

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")

# Texts that every tokenizer of albert_tf must treat as the original's: accents and
# combining marks, full-width characters, whitespace runs, `` and '' quotes, numbers with
# commas, CJK and emoji, upper case, empty strings, and text longer than any seq_length.
TRICKY_TEXTS = (
    "Café déjà vu, naïve façade; Ångström and Øre.",
    "e\u0301 combining acute, c\u0327 cedilla, a\u0308\u0304 stacked",
    "ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ ａｎｄ １２３，４５６",
    "tabs\tand\nnewlines\r\n  and    runs   of spaces  ",
    "\u00a0no-break\u3000ideographic\u2028line sep\u2003em space ",
    "``double backticks'' and 'single' quotes ''here''",
    "Numbers: 1,000,000 and 3,5 and 12, 34 and 1, 2, 3 and 99,",
    "x1, y22,z 7,a (1,2) [3,4,5] 1,000.50",
    "中文字符和日本語のテキスト、한국어 텍스트",
    "emoji 😀🎉👍🏽 and symbols ™ © ½ ² ①",
    "UPPER CASE SHOUTING AND MiXeD CaSe İstanbul ΣΟΦΙΑ straße",
    "",
    "   ",
    "def f(x):\n    return x ** 2  # a Python line, with `code`",
    " ".join(["The quick brown fox jumps over the lazy dog, 1,234 times."] * 30),
)


def pydoc_documents() -> List[List[str]]:
  """Documents (lists of sentences) from `pydoc_data.topics`, in a fixed order."""
  from pydoc_data import topics
  documents = []
  for name in sorted(topics.topics):
    sentences = []
    for paragraph in re.split(r"\n\s*\n", topics.topics[name]):
      text = " ".join(paragraph.split())
      if text:
        sentences.extend(s for s in _SENTENCE_END.split(text) if s.strip())
    if sentences:
      documents.append(sentences)
  return documents


def write_pydoc_corpus(path: str) -> str:
  """Writes the pydoc topics to `path` (sentence per line, blank line between documents)."""
  with open(path, "w", encoding="utf-8") as f:
    for sentences in pydoc_documents():
      f.write("\n".join(sentences) + "\n\n")
  return path


_MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
_MRPC_TEST_HEADER = "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _reword(words: List[str], rng) -> List[str]:
  """A loose paraphrase: drops a word or two and swaps a pair of neighbours."""
  words = list(words)
  for _ in range(rng.integers(1, 3)):
    if len(words) > 4:
      del words[rng.integers(len(words))]
  i = int(rng.integers(len(words) - 1))
  words[i], words[i + 1] = words[i + 1], words[i]
  return words


def write_paraphrase_task(directory: str, num_train: int = 3000, num_dev: int = 400,
                          num_test: int = 400, positive_rate: float = 0.68,
                          max_words: int = 20, seed: int = 0) -> str:
  """An MRPC-format paraphrase task generated from the pydoc topics.

  Writes `train.tsv`, `dev.tsv` (Quality, #1 ID, #2 ID, #1 String, #2 String)
  and `test.tsv` (index instead of Quality), exactly as the GLUE download's
  MRPC files. A positive pair is a sentence and a loose rewording of it (a
  word or two dropped, two neighbours swapped); a negative pairs the sentence
  with the rewording of another sentence of about the same length, from the
  same document a third of the time. About `positive_rate` of the pairs are
  positive (MRPC has 68%). Sentences have 6 to `max_words` words. Train,
  dev and test draw from disjoint documents.

  Returns:
    `directory`.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  documents = [[s.split() for s in doc if 6 <= len(s.split()) <= max_words]
               for doc in pydoc_documents()]
  documents = [d for d in documents if len(d) >= 2]
  order = rng.permutation(len(documents))
  groups = {"train": [], "dev": [], "test": []}
  for rank, i in enumerate(order):   # 80/10/10 of the documents
    groups["train" if rank % 10 < 8 else ("dev" if rank % 10 == 8 else "test")].append(documents[i])
  os.makedirs(directory, exist_ok=True)
  next_id = [100000]

  def pair(docs):
    d = int(rng.integers(len(docs)))
    first = docs[d][int(rng.integers(len(docs[d])))]
    if rng.random() < positive_rate:
      return "1", first, _reword(first, rng)
    source = docs[d] if rng.random() < 1 / 3 else docs[int(rng.integers(len(docs)))]
    others = [s for s in source if s is not first] or [s for s in docs[0] if s is not first]
    lengths = np.abs(np.array([len(s) for s in others]) - len(first))
    close = [s for s, gap in zip(others, lengths) if gap <= max(3, lengths.min())]
    return "0", first, _reword(close[int(rng.integers(len(close)))], rng)

  for split, count in (("train", num_train), ("dev", num_dev), ("test", num_test)):
    with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as f:
      f.write(_MRPC_TEST_HEADER if split == "test" else _MRPC_HEADER)
      for index in range(count):
        label, a, b = pair(groups[split])
        ids = next_id[0], next_id[0] + 1
        next_id[0] += 2
        first_field = str(index) if split == "test" else label
        f.write(f"{first_field}\t{ids[0]}\t{ids[1]}\t{' '.join(a)}\t{' '.join(b)}\n")
  return directory


# Each attribute's values have a shape of their own (digits, thousands separators,
# a currency sign, a colon), so a tiny model trained from random weights can learn
# which span answers which question.
_ATTRIBUTES = {
    "year": lambda rng: f"{rng.integers(1000, 2100)}",
    "count": lambda rng: f"{int(rng.integers(1000, 1000000)):,}",
    "price": lambda rng: f"${rng.integers(1, 1000)}.{rng.integers(0, 100):02d}",
    "time": lambda rng: f"{rng.integers(1, 13)}:{rng.integers(0, 60):02d}",
}


def write_squad_task(path: str, num_questions: int = 600, version_2_with_negative: bool = False,
                     unanswerable_rate: float = 0.33, filler_sentences: int = 3,
                     seed: int = 0) -> str:
  """A SQuAD-format reading task generated from the pydoc topics, in the exact
  layout of train-v1.1.json / dev-v2.0.json.

  Each paragraph is pydoc sentences with two facts ("Its year is 1987.",
  "Its count is 12,345.", "Its price is $3.50.", "Its time is 7:05.") put
  among them; each of its questions asks one attribute ("What is the year?")
  and the answer is the value as written in the context, with its
  `answer_start`. With `version_2_with_negative`, about `unanswerable_rate`
  of the questions ask an attribute the paragraph does not state
  (`is_impossible`, no answers). Every question carries three answers, as the
  dev sets do: the value twice and "<attribute> is <value>".

  Returns:
    `path`.
  """
  import json  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  # Filler sentences never say "is", so the facts are the only "... is <value>".
  sentences = [" ".join(s.split()) for doc in pydoc_documents() for s in doc
               if 5 <= len(s.split()) <= 16 and not {"is", "its", "Its"} & set(s.split())]
  paragraphs, asked = [], 0
  while asked < num_questions:
    facts = [str(a) for a in rng.choice(sorted(_ATTRIBUTES), 2, replace=False)]
    values = {a: _ATTRIBUTES[a](rng) for a in facts}
    parts = [sentences[int(i)] for i in rng.integers(len(sentences), size=filler_sentences)]
    for attribute in facts:
      parts.insert(int(rng.integers(len(parts) + 1)), f"Its {attribute} is {values[attribute]}.")
    context = " ".join(parts)
    qas = []
    for attribute in facts + [None]:
      impossible = attribute is None
      if impossible and not (version_2_with_negative and rng.random() < 2 * unanswerable_rate):
        continue
      if impossible:
        attribute = str(rng.choice([a for a in _ATTRIBUTES if a not in facts]))
      qa = {"question": f"What is the {attribute}?", "id": f"q{asked:06d}"}
      if impossible:
        qa.update(answers=[], is_impossible=True)
      else:
        value = values[attribute]
        fact = f"Its {attribute} is {value}."
        start = context.index(fact) + len(f"Its {attribute} is ")
        span = f"{attribute} is {value}"
        qa["answers"] = [{"text": value, "answer_start": start},
                         {"text": value, "answer_start": start},
                         {"text": span, "answer_start": start - len(f"{attribute} is ")}]
        if version_2_with_negative:
          qa["is_impossible"] = False
      qas.append(qa)
      asked += 1
    paragraphs.append({"context": context, "qas": qas})
  version = "v2.0" if version_2_with_negative else "1.1"
  data = [{"title": f"pydoc_{i // 5}", "paragraphs": paragraphs[i:i + 5]}
          for i in range(0, len(paragraphs), 5)]
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"version": version, "data": data}, f)
  return path


def write_race_task(data_dir: str, sizes=(("train", 300), ("dev", 60), ("test", 40)),
                    questions_per_article: int = 2, filler_sentences: int = 3,
                    seed: int = 0) -> str:
  """A RACE-format task generated from the pydoc topics: `data_dir/RACE/{split}/{middle,
  high}/<n>.txt`, each one JSON object (article, questions, options, answers, id) as the
  RACE download has them; articles alternate between the two levels.

  An article is pydoc sentences with one fact of one of four shapes ("Its year
  is 1987.", "Its count is 12,345.", "Its price is $3.50.", "Its time is
  7:05."). Each question asks it ("What is the year?", or with a blank: "Its
  year is _ .") and has one option of each shape, shuffled, the right one
  being the article's value (chance: 25%). The attribute's name and the
  options' shapes decide the answer, which a tiny model trained from random
  weights can learn quickly; a version where only the article tells which
  shape is right did not get off the 25% plateau in 600 steps at that size.

  Args:
    sizes: (split, number of articles) pairs.

  Returns:
    `data_dir`.
  """
  import json  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  sentences = [" ".join(s.split()) for doc in pydoc_documents() for s in doc
               if 5 <= len(s.split()) <= 16 and not {"is", "its", "Its"} & set(s.split())]
  names = sorted(_ATTRIBUTES)
  for split, count in sizes:
    for n in range(count):
      level = ("middle", "high")[n % 2]
      attribute = names[int(rng.integers(len(names)))]
      value = _ATTRIBUTES[attribute](rng)
      parts = [sentences[int(i)] for i in rng.integers(len(sentences), size=filler_sentences)]
      parts.insert(int(rng.integers(len(parts) + 1)), f"Its {attribute} is {value}.")
      record = {"answers": [], "options": [], "questions": [], "article": " ".join(parts),
                "id": f"{level}{n}.txt"}
      for _ in range(questions_per_article):
        options = [value if a == attribute else _ATTRIBUTES[a](rng) for a in names]
        order = rng.permutation(4)
        record["options"].append([options[i] for i in order])
        record["answers"].append("ABCD"[int(np.argmax(order == names.index(attribute)))])
        record["questions"].append(f"Its {attribute} is _ ." if rng.random() < 0.5
                                   else f"What is the {attribute}?")
      directory = os.path.join(data_dir, "RACE", split, level)
      os.makedirs(directory, exist_ok=True)
      with open(os.path.join(directory, f"{n}.txt"), "w", encoding="utf-8") as f:
        json.dump(record, f)
  return data_dir
