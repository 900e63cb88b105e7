"""Hugging Face ALBERT directories (`config.json` + `model.safetensors`) <-> albert_tf models.

transformers' ALBERT (`modeling_albert.py`) holds the same weights as the original
TF1 graph under other names, in PyTorch's layout: a `torch.nn.Linear` weight is
[out, in], the transpose of a TF1 `kernel` [in, out] (Q/K/V, the attention
output, both FFN layers, the pooler, the embedding projection and the masked-LM
transform); embeddings, LayerNorms and the heads' `output_weights` [classes, H]
are stored as they are. `hf_name` is that whole correspondence, from the original
names of `checkpoints.variable_map`, so the three layouts share one table.

`hidden_act` follows transformers' meaning in `config.json`: "gelu" there is the
erf GELU ("gelu_exact" here), "gelu_new" / "gelu_pytorch_tanh" the tanh
approximation the original calls "gelu". Weights are read with the `safetensors`
package's NumPy API (float32, float16 or bfloat16; one file or a sharded index);
`pytorch_model.bin` needs torch.
"""

import dataclasses
import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np

from albert_tf.files import atomic_path, read_json_object
from albert_tf.formats.base import ModelDirectory
from albert_tf.modeling.checkpoints import LoadReport, variable_map
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import for_hf_architecture
from albert_tf.text.huggingface import read_hf_vocabulary

POOLER = "bert/pooler/"   # original names of the pooler's variables

NAME = "hf"

CONFIG = "config.json"
SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH = "pytorch_model.bin"
PYTORCH_INDEX = "pytorch_model.bin.index.json"
WEIGHT_FILES = (SAFETENSORS, SAFETENSORS_INDEX, PYTORCH, PYTORCH_INDEX)

# hidden_act: transformers' name -> AlbertConfig's (the original's) name, and back.
FROM_HF_ACTIVATION = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                      "gelu_fast": "gelu", "relu": "relu", "silu": "silu", "swish": "silu",
                      "tanh": "tanh", "linear": "linear"}
TO_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_exact": "gelu",
                    "relu": "relu", "silu": "silu", "swish": "silu", "tanh": "tanh",
                    "linear": "linear"}

# transformers' AlbertConfig defaults, for keys a config.json leaves out.
_HF_DEFAULTS = dict(vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
                    num_hidden_groups=1, num_attention_heads=64, intermediate_size=16384,
                    inner_group_num=1, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, max_position_embeddings=512,
                    type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12)
# Keys of the original albert_config.json that transformers keeps but does not use.
_ORIGINAL_EXTRAS = ("net_structure_type", "gap_size", "num_memory_blocks", "layers_to_keep")
# Fields whose difference changes what a model computes with the same weights.
_ARCHITECTURE = ("num_hidden_layers", "num_hidden_groups", "inner_group_num",
                 "num_attention_heads", "hidden_act", "layer_norm_eps")

# ----------------------------------------------------------------------------- names

_WHOLE = {
    "bert/embeddings/word_embeddings": "albert.embeddings.word_embeddings.weight",
    "bert/embeddings/position_embeddings": "albert.embeddings.position_embeddings.weight",
    "bert/embeddings/token_type_embeddings": "albert.embeddings.token_type_embeddings.weight",
    "cls/predictions/output_bias": "predictions.bias",
    "cls/seq_relationship/output_weights": "sop_classifier.classifier.weight",
    "cls/seq_relationship/output_bias": "sop_classifier.classifier.bias",
    "output_weights": "classifier.weight",         # run_classifier.py / RACE: [C, H], as stored
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",   # SQuAD v1.1: [2, H], as stored
    "cls/squad/output_bias": "qa_outputs.bias",
}
_MODULES = {
    "bert/embeddings/LayerNorm": "albert.embeddings.LayerNorm",
    "bert/encoder/embedding_hidden_mapping_in": "albert.encoder.embedding_hidden_mapping_in",
    "bert/pooler/dense": "albert.pooler",
    "cls/predictions/transform/dense": "predictions.dense",
    "cls/predictions/transform/LayerNorm": "predictions.LayerNorm",
}
_BLOCK = {
    "attention_1/self/query": "attention.query",
    "attention_1/self/key": "attention.key",
    "attention_1/self/value": "attention.value",
    "attention_1/output/dense": "attention.dense",
    "LayerNorm": "attention.LayerNorm",
    "ffn_1/intermediate/dense": "ffn",
    "ffn_1/intermediate/output/dense": "ffn_output",
    "LayerNorm_1": "full_layer_layer_norm",
}
_LEAVES = {"kernel": ("weight", True), "bias": ("bias", False), "gamma": ("weight", False),
           "beta": ("bias", False)}
