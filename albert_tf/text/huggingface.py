"""The tokenizer of a Hugging Face ALBERT directory, read and written.

transformers' ALBERT repositories carry `spiece.model` (AlbertTokenizer: the
same SentencePiece model and normalization as the original's `30k-clean.model`)
or, in the Chinese conversions, `vocab.txt` (BertTokenizer: BERT's WordPiece,
as the original's `vocab_chinese.txt`), with `tokenizer_config.json` and
`special_tokens_map.json` for lower-casing and the special tokens. Settings
FullTokenizer cannot reproduce are refused by name rather than ignored.

A directory written here also carries `tokenizer.json`, the fast tokenizer transformers'
`AutoTokenizer` loads, built to tokenize as albert_tf does (`albert_tf.text.standalone`).
Reading a directory whose `tokenizer.json` gives other ids than its vocabulary file on a
probe text says so in one line; albert_tf reads the vocabulary file.
"""

import dataclasses
import json
import os
import shutil
from typing import Dict, List, Optional

from albert_tf.files import atomic_path, read_json_object
from albert_tf.text import standalone
from albert_tf.text.tokenization import FullTokenizer

SPIECE = "spiece.model"
VOCAB = "vocab.txt"
TOKENIZER_CONFIG = "tokenizer_config.json"
TOKENIZER_JSON = "tokenizer.json"
# A text with what tokenizers get wrong most often: ALBERT's normalization (quotes,
# accents, capitals, full-width forms), its user-defined symbols and the digit-comma rule.
PROBE = ("``Well-known'' (re)bind: v3.5 costs 1,000 €, ÉLAN déjà-vu ＦＵＬＬ 12,34 "
         "naïve 'x' - 99,")
SPECIAL_TOKENS_MAP = "special_tokens_map.json"

# The special tokens FullTokenizer uses, as transformers names them.
ALBERT_SPECIAL_TOKENS = dict(bos_token="[CLS]", eos_token="[SEP]", unk_token="<unk>",
                             sep_token="[SEP]", pad_token="<pad>", cls_token="[CLS]",
                             mask_token="[MASK]")
BERT_SPECIAL_TOKENS = dict(unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                           cls_token="[CLS]", mask_token="[MASK]")


@dataclasses.dataclass
class HFVocabulary:
  """What FullTokenizer needs from a Hugging Face directory."""
  spm_model_file: Optional[str]
  vocab_file: Optional[str]
  do_lower_case: bool

  def tokenizer(self) -> FullTokenizer:
    return FullTokenizer(vocab_file=self.vocab_file, do_lower_case=self.do_lower_case,
                         spm_model_file=self.spm_model_file)

  @property
  def vocabulary_file(self) -> str:
    return self.spm_model_file or self.vocab_file


def _read_json(path: str) -> dict:
  return read_json_object(path) if os.path.exists(path) else {}


def _content(token) -> Optional[str]:
  """A special token as the files write it: a string or {"content": ...}."""
  return token.get("content") if isinstance(token, dict) else token


def read_hf_vocabulary(directory: str) -> HFVocabulary:
  """The vocabulary file and lower-casing of `directory`; errors name the file or setting."""
  settings: Dict[str, object] = {}
  sources = {}
  for name in (TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP):
    path = os.path.join(directory, name)
    data = _read_json(path)
    settings.update(data)
    sources.update({k: path for k in data})
  spiece, vocab = os.path.join(directory, SPIECE), os.path.join(directory, VOCAB)
  tokenizer_class = str(settings.get("tokenizer_class") or "")
  if os.path.exists(vocab) and (tokenizer_class.startswith("Bert") or not os.path.exists(spiece)):
    wordpiece = True
  elif os.path.exists(spiece):
    wordpiece = False
  elif os.path.exists(os.path.join(directory, "tokenizer.json")):
    raise ValueError(f"{directory} holds only tokenizer.json (a fast tokenizer's file); albert_tf "
                     f"reads {SPIECE} (SentencePiece) or {VOCAB} (WordPiece): copy the one the "
                     "model was trained with into the directory")
  else:
    raise FileNotFoundError(f"{directory} holds no vocabulary: neither {SPIECE} nor {VOCAB}")
  expected = BERT_SPECIAL_TOKENS if wordpiece else ALBERT_SPECIAL_TOKENS
  for key, token in expected.items():
    if key in settings and _content(settings[key]) not in (None, token):
      raise ValueError(f"{sources[key]}: {key} is {_content(settings[key])!r}; albert_tf's "
                       f"{'WordPiece' if wordpiece else 'SentencePiece'} tokenizer uses {token!r}")
  unsupported = []
  if wordpiece:
    if settings.get("tokenize_chinese_chars", True) is not True:
      unsupported.append("tokenize_chinese_chars=false")
    strip = settings.get("strip_accents")
    if strip is not None and bool(strip) != bool(settings.get("do_lower_case", True)):
      unsupported.append(f"strip_accents={str(strip).lower()} with do_lower_case="
                         f"{str(settings.get('do_lower_case', True)).lower()}")
  else:
    if settings.get("keep_accents", False):
      unsupported.append("keep_accents=true")
    if not settings.get("remove_space", True):
      unsupported.append("remove_space=false")
  if unsupported:
    where = sources.get("tokenizer_class", os.path.join(directory, TOKENIZER_CONFIG))
    raise ValueError(f"{where}: {', '.join(unsupported)} is not what ALBERT's tokenizer does "
                     "(and not what albert_tf computes)")
  do_lower_case = settings.get("do_lower_case", True)
  if not isinstance(do_lower_case, bool):
    raise ValueError(f"{sources['do_lower_case']}: do_lower_case must be true or false, got "
                     f"{do_lower_case!r}")
  found = HFVocabulary(spm_model_file=None if wordpiece else spiece,
                       vocab_file=vocab if wordpiece else None, do_lower_case=do_lower_case)
  check_tokenizer_json(directory, found)
  return found


