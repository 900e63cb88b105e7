"""AlbertConfig: the fields of the original `albert_config.json`, validated.

The field names, meanings and defaults follow google-research/albert's
`AlbertConfig`, so a released `albert_config.json` loads unchanged and is
written back with the same keys (unknown keys such as `net_structure_type`,
`gap_size` or `num_memory_blocks` are kept on the round trip).
"""

import copy
import dataclasses
import json
import math
import os
from typing import Any, Dict

from albert_tf.modeling import activations

# Bounds for configs from downloaded directories, checked before anything is built: far
# beyond every released ALBERT (xxlarge: H 4096, I 16384, 12 layers, 512 positions), and
# low enough that no config can make a model that hangs or exhausts memory being built
# (the shared weights fit any layer count, so a huge one only loops).
LIMITS = dict(vocab_size=1 << 22, embedding_size=1 << 16, hidden_size=1 << 16,
              num_hidden_layers=1024, num_hidden_groups=1024, num_attention_heads=1024,
              intermediate_size=1 << 18, inner_group_num=64, max_position_embeddings=1 << 17,
              type_vocab_size=1 << 10)
MAX_PARAMETERS = 4 * 10 ** 9   # 16 GB of float32

_INT_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
               "num_hidden_groups", "num_attention_heads", "intermediate_size",
               "inner_group_num", "max_position_embeddings", "type_vocab_size")


@dataclasses.dataclass
class AlbertConfig:
  """Hyperparameters of an ALBERT encoder, as in the original `albert_config.json`."""

  vocab_size: int = 30000               # V: SentencePiece pieces
  embedding_size: int = 128             # E: factorized embedding width
  hidden_size: int = 768                # H: transformer width
  num_hidden_layers: int = 12           # L: attention+FFN layers (applications)
  num_hidden_groups: int = 1            # G: distinct weight groups; layer i uses int(i / L * G)
  num_attention_heads: int = 12         # N: heads; H must be divisible by N
  intermediate_size: int = 3072         # I: FFN inner width
  inner_group_num: int = 1              # attention+FFN sub-blocks per group, applied in turn
  down_scale_factor: float = 1          # kept for the round trip; unused by the encoder (as in the original)
  hidden_act: str = "gelu"              # "gelu" is the tanh approximation, as in the original;
                                        # "gelu_exact" the erf GELU (transformers' "gelu")
  hidden_dropout_prob: float = 0.0      # embeddings, attention output and FFN output dropout
  attention_probs_dropout_prob: float = 0.0
  max_position_embeddings: int = 512    # P: longest sequence
  type_vocab_size: int = 2              # T: segment ids
  initializer_range: float = 0.02       # stddev of the truncated-normal initializer
  layer_norm_eps: float = 1e-12         # every LayerNorm's epsilon (the original's is fixed at
                                        # 1e-12; written back only when it differs)
  extra: Dict[str, Any] = dataclasses.field(default_factory=dict)  # unknown keys, kept verbatim

  def __post_init__(self):
    self.validate()

  def validate(self):
    """Raises ValueError naming the offending field."""
    for name in _INT_FIELDS:
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"AlbertConfig.{name} must be an integer, got {value!r}")
      if value <= 0:
        raise ValueError(f"AlbertConfig.{name} must be positive, got {value}")
      if value > LIMITS[name]:
        raise ValueError(f"AlbertConfig.{name}={value} exceeds {LIMITS[name]}, far beyond any "
                         "ALBERT: a damaged or hostile config is refused before anything is "
                         "built")
    for name in ("down_scale_factor", "hidden_dropout_prob", "attention_probs_dropout_prob",
                 "initializer_range", "layer_norm_eps"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) \
          or not math.isfinite(value):
        raise ValueError(f"AlbertConfig.{name} must be a number, got {value!r}")
    if not isinstance(self.hidden_act, str):
      raise ValueError(f"AlbertConfig.hidden_act must be a string, got {self.hidden_act!r}")
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(
          f"AlbertConfig.hidden_size ({self.hidden_size}) is not divisible by "
          f"num_attention_heads ({self.num_attention_heads})")
    if self.num_hidden_groups > self.num_hidden_layers:
      raise ValueError(
          f"AlbertConfig.num_hidden_groups ({self.num_hidden_groups}) exceeds "
          f"num_hidden_layers ({self.num_hidden_layers}): some groups would never be used")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, name)
      if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"AlbertConfig.{name} must be in [0, 1), got {value}")
    if not float(self.initializer_range) > 0:
      raise ValueError(f"AlbertConfig.initializer_range must be positive, got {self.initializer_range}")
    if not float(self.layer_norm_eps) > 0:
      raise ValueError(f"AlbertConfig.layer_norm_eps must be positive, got {self.layer_norm_eps}")
    activations.get(self.hidden_act, field="AlbertConfig.hidden_act")
    if self.parameter_count() > MAX_PARAMETERS:
      raise ValueError(f"AlbertConfig describes {self.parameter_count():,} parameters, over "
                       f"{MAX_PARAMETERS:,}: refused before anything is built")

  def parameter_count(self) -> int:
    """The encoder's weights, counted from the config (embeddings, projection, every
    group's blocks, pooler)."""
    e, h, i = self.embedding_size, self.hidden_size, self.intermediate_size
    embeddings = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size + 2) * e
    projection = (e * h + h) if e != h else 0
    block = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
    return (embeddings + projection + self.num_hidden_groups * self.inner_group_num * block
            + h * h + h)

  def group_index(self, layer_index: int) -> int:
    """The weight group used by 0-based layer `layer_index`, exactly as the original."""
    return int(layer_index / self.num_hidden_layers * self.num_hidden_groups)

  @classmethod
  def from_dict(cls, json_object: Dict[str, Any]) -> "AlbertConfig":
    """Builds a config from a dict; keys that are not fields go to `extra`."""
    if not isinstance(json_object, dict):
      raise ValueError(f"AlbertConfig.from_dict expects a dict, got {type(json_object).__name__}")
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    known = {k: v for k, v in json_object.items() if k in names}
    extra = dict(json_object.get("extra", {}))
    extra.update({k: v for k, v in json_object.items() if k not in names and k != "extra"})
    return cls(**known, extra=extra)

  @classmethod
  def from_json_file(cls, json_file: str) -> "AlbertConfig":
    """Reads an `albert_config.json`; errors name the file."""
    if not os.path.isfile(json_file):
      raise FileNotFoundError(f"ALBERT config file not found: {json_file}")
    with open(json_file, "r", encoding="utf-8") as f:
      text = f.read()
    try:
      data = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f"{json_file}: not valid JSON ({e})") from None
    try:
      return cls.from_dict(data)
    except (ValueError, TypeError) as e:
      raise ValueError(f"{json_file}: {e}") from None

  @classmethod
  def from_preset(cls, name: str) -> "AlbertConfig":
    """One of `PRESETS`, e.g. "base" (= "base_v2"), "large_v1", "xxlarge_v2"."""
    key = name.lower().replace("-", "_").replace("albert_", "")
    key = PRESET_ALIASES.get(key, key)
    if key not in PRESETS:
      raise ValueError(f"Unknown ALBERT preset {name!r}; known: {', '.join(sorted(PRESETS))}")
    return cls.from_dict(copy.deepcopy(PRESETS[key]))

  def to_dict(self) -> Dict[str, Any]:
    """The original JSON layout: fields, then the kept extra keys (`layer_norm_eps`, which
    the original does not have, only when it is not the original's 1e-12)."""
    out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
    if self.layer_norm_eps == 1e-12:
      del out["layer_norm_eps"]
    out.update(copy.deepcopy(self.extra))
    return out

  def to_json_string(self) -> str:
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, json_file: str):
    with open(json_file, "w", encoding="utf-8") as f:
      f.write(self.to_json_string())


