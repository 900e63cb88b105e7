"""Names as users type them, resolved to a local directory by the real clients, once,
before the layout dispatcher sees them.

- An existing local path always wins, whatever it looks like.
- TF-Hub handles (`https://tfhub.dev/...`, Kaggle Models URLs, `gs://...` archives) go
  through `tensorflow_hub.resolve`: its cache, `TFHUB_CACHE_DIR` and
  `TFHUB_MODEL_LOAD_FORMAT` apply.
- Hugging Face repo ids (`org/name`, `org/name@revision`, `hf://org/name`) go through
  `huggingface_hub.snapshot_download`, fetching only the files albert_tf reads
  (`HF_PATTERNS`): `HF_HOME`, `HF_HUB_CACHE`, `HF_HUB_OFFLINE` and `HF_TOKEN` apply.

A name that cannot be had (offline and not cached, or no such handle) is one error line
naming it, the cache directory and the variable to set.
"""

import os
import re
from typing import Optional

HF_PATTERNS = [
    "config.json", "model.safetensors", "model.safetensors.index.json", "model-*.safetensors",
    "pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin",
    "spiece.model", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json",
    # KerasHub presets kept on the Hugging Face Hub
    "metadata.json", "model.weights.h5", "task.json", "task.weights.h5", "preprocessor.json",
    "assets/tokenizer/*",
]
_HANDLE = re.compile(r"^(https?|gs)://")
_REPO_ID = re.compile(r"^(?:hf://)?([A-Za-z0-9][\w.-]*/[\w.-]+)(?:@([\w./-]+))?$")


def _exists(value: str) -> bool:
  return os.path.exists(value) or os.path.exists(value + ".index")


def is_name(value: Optional[str]) -> bool:
  """Whether `value` is a hub handle or a repo id rather than an existing local path."""
  return bool(value) and not _exists(value) and bool(_HANDLE.match(value)
                                                      or _REPO_ID.match(value))


def resolve(value: Optional[str], flag: str) -> Optional[str]:
  """A local path for `value` (returned unchanged when it is one, or not a name)."""
  if not value or _exists(value):
    return value
  if _HANDLE.match(value):
    return _tf_hub(value, flag)
  match = _REPO_ID.match(value)
  if match:
    return _hugging_face(match.group(1), match.group(2), flag)
  return value


def _tf_hub(handle: str, flag: str) -> str:
  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
  from tensorflow_hub import resolver  # pylint: disable=g-import-not-at-top
  try:
    return hub.resolve(handle)
  except Exception as e:  # pylint: disable=broad-except  (urllib, HTTP, gfile errors alike)
    cache = resolver.tfhub_cache_dir(use_temp=True)
    raise FileNotFoundError(
        f"{flag}={handle}: tensorflow_hub could not fetch it ({type(e).__name__}: "
        f"{str(e).splitlines()[0] if str(e) else 'no detail'}) and it is not in its cache "
        f"{cache}; set TFHUB_CACHE_DIR to a cache that holds it, or pass the module's "
        "local directory") from None


def _hugging_face(repo_id: str, revision: Optional[str], flag: str) -> str:
  try:
    import huggingface_hub  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise FileNotFoundError(
        f"{flag}={repo_id} is not a local path, and reading Hugging Face repo ids needs "
        "huggingface_hub: pip install 'albert_tf[keras_hub]' (or huggingface_hub)") from None
  from huggingface_hub import constants  # pylint: disable=g-import-not-at-top
  try:
    return huggingface_hub.snapshot_download(repo_id, revision=revision,
                                             allow_patterns=HF_PATTERNS)
  except Exception as e:  # pylint: disable=broad-except  (offline, not found, gated, HTTP)
    offline = " (HF_HUB_OFFLINE is set)" if constants.HF_HUB_OFFLINE else ""
    name = repo_id + (f"@{revision}" if revision else "")
    raise FileNotFoundError(
        f"{flag}={name} is neither a local path nor a Hugging Face repo huggingface_hub "
        f"could fetch{offline}: {type(e).__name__}: "
        f"{str(e).splitlines()[0] if str(e) else 'no detail'}; cache {constants.HF_HUB_CACHE}"
        " (set HF_HOME or HF_HUB_CACHE to a cache that holds it, HF_TOKEN for a gated repo, "
        "or unset HF_HUB_OFFLINE to download)") from None