def check_tokenizer_json(directory: str, vocabulary: HFVocabulary) -> Optional[bool]:
  """Whether `directory`'s tokenizer.json gives the vocabulary file's ids on PROBE (None: no
  tokenizer.json, or no `tokenizers` library to read it); prints one line when it does not."""
  path = os.path.join(directory, TOKENIZER_JSON)
  if not os.path.exists(path):
    return None
  try:
    import tokenizers  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  own = os.path.basename(vocabulary.vocabulary_file)
  want = vocabulary.tokenizer().encode(PROBE)
  try:
    got = tokenizers.Tokenizer.from_file(path).encode(PROBE, add_special_tokens=False).ids
  except Exception as e:  # pylint: disable=broad-except
    print(f"Note: {path} cannot be read ({type(e).__name__}); albert_tf reads {own}")
    return False
  if got != want:
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                 min(len(got), len(want)))
    print(f"Note: {path} tokenizes otherwise than {own} (other ids from token {first} of a "
          f"probe text: transformers' fast tokenizer will not give albert_tf's ids); albert_tf "
          f"reads {own}")
    return False
  return True


def save_hf_tokenizer(tokenizer: FullTokenizer, directory: str,
                      model_max_length: int = 512) -> List[str]:
  """Writes `tokenizer` as transformers reads it: `spiece.model` and AlbertTokenizer settings,
  or `vocab.txt` and BertTokenizer settings, and `tokenizer.json`, the fast tokenizer that
  gives the same ids. Returns the files written."""
  os.makedirs(directory, exist_ok=True)
  wordpiece = tokenizer.sp_model is None
  target = os.path.join(directory, VOCAB if wordpiece else SPIECE)
  specials = BERT_SPECIAL_TOKENS if wordpiece else ALBERT_SPECIAL_TOKENS
  # tokenizer_class: transformers' own fast class for tokenizer.json as written (its
  # AlbertTokenizer puts its own pre-tokenizer in place of the file's, which splits the
  # text at whitespace first, and a lone "▁" piece then covers the next word's first
  # character: a SQuAD answer ending on one gains a character).
  # model_input_names: the segment ids too. transformers 5's AlbertTokenizer returns only
  # input_ids and attention_mask, and its models then read every piece of a pair as the
  # first segment's, which a model fine-tuned on pairs (MRPC, RACE, SQuAD) was not.
  config = dict(tokenizer_class="BertTokenizer" if wordpiece else "PreTrainedTokenizerFast",
                do_lower_case=tokenizer.do_lower_case, model_max_length=model_max_length,
                model_input_names=["input_ids", "token_type_ids", "attention_mask"],
                **specials)
  if wordpiece:
    config.update(tokenize_chinese_chars=True, strip_accents=None)
  else:
    config.update(remove_space=True, keep_accents=False)
  written = []
  for path, content in ((target, None), (os.path.join(directory, TOKENIZER_CONFIG), config),
                        (os.path.join(directory, SPECIAL_TOKENS_MAP), specials),
                        (os.path.join(directory, TOKENIZER_JSON), standalone.tokenizer_json(
                            tokenizer))):
    if os.path.exists(path):
      raise FileExistsError(f"{path} already exists; nothing more written")
    with atomic_path(path) as tmp:
      if content is None:
        shutil.copyfile(tokenizer.vocabulary_file, tmp)
      else:
        with open(tmp, "w", encoding="utf-8") as f:
          if path.endswith(TOKENIZER_JSON):   # (a vocabulary's worth: one line)
            json.dump(content, f, ensure_ascii=False)
          else:
            json.dump(content, f, indent=2, sort_keys=True)
          f.write("\n")
    written.append(path)
  return written
