"""A small English corpus that ships with Python: the stdlib's pydoc topics.

Used by `make demo` and the tests to train vocabularies and pretrain tiny
models without any download. Written in the pretraining input format: one
sentence per line, a blank line between documents.
"""

import re
from typing import List

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


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