_BLOCK_NAME = re.compile(r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/(.+)")
# Stored by some transformers versions, not weights: position ids, token type ids.
_BUFFERS = re.compile(r"(^|\.)embeddings\.(position_ids|token_type_ids)$")
# The masked-LM decoder is tied to the word embeddings and to predictions.bias.
_TIED = ("predictions.decoder.weight", "predictions.decoder.bias")


def hf_name(original_name: str) -> Tuple[str, bool]:
  """(transformers name with the `albert.` prefix, transposed) of an original TF1 name.

  Raises KeyError for a variable transformers has no place for (the SQuAD v2.0 head).
  """
  if original_name in _WHOLE:
    return _WHOLE[original_name], False
  module, _, leaf = original_name.rpartition("/")
  block = _BLOCK_NAME.fullmatch(module)
  if block and block.group(3) in _BLOCK:
    hf_module = (f"albert.encoder.albert_layer_groups.{block.group(1)}.albert_layers."
                 f"{block.group(2)}.{_BLOCK[block.group(3)]}")
  elif module in _MODULES:
    hf_module = _MODULES[module]
  else:
    raise KeyError(f"{original_name} has no transformers equivalent")
  if leaf not in _LEAVES:
    raise KeyError(f"{original_name} has no transformers equivalent")
  hf_leaf, transposed = _LEAVES[leaf]
  return f"{hf_module}.{hf_leaf}", transposed


def _is_encoder(name: str) -> bool:
  return name.startswith("bert/")


# ----------------------------------------------------------------------------- directories

def is_hf_directory(path) -> bool:
  """Whether `path` is a directory with a config.json and transformers weights."""
  return bool(path) and os.path.isdir(path) and os.path.exists(os.path.join(path, CONFIG)) \
      and any(os.path.exists(os.path.join(path, f)) for f in WEIGHT_FILES)


def recognize(path) -> bool:
  """The layout interface: `is_hf_directory` (a KerasHub preset's config.json has no
  transformers weights beside it)."""
  return is_hf_directory(path)


def read_directory(path: str, flag: str = "--albert_directory") -> ModelDirectory:
  """A Hugging Face directory: config, labels and vocabulary (a missing vocabulary is
  reported when one is needed)."""
  if not is_hf_directory(path):
    raise FileNotFoundError(f"{flag}={path} has a config.json but no weights (none of "
                            f"{', '.join(WEIGHT_FILES)})")
  config, info = read_hf_config(path)
  heads = {"AlbertForPreTraining": ["mlm", "sop"], "AlbertForMaskedLM": ["mlm"],
           "AlbertForSequenceClassification": ["classifier"],
           "AlbertForTokenClassification": ["token_classifier"],
           "AlbertForMultipleChoice": ["classifier"],
           "AlbertForQuestionAnswering": ["squad"]}.get(
               info.architectures[0] if info.architectures else "AlbertModel", [])
  common = dict(labels=info.labels, problem_type=info.problem_type, heads=heads,
                num_labels=len(info.labels) if info.labels else None)
  try:
    vocabulary = read_hf_vocabulary(path)
  except (FileNotFoundError, ValueError) as e:   # raised when a vocabulary is needed
    return ModelDirectory(path, NAME, config, path, None, None, None, vocabulary_error=str(e),
                          **common)
  return ModelDirectory(path, NAME, config, path, vocabulary.spm_model_file,
                        vocabulary.vocab_file, vocabulary.do_lower_case, **common)


@dataclasses.dataclass
class HFInfo:
  """What config.json says besides the encoder's AlbertConfig."""
  path: str                                   # the config.json
  architectures: List[str]
  labels: Optional[List[str]] = None          # id2label in id order, when the model has labels
  problem_type: Optional[str] = None          # "regression", "single_label_classification", ...
  classifier_dropout_prob: Optional[float] = None
  special_ids: Dict[str, int] = dataclasses.field(default_factory=dict)  # pad/bos/eos token ids


def read_hf_config(directory: str) -> Tuple[AlbertConfig, HFInfo]:
  """The AlbertConfig and the rest of `directory`/config.json; errors name the file."""
  path = os.path.join(directory, CONFIG)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{directory} is not a Hugging Face model directory: no {CONFIG}")
  data = read_json_object(path)
  model_type = data.get("model_type")
  if model_type != "albert":
    raise ValueError(f"{path}: model_type is {model_type!r}, not 'albert'; albert_tf reads "
                     "ALBERT models only")
  if data.get("position_embedding_type", "absolute") != "absolute":
    raise ValueError(f"{path}: position_embedding_type={data['position_embedding_type']!r}; "
                     "ALBERT's (and albert_tf's) position embeddings are 'absolute'")
  fields = {k: data.get(k, v) for k, v in _HF_DEFAULTS.items()}
  act = str(fields["hidden_act"])
  if act not in FROM_HF_ACTIVATION:
    raise ValueError(f"{path}: hidden_act={act!r} is not supported; albert_tf computes "
                     f"{', '.join(sorted(FROM_HF_ACTIVATION))}")
  fields["hidden_act"] = FROM_HF_ACTIVATION[act]
  if "down_scale_factor" in data:
    fields["down_scale_factor"] = data["down_scale_factor"]
  extra = {k: data[k] for k in _ORIGINAL_EXTRAS if k in data}
  try:
    config = AlbertConfig(**fields, extra=extra)
  except (ValueError, TypeError) as e:
    raise ValueError(f"{path}: {e}") from None
  labels = None
  id2label = data.get("id2label")
  if isinstance(id2label, dict) and id2label:
    try:
      ids = sorted(int(k) for k in id2label)
    except ValueError:
      raise ValueError(f"{path}: id2label keys must be integers, got "
                       f"{sorted(id2label)}") from None
    if ids != list(range(len(ids))):
      raise ValueError(f"{path}: id2label must number its labels 0..{len(ids) - 1}, got {ids}")
    labels = [str(id2label[str(i)] if str(i) in id2label else id2label[i]) for i in ids]
  info = HFInfo(path=path, architectures=list(data.get("architectures") or []), labels=labels,
                problem_type=data.get("problem_type"),
                classifier_dropout_prob=data.get("classifier_dropout_prob"),
                special_ids={k: data[k] for k in ("pad_token_id", "bos_token_id", "eos_token_id")
                             if isinstance(data.get(k), int)})
  return config, info


def hf_config_dict(config: AlbertConfig, architecture: str, labels: Optional[Sequence[str]] = None,
                   problem_type: Optional[str] = None, classifier_dropout_prob: float = 0.1,
                   special_ids: Optional[Dict[str, int]] = None) -> dict:
  """config.json for `config`, as transformers' AlbertConfig writes it; `hidden_act` is
  named so that transformers computes what albert_tf computes."""
  out = dict(architectures=[architecture], model_type="albert")
  for key in _HF_DEFAULTS:
    out[key] = getattr(config, key)
  out["hidden_act"] = TO_HF_ACTIVATION[config.hidden_act.lower()]
  # "dtype" is transformers 5's key, "torch_dtype" 4's.
  out.update(down_scale_factor=config.down_scale_factor, classifier_dropout_prob=classifier_dropout_prob,
             dtype="float32", torch_dtype="float32", tie_word_embeddings=True)
  out.update({k: v for k, v in config.extra.items() if k in _ORIGINAL_EXTRAS})
  out.update(dict(pad_token_id=0, bos_token_id=2, eos_token_id=3), **(special_ids or {}))
  if labels is not None:
    out["id2label"] = {str(i): str(label) for i, label in enumerate(labels)}
    out["label2id"] = {str(label): i for i, label in enumerate(labels)}
  if problem_type:
    out["problem_type"] = problem_type
  return out


# ----------------------------------------------------------------------------- weights

class HFWeights:
  """The tensors of a Hugging Face directory by name, read on demand as float32 NumPy.

  `model.safetensors`, a sharded `model.safetensors.index.json`, or (with torch
  installed) `pytorch_model.bin` and its index; safetensors first.
  """

  def __init__(self, directory: str):
    self.directory = directory
    self.shapes: Dict[str, Tuple[int, ...]] = {}
    self._files: Dict[str, str] = {}        # tensor name -> file
    self._torch: Dict[str, object] = {}     # loaded pytorch state dicts, by file
    files = self._weight_files()
    for path in files:
      if path.endswith(".safetensors"):
        self._index_safetensors(path)
      else:
        self._index_torch(path)

  def _weight_files(self) -> List[str]:
    join = lambda name: os.path.join(self.directory, name)
    for single, index in ((SAFETENSORS, SAFETENSORS_INDEX), (PYTORCH, PYTORCH_INDEX)):
      if os.path.exists(join(single)):
        return [join(single)]
      if os.path.exists(join(index)):
        try:
          with open(join(index), encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        except (ValueError, KeyError, TypeError) as e:
          raise ValueError(f"{join(index)}: not a weight index (no weight_map: {e})") from None
        shards = sorted(set(weight_map.values()))
        outside = [s for s in shards if not _inside(self.directory, s)]
        if outside:   # a downloaded index is someone else's input: no ../ or absolute names
          raise ValueError(f"{join(index)} names shards outside {self.directory}: "
                           f"{', '.join(map(str, outside))}")
        missing = [s for s in shards if not os.path.exists(join(s))]
        if missing:
          raise FileNotFoundError(f"{join(index)} names shards that are missing: "
                                  f"{', '.join(join(s) for s in missing)}")
        return [join(s) for s in shards]
    raise FileNotFoundError(f"{self.directory} holds no weights: none of "
                            f"{', '.join(WEIGHT_FILES)}")

  def _index_safetensors(self, path: str) -> None:
    from safetensors import safe_open  # pylint: disable=g-import-not-at-top
    try:
      with safe_open(path, framework="numpy") as f:
        for name in f.keys():
          self.shapes[name] = tuple(f.get_slice(name).get_shape())
          self._files[name] = path
    except Exception as e:  # safetensors raises its own SafetensorError
      raise ValueError(f"{path}: not a readable safetensors file ({e})") from None

  def _index_torch(self, path: str) -> None:
    try:
      import torch  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ImportError(
          f"{path} is a PyTorch pickle and torch is not installed. Either install torch "
          "(pip install 'albert_tf[torch]') and rerun, or convert the directory to "
          "safetensors once where transformers is installed: "
          "AutoModel.from_pretrained(DIR).save_pretrained(DIR, safe_serialization=True) "
          "(with the AutoModelFor... class of its heads)") from None
    try:
      state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
      raise ValueError(f"{path}: not a readable PyTorch state dict ({e})") from None
    self._torch[path] = state
    for name, tensor in state.items():
      self.shapes[name] = tuple(tensor.shape)
      self._files[name] = path

  def get(self, name: str) -> np.ndarray:
    """The tensor `name` as float32."""
    path = self._files[name]
    if path in self._torch:
      return self._torch[path][name].float().numpy()
    from safetensors import safe_open  # pylint: disable=g-import-not-at-top
    with safe_open(path, framework="numpy") as f:
      return np.asarray(f.get_tensor(name)).astype(np.float32)


def _inside(directory: str, name) -> bool:
  """Whether the file `name` of an index stays inside `directory` (no ../, no absolute path)."""
  if not isinstance(name, str) or not name or os.path.isabs(name):
    return False
  root = os.path.realpath(directory)
  return os.path.commonpath([root, os.path.realpath(os.path.join(root, name))]) == root


def _prefixed(names) -> bool:
  """Whether the file names the encoder `albert.*` (task classes) or bare (AlbertModel)."""
  return any(n.startswith("albert.") for n in names)


def _stored(hf: str, prefixed: bool) -> str:
  return hf if prefixed or not hf.startswith("albert.") else hf[len("albert."):]


def check_architecture(model_config: AlbertConfig, config: AlbertConfig, path: str) -> None:
  """A ValueError when `config` (read from `path`) computes otherwise than the model's."""
  differ = [f"{k}: {path} says {getattr(config, k)!r}, the model has {getattr(model_config, k)!r}"
            for k in _ARCHITECTURE
            if str(getattr(config, k)).lower() != str(getattr(model_config, k)).lower()]
  if differ:
    raise ValueError(f"{path} describes another model than the one being loaded:\n  "
                     + "\n  ".join(differ))


def load_hf_weights(model, directory: str) -> LoadReport:
  """Loads a Hugging Face ALBERT directory's weights into an albert_tf model.

  Every encoder tensor must be present with the right shape, no other encoder
  tensor may be, and config.json must describe the model's computation (layers,
  groups, heads, activation, epsilon); otherwise one ValueError lists every
  problem and nothing is assigned. Head tensors the directory lacks (or holds in
  another shape: a head trained for other labels) stay freshly initialized;
  tensors the model has no use for are reported as unused.

  Args:
    model: AlbertEncoder, AlbertPretrainer or a task model (AlbertClassifier,
      AlbertMultipleChoice, AlbertQuestionAnswerer).
    directory: config.json and model.safetensors (or its index, or pytorch_model.bin).

  Returns:
    A LoadReport (loaded and unused by transformers name, fresh by original name).
  """
  config, _ = read_hf_config(directory)
  targets = variable_map(model)
  check_architecture(_model_config(model), config, os.path.join(directory, CONFIG))
  weights = HFWeights(directory)
  prefixed = _prefixed(weights.shapes)
  plan, fresh, problems = {}, [], {"missing": [], "unexpected": [], "shape mismatch": []}
  # transformers' AlbertForTokenClassification has no pooler (nor uses one): it may be absent.
  unpooled = not getattr(model, "HF_POOLED", True)
  for original, variable in targets.items():
    try:
      hf, transposed = hf_name(original)
    except KeyError:
      fresh.append(original)          # no transformers equivalent (the SQuAD v2.0 head)
      continue
    name = _stored(hf, prefixed)
    if name not in weights.shapes and hf == "predictions.bias" and _TIED[1] in weights.shapes:
      name = _TIED[1]
    want = tuple(variable.shape.as_list())
    if name not in weights.shapes:
      required = _is_encoder(original) and not (unpooled and original.startswith(POOLER))
      (problems["missing"] if required else fresh).append(name if required else original)
      continue
    have = weights.shapes[name][::-1] if transposed else weights.shapes[name]
    if have != want:
      if _is_encoder(original):
        problems["shape mismatch"].append(f"{name}: file {list(weights.shapes[name])}, model "
                                          f"{list(want[::-1] if transposed else want)}")
      else:
        fresh.append(f"{original} (the file's {name} is {list(weights.shapes[name])})")
      continue
    plan[original] = (name, transposed, variable)
  used = {name for name, _, _ in plan.values()}
  encoder_names = {_stored(hf_name(n)[0], prefixed) for n in targets if _is_encoder(n)}
  problems["unexpected"] = sorted(
      n for n in weights.shapes if n not in encoder_names and not _BUFFERS.search(n)
      and (n.startswith("albert.") if prefixed else n.split(".")[0] in
           ("embeddings", "encoder", "pooler")))
  if any(problems.values()):
    lines = [f"{directory} does not match the model ({type(model).__name__}, "
             f"{len(targets)} variables):"]
    for title, items in problems.items():
      if items:
        lines.append(f"  {title} ({len(items)}):")
        lines.extend(f"    {item}" for item in sorted(items))
    raise ValueError("\n".join(lines))
  values = {}
  for original, (name, transposed, variable) in plan.items():   # all read before any assigned
    value = weights.get(name)
    values[original] = value.T if transposed else value
  for original, value in values.items():
    variable = plan[original][2]
    variable.assign(value.astype(variable.dtype.as_numpy_dtype))
  unused = sorted(n for n in weights.shapes
                  if n not in used and n not in _TIED and not _BUFFERS.search(n))
  return LoadReport(path=directory, loaded=sorted(used), freshly_initialized=sorted(fresh),
                    unused=unused).logged()


load = load_hf_weights   # the layout interface's reader


def _model_config(model) -> AlbertConfig:
  encoder = model if isinstance(model, AlbertEncoder) else model.encoder
  return encoder.config


# ----------------------------------------------------------------------------- models

def architecture_of(model, skip: Sequence[str] = ()) -> str:
  """The transformers class that holds what `model` holds (less the heads in `skip`, by
  original name): what the model class declares (`hf_architecture`); AlbertModel for an
  encoder."""
  return model.hf_architecture(skip) if hasattr(model, "hf_architecture") else "AlbertModel"


def hf_tensors(model, architecture: Optional[str] = None, skip: Sequence[str] = ()
               ) -> Tuple[Dict[str, np.ndarray], List[str]]:
  """({transformers name: float32 array}, original names left out) of `model`, named as
  `architecture` (default `architecture_of(model)`) stores them; `skip` (original names:
  heads never trained) is not written."""
  architecture = architecture or architecture_of(model, skip)
  tensors, left_out = {}, []
  for original, variable in variable_map(model).items():
    if original in skip:
      continue
    try:
      hf, transposed = hf_name(original)
    except KeyError:
      left_out.append(original)
      continue
    if architecture == "AlbertForTokenClassification" and original.startswith(POOLER):
      continue   # transformers' token classifier has no pooler
    if architecture == "AlbertModel":
      if not hf.startswith("albert."):
        left_out.append(original)
        continue
      hf = hf[len("albert."):]
    value = variable.numpy().astype(np.float32)
    tensors[hf] = np.ascontiguousarray(value.T if transposed else value)
  return tensors, left_out   # the tied predictions.decoder.* are not stored, as transformers does


def save_hf_model(model, directory: str, labels: Optional[Sequence[str]] = None,
                  problem_type: Optional[str] = None, classifier_dropout_prob: float = 0.1,
                  special_ids: Optional[Dict[str, int]] = None,
                  skip: Sequence[str] = (), extra: Optional[Dict[str, object]] = None) -> List[str]:
  """Writes `model` as transformers' `save_pretrained` would: config.json and
  model.safetensors in `directory` (created; existing files are refused). `skip`: original
  names of heads the model never held (left out, and the class chosen without them).

  The class is `architecture_of(model)`; `labels` (id order) and `problem_type`
  ("regression" for STS-B) go to config.json for a classifier. Returns the
  original names of variables transformers has no place for (the SQuAD v2.0
  head), which are not written. `extra`: more config.json fields (a multi-label run's
  tuned `multi_label_thresholds`, {label: threshold}, which transformers keeps and ignores).
  """
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  for name in (CONFIG, SAFETENSORS):
    if os.path.exists(os.path.join(directory, name)):
      raise FileExistsError(f"{os.path.join(directory, name)} already exists; nothing written")
  architecture = architecture_of(model, skip)
  tensors, left_out = hf_tensors(model, architecture, skip)
  config = hf_config_dict(_model_config(model), architecture, labels, problem_type,
                          classifier_dropout_prob, special_ids)
  config.update(extra or {})
  with atomic_path(os.path.join(directory, SAFETENSORS)) as tmp:
    save_file(tensors, tmp, metadata={"format": "pt"})
  with atomic_path(os.path.join(directory, CONFIG)) as tmp:
    with open(tmp, "w", encoding="utf-8") as f:
      json.dump(config, f, indent=2, sort_keys=True)
      f.write("\n")
  if left_out:
    logging.warning("%s has no place in transformers' %s; not written: %s",
                    type(model).__name__, architecture, ", ".join(left_out))
  return left_out


def build_hf_model(directory: str, recompute: bool = False):
  """A new albert_tf model of the class config.json's `architectures` names, with the
  directory's weights: AlbertModel -> AlbertEncoder, AlbertForPreTraining /
  AlbertForMaskedLM -> AlbertPretrainer, AlbertForSequenceClassification ->
  AlbertClassifier (labels from id2label), AlbertForTokenClassification ->
  AlbertTokenClassifier (labels from id2label), AlbertForMultipleChoice ->
  AlbertMultipleChoice, AlbertForQuestionAnswering -> AlbertQuestionAnswerer (v1.1).
  Returns (model, LoadReport)."""
  config, info = read_hf_config(directory)
  architecture = info.architectures[0] if info.architectures else "AlbertModel"
  encoder = AlbertEncoder(config, recompute=recompute)
  model = for_hf_architecture(architecture, encoder, len(info.labels) if info.labels else None,
                              info.classifier_dropout_prob)
  if model is encoder and architecture != "AlbertModel":
    logging.warning("%s: %s has no albert_tf class; reading its encoder", info.path,
                    architecture)
  return model, load_hf_weights(model, directory)
