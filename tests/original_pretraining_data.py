"""The original create_pretraining_data.py's instance creation, as a reference for tests.

Written here from the original's algorithm (google-research/albert), whole and
unoptimized: every document of every file in one list, shuffled, `dupe_factor`
rounds of instances, and the n-gram masking that lists every word's n-grams and
draws n with `choice`. The differences albert_tf makes on purpose are
parameters: `favor_shorter_ngram` means p(n) proportional to 1/n (the
original's code reversed its flag), and the global shuffle is left out
(statistics do not depend on order).
"""

import random

import numpy as np

SPECIAL = set('!"#$%&\'()*+,-./:;?@[\\]^_`{|}~') | {"€", "£"}


def _is_start_piece(piece):
  english = "abcdefghijklmnopqrstuvwxyz"
  return (piece.startswith("\u2581") or piece.startswith("<") or piece in SPECIAL
          or not all(c.lower() in english or c in SPECIAL for c in piece))


def _truncate(tokens_a, tokens_b, max_num_tokens, rng):
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng.random() < 0.5:
      del trunc[0]
    else:
      trunc.pop()


def _mask(tokens, masked_lm_prob, max_predictions, vocab_words, rng, nprng, ngram=3,
          favor_shorter=True):
  cand_indexes = []
  for i, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      continue
    if cand_indexes and not _is_start_piece(token):
      cand_indexes[-1].append(i)
    else:
      cand_indexes.append([i])
  output = list(tokens)
  num_to_predict = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
  pvals = 1.0 / np.arange(1, ngram + 1)
  pvals /= pvals.sum()
  if not favor_shorter:
    pvals = pvals[::-1]
  ngrams = [[cand_indexes[i:i + n] for n in range(1, ngram + 1)]
            for i in range(len(cand_indexes))]
  rng.shuffle(ngrams)
  masked, covered = [], set()
  for cand in ngrams:
    if len(masked) >= num_to_predict:
      break
    n = nprng.choice(np.arange(1, len(cand) + 1), p=pvals[:len(cand)] / pvals[:len(cand)].sum())
    index_set = sum(cand[n - 1], [])
    n -= 1
    while len(masked) + len(index_set) > num_to_predict and n > 0:
      index_set = sum(cand[n - 1], [])
      n -= 1
    if len(masked) + len(index_set) > num_to_predict or any(i in covered for i in index_set):
      continue
    for index in index_set:
      covered.add(index)
      if rng.random() < 0.8:
        output[index] = "[MASK]"
      elif rng.random() >= 0.5:
        output[index] = vocab_words[rng.randint(0, len(vocab_words) - 1)]
      masked.append((index, tokens[index]))
  masked.sort()
  return output, [i for i, _ in masked]


def _instances_of(documents, index, max_seq_length, short_seq_prob, masked_lm_prob,
                  max_predictions, vocab_words, rng, nprng):
  document = documents[index]
  max_num_tokens = max_seq_length - 3
  target = max_num_tokens
  if rng.random() < short_seq_prob:
    target = rng.randint(2, max_num_tokens)
  instances, chunk, length, i = [], [], 0, 0
  while i < len(document):
    chunk.append(document[i])
    length += len(document[i])
    if i == len(document) - 1 or length >= target:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      tokens_a = [t for s in chunk[:a_end] for t in s]
      if len(chunk) == 1:
        is_random_next, tokens_b = True, []
        for _ in range(10):
          other = rng.randint(0, len(documents) - 1)
          if other != index:
            break
        for sentence in documents[other][rng.randint(0, len(documents[other]) - 1):]:
          tokens_b.extend(sentence)
          if len(tokens_b) >= target - len(tokens_a):
            break
        i -= len(chunk) - a_end
      elif rng.random() < 0.5:
        is_random_next = True
        tokens_a, tokens_b = [t for s in chunk[a_end:] for t in s], tokens_a
      else:
        is_random_next = False
        tokens_b = [t for s in chunk[a_end:] for t in s]
      _truncate(tokens_a, tokens_b, max_num_tokens, rng)
      if tokens_a and tokens_b:
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
        output, positions = _mask(tokens, masked_lm_prob, max_predictions, vocab_words, rng,
                                  nprng)
        instances.append((tokens, output, positions, is_random_next))
      chunk, length = [], 0
    i += 1
  return instances


def create_training_instances(documents, vocab_words, max_seq_length, dupe_factor,
                              short_seq_prob, masked_lm_prob, max_predictions, seed=12345,
                              rng=None, nprng=None):
  """(tokens, output tokens, masked positions, is_random_next) of every instance, the
  original's way: all documents in one list, shuffled, then `dupe_factor` rounds over
  them. `rng` (random.Random) and `nprng` (anything with numpy's `choice`) default to
  generators seeded with `seed`."""
  rng = rng or random.Random(seed)
  nprng = nprng or np.random.RandomState(seed)
  documents = [d for d in documents if d]
  rng.shuffle(documents)
  instances = []
  for _ in range(dupe_factor):
    for index in range(len(documents)):
      instances.extend(_instances_of(documents, index, max_seq_length, short_seq_prob,
                                     masked_lm_prob, max_predictions, vocab_words, rng, nprng))
  return instances
