"""How often other tokenizers give albert_tf's ids: docs/huggingface.md's table.

    python benchmarks/tokenizer_agreement.py [--spm_model_file=M] [--vocab_size=2000]
        [--unrounded_scores]

Without --spm_model_file, a vocabulary is trained as `make demo` trains its own
(create_vocab.py on the pydoc topics, --vocab_size pieces); with --unrounded_scores, its
scores are left as SentencePiece trains them, as in the released models (create_vocab.py
rounds them, `albert_tf.text.vocab.SCORE_STEP`). The texts: every paragraph of
Python's pydoc topics and the tokenizer tests' tricky set. Each row is the fraction of
texts whose ids equal `FullTokenizer`'s:

- SentencePiece alone on the plain model (what a KerasHub preset ran before it carried
  ALBERT's normalization), and on `standalone_sentencepiece_model` (what it carries now);
- the export's `tokenizer.json` read by the `tokenizers` library;
- with transformers installed (the `[bench]` extra): `AutoTokenizer` on an export with
  `spiece.model` only (transformers converts it itself) and on the export as written.
"""

import argparse
import json
import os
import re
import shutil
import tempfile


def _paragraphs():
  from pydoc_data import topics  # pylint: disable=g-import-not-at-top
  return [p for name in sorted(topics.topics)
          for p in re.split(r"\n\s*\n", topics.topics[name]) if p.strip()]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--spm_model_file")
  parser.add_argument("--vocab_size", type=int, default=2000)
  parser.add_argument("--unrounded_scores", action="store_true")
  args = parser.parse_args()
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  import tokenizers  # pylint: disable=g-import-not-at-top
  from benchmarking import pydoc_vocabulary  # pylint: disable=g-import-not-at-top
  from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top
  from albert_tf.text import huggingface, standalone, vocab  # pylint: disable=g-import-not-at-top
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  work = tempfile.mkdtemp()
  model = pydoc_vocabulary(args.vocab_size, args.spm_model_file,
                           None if args.unrounded_scores else vocab.SCORE_STEP)
  albert = FullTokenizer(spm_model_file=model)
  sets = {"pydoc paragraphs": _paragraphs(), "tricky set": list(sample_corpus.TRICKY_TEXTS)}
  want = {name: [albert.encode(t) for t in texts] for name, texts in sets.items()}
  export = os.path.join(work, "hf")
  huggingface.save_hf_tokenizer(albert, export)
  with open(model, "rb") as f:
    standalone_model = standalone.standalone_sentencepiece_model(f.read())
  fast = tokenizers.Tokenizer.from_file(os.path.join(export, huggingface.TOKENIZER_JSON))
  doors = {
      "SentencePiece alone, plain model (KerasHub presets before)":
          spm.SentencePieceProcessor(model_file=model).encode,
      "SentencePiece alone, standalone model (KerasHub presets)":
          spm.SentencePieceProcessor(model_proto=standalone_model).encode,
      "tokenizer.json (tokenizers)": lambda t: fast.encode(t, add_special_tokens=False).ids,
  }
  try:
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    transformers = None
  if transformers is not None:
    only_spiece = os.path.join(work, "hf_spiece_only")
    shutil.copytree(export, only_spiece)
    os.remove(os.path.join(only_spiece, huggingface.TOKENIZER_JSON))
    config_file = os.path.join(only_spiece, huggingface.TOKENIZER_CONFIG)
    with open(config_file, encoding="utf-8") as f:
      config = json.load(f)
    with open(config_file, "w", encoding="utf-8") as f:   # as exports before wrote it
      json.dump(dict(config, tokenizer_class="AlbertTokenizer"), f)
    for name, directory in (("AutoTokenizer, spiece.model only (exports before)", only_spiece),
                            ("AutoTokenizer, the export", export)):
      tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
      doors[f"{name}: {type(tokenizer).__name__}, transformers {transformers.__version__}"] = (
          lambda t, tk=tokenizer: tk(t, add_special_tokens=False)["input_ids"])
  print(f"vocabulary: {model} ({albert.vocab_size} pieces)")
  print("| tokenizer | " + " | ".join(f"{n} ({len(t)})" for n, t in sets.items()) + " |")
  print("|---|" + "---|" * len(sets))
  for name, encode in doors.items():
    cells = []
    for set_name, texts in sets.items():
      same = sum(encode(t) == w for t, w in zip(texts, want[set_name]))
      cells.append(f"{same / len(texts):.4f}")
    print(f"| {name} | " + " | ".join(cells) + " |")
  shutil.rmtree(work)


if __name__ == "__main__":
  main()