def _preset(hidden, layers, heads, intermediate, dropout):
  return dict(vocab_size=30000, embedding_size=128, hidden_size=hidden,
              num_hidden_layers=layers, num_hidden_groups=1, num_attention_heads=heads,
              intermediate_size=intermediate, inner_group_num=1, down_scale_factor=1,
              hidden_act="gelu", hidden_dropout_prob=dropout,
              attention_probs_dropout_prob=dropout, max_position_embeddings=512,
              type_vocab_size=2, initializer_range=0.02,
              extra=dict(net_structure_type=0, gap_size=0, num_memory_blocks=0, layers_to_keep=[]))


# The released configurations. v2 models were trained without dropout; so was
# xxlarge v1 (its released config has 0.0), the other v1 models with 0.1.
PRESETS = {
    "base_v1": _preset(768, 12, 12, 3072, 0.1),
    "large_v1": _preset(1024, 24, 16, 4096, 0.1),
    "xlarge_v1": _preset(2048, 24, 16, 8192, 0.1),
    "xxlarge_v1": _preset(4096, 12, 64, 16384, 0.0),
    "base_v2": _preset(768, 12, 12, 3072, 0.0),
    "large_v2": _preset(1024, 24, 16, 4096, 0.0),
    "xlarge_v2": _preset(2048, 24, 16, 8192, 0.0),
    "xxlarge_v2": _preset(4096, 12, 64, 16384, 0.0),
}
PRESET_ALIASES = {"base": "base_v2", "large": "large_v2", "xlarge": "xlarge_v2",
                  "xxlarge": "xxlarge_v2"}
