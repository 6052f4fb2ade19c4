"""The text a language model learns: the two shipped corpora or a user's file, its character
vocabulary, and the seeded splits (makemore's for names, nanoGPT's for running text).

Every refusal (an empty, binary, non-UTF-8 or oversized file, too many distinct characters,
a line too long for a names model) is a ``CorpusError`` with a one-line message, raised
before anything is built.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import overload

import numpy as np

from ..checks import MAX_LM_VOCAB, shown_path
from ..files import UnreadableFile, read_bounded

#: The corpora shipped inside the package (lm/data/, README.md there gives provenance,
#: licence and the checksums below).
BUILTIN = {"names": "names.txt", "shakespeare": "tinyshakespeare.txt"}
SHA256 = {
    "names.txt": "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d",
    "tinyshakespeare.txt": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
}
#: The largest --data file: 16 MB, fifteen times Tiny Shakespeare. The whole text is held
#: as one int64 per character (8 bytes each), so this bounds the data at 128 MB.
MAX_DATA_BYTES = 16 * 2**20
#: The longest line a names-style model takes (its context is the longest line + 1).
MAX_WORD_LENGTH = 64
#: How much of a names file split_names splits at a time (characters): its lines as str
#: cost about 30 bytes a character at worst, so a piece is a couple of MB at most.
_PIECE = 2**16
#: makemore's test set: min(1,000, 10%) of the words.
NAMES_TEST_WORDS, NAMES_TEST_FRACTION = 1000, 0.1
#: nanoGPT's split: the first 90% of the text to train on, the last 10% to validate.
TEXT_TRAIN_FRACTION = 0.9
#: The token that marks a name's start and end (id 0), as makemore prints it.
BOUNDARY = "."


class CorpusError(ValueError):
    """Data that cannot be used, with a one-line message naming the problem."""


def builtin_path(name: str) -> Path:
    """Where a shipped corpus is inside the installed package."""
    return Path(str(resources.files(__package__).joinpath("data", BUILTIN[name])))


def sha256_of(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def read_corpus(path: str | Path) -> tuple[str, str]:
    """The text of ``path`` and the sha256 of its bytes, or a CorpusError: not a regular
    file, empty, over MAX_DATA_BYTES, binary (a NUL byte) or not UTF-8. Messages show the
    path with its control characters escaped."""
    shown = shown_path(path)
    try:
        raw = read_bounded(path, MAX_DATA_BYTES)
    except UnreadableFile as e:
        if e.size is not None:
            raise CorpusError(
                f"{shown}: {e.reason}, more than the {MAX_DATA_BYTES:,} a language model's "
                "data may have"
            ) from None
        raise CorpusError(f"{shown}: {e.reason}") from None
    if not raw.strip():
        raise CorpusError(f"{shown}: the file is empty; give a UTF-8 text file")
    if b"\x00" in raw:
        raise CorpusError(f"{shown}: a binary file (it holds NUL bytes); give a UTF-8 text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError(
            f"{shown}: not UTF-8 text (byte {e.start:,} is 0x{raw[e.start]:02x}); "
            "give a UTF-8 text file"
        ) from None
    return text, sha256_of(raw)


@dataclass(frozen=True)
class Vocabulary:
    """The characters of a corpus, sorted, with ids from 0; a names vocabulary reserves
    id 0 for the boundary token '.' (makemore's start and end of a name)."""

    chars: str
    boundary: bool

    @property
    def size(self) -> int:
        return len(self.chars) + self.boundary

    @property
    def tokens(self) -> str:
        """Every token's character, by id."""
        return (BOUNDARY if self.boundary else "") + self.chars

    @cached_property
    def _ids(self) -> dict[str, int]:
        return {c: i + self.boundary for i, c in enumerate(self.chars)}

    def encode(self, text: str) -> np.ndarray:
        lookup = self._ids
        return np.fromiter((lookup[c] for c in text), dtype=np.int64, count=len(text))

    def decode(self, ids: np.ndarray | list[int]) -> str:
        tokens = self.tokens
        return "".join(tokens[i] for i in np.asarray(ids).tolist())

    def missing(self, text: str) -> list[str]:
        """The characters of ``text`` that are not in the vocabulary, in order of appearance."""
        known = set(self.chars)
        return list(dict.fromkeys(c for c in text if c not in known))

    @classmethod
    def of(cls, text: str, boundary: bool, where: str) -> Vocabulary:
        chars = "".join(sorted(set(text)))
        vocab = cls(chars, boundary)
        if vocab.size > MAX_LM_VOCAB:
            raise CorpusError(
                f"{where}: {len(chars):,} distinct characters; a character model here takes "
                f"at most {MAX_LM_VOCAB - boundary}"
            )
        return vocab


class Words(Sequence[str]):
    """Some of a corpus's words, kept as arrays rather than a str each (a 16 MB file of
    one-letter lines is 8 million words: as Python strings, 0.5 GB): the token ids of every
    word of the corpus end to end, where each word starts (``starts[i]`` to
    ``starts[i + 1]``), and which of them these are (``index``). Reads as a sequence of
    str; equal to another sequence of the same words in the same order."""

    def __init__(
        self, vocab: Vocabulary, ids: np.ndarray, starts: np.ndarray, index: np.ndarray
    ) -> None:
        self.vocab, self._ids, self._starts, self.index = vocab, ids, starts, index

    def __len__(self) -> int:
        return len(self.index)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        w = int(self.index[i])
        return self.vocab.decode(self._ids[self._starts[w] : self._starts[w + 1]])

    def __iter__(self) -> Iterator[str]:
        text = self.vocab.decode(self._ids)  # one str for all: a slice each is quick
        starts = self._starts
        for w in self.index.tolist():
            yield text[starts[w] : starts[w + 1]]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside: not a dict key

    def take(self, positions: np.ndarray | slice) -> Words:
        """The words at ``positions`` of this sequence."""
        return Words(self.vocab, self._ids, self._starts, self.index[positions])

    def lengths(self) -> np.ndarray:
        w = self.index
        return self._starts[w + 1] - self._starts[w]

    def examples(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        """makemore's (x, y) rows for these words, each ``width`` long (see Names)."""
        n, lengths = len(self), self.lengths()
        rows = np.repeat(np.arange(n), lengths)  # the word of every character
        at = np.arange(len(rows)) - (np.cumsum(lengths) - lengths)[rows]  # its position in it
        ids = self._ids[self._starts[self.index][rows] + at]
        x = np.zeros((n, width), dtype=np.int64)
        y = np.full((n, width), -1, dtype=np.int64)
        x[rows, at + 1] = ids
        y[rows, at] = ids
        y[np.arange(n), lengths] = 0
        return x, y


@dataclass(frozen=True, eq=False)
class Names:
    """One item (a name) per line: makemore's dataset, split into train and test words."""

    vocab: Vocabulary
    train: Words
    test: Words
    max_length: int

    def block_size(self) -> int:
        """makemore's context: the longest name plus the start token."""
        return self.max_length + 1

    def as_words(self, words: Sequence[str]) -> Words:
        """``words`` (any sequence of str in the vocabulary) as Words."""
        if isinstance(words, Words):
            return words
        lengths = np.array([len(w) for w in words], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        ids = self.vocab.encode("".join(words)).astype(np.uint8)
        return Words(self.vocab, ids, starts, np.arange(len(words)))

    def examples(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """makemore's (x, y) rows: x = [0, w...] padded with 0, y = [w..., 0] padded
        with -1 (ignored by the loss), both of length block_size."""
        return self.as_words(words).examples(self.block_size())


@dataclass(frozen=True)
class Text:
    """Running text: nanoGPT's character corpus, the first 90% to train and the rest to
    validate."""

    vocab: Vocabulary
    train: np.ndarray
    val: np.ndarray


def split_names(text: str, seed: int, where: str) -> Names:
    """makemore's dataset from one word a line (surrounding spaces and empty lines dropped):
    a test set of min(1,000, 10%) words drawn by a permutation seeded with ``seed``.

    Split 64 KB at a time (cut at newlines, where ``splitlines`` cuts too), so that
    its memory is a few bytes a character whatever the lines are: the characters of the
    words end to end and the start of each word, never a str per word."""
    pieces: list[str] = []
    lengths = array("q")
    longest = ""
    at = 0
    while at < len(text):
        cut = text.find("\n", at + _PIECE)
        cut = len(text) if cut < 0 else cut + 1
        words = [w for w in (line.strip() for line in text[at:cut].splitlines()) if w]
        at = cut
        if not words:
            continue
        longest = max(longest, max(words, key=len), key=len)
        lengths.extend(map(len, words))
        pieces.append("".join(words))
    n = len(lengths)
    if n < 2:
        raise CorpusError(f"{where}: {n} non-empty line(s); a names model needs 2 or more")
    if len(longest) > MAX_WORD_LENGTH:
        raise CorpusError(
            f"{where}: a line of {len(longest):,} characters; a names model takes lines of at "
            f"most {MAX_WORD_LENGTH} (one item a line: use --model gpt for running text)"
        )
    chars = "".join(sorted(set().union(*map(set, pieces))))
    if BOUNDARY in chars:
        raise CorpusError(
            f"{where}: the character {BOUNDARY!r} marks a name's start and end here, so the "
            "lines may not contain it"
        )
    vocab = Vocabulary.of(chars, boundary=True, where=where)
    ids = np.concatenate([vocab.encode(piece).astype(np.uint8) for piece in pieces])
    del pieces
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.frombuffer(lengths, dtype=np.int64), out=starts[1:])
    del lengths
    test_size = max(1, min(NAMES_TEST_WORDS, int(n * NAMES_TEST_FRACTION)))
    order = np.random.default_rng(seed).permutation(n)
    return Names(
        vocab,
        Words(vocab, ids, starts, order[:-test_size]),
        Words(vocab, ids, starts, order[-test_size:]),
        len(longest),
    )


def split_text(text: str, block_size: int, where: str) -> Text:
    """nanoGPT's split: the first 90% of the characters for training, the last 10% for
    validation; each part must hold more than ``block_size`` characters."""
    vocab = Vocabulary.of(text, boundary=False, where=where)
    ids = vocab.encode(text)
    cut = int(len(ids) * TEXT_TRAIN_FRACTION)
    train, val = ids[:cut], ids[cut:]
    if min(len(train), len(val)) <= block_size:
        raise CorpusError(
            f"{where}: {len(ids):,} characters; the 10% validation part needs more than the "
            f"context of {block_size} (give at least {10 * (block_size + 1):,} characters or a "
            "smaller --block-size)"
        )
    return Text(vocab, train, val)


def text_batch(data: np.ndarray, block_size: int, batch_size: int, rng: np.random.Generator):
    """nanoGPT's get_batch: ``batch_size`` random windows of ``block_size`` characters and
    the same windows shifted by one (the next character at every position)."""
    starts = rng.integers(0, len(data) - block_size, size=batch_size)
    offsets = np.arange(block_size)
    x = data[starts[:, None] + offsets]
    return x, data[starts[:, None] + offsets + 1]


@dataclass(frozen=True)
class Source:
    """Where a corpus came from, as a checkpoint records it to find it again: a shipped
    dataset's name, or a file's path, and the sha256 of the bytes either way."""

    dataset: str | None
    path: str | None
    sha256: str

    def to_dict(self) -> dict[str, str | None]:
        return {"dataset": self.dataset, "path": self.path, "sha256": self.sha256}

    @property
    def label(self) -> str:
        return self.dataset or shown_path(Path(self.path or "data").stem)


def read_source(dataset: str | None, path: str | Path | None) -> tuple[str, Source]:
    """The text of a shipped dataset (its checksum verified) or of the file ``path``."""
    if dataset is not None:
        text, digest = read_corpus(builtin_path(dataset))
        if digest != SHA256[BUILTIN[dataset]]:
            raise CorpusError(
                f"the shipped {BUILTIN[dataset]} does not match its sha256 (a damaged install?)"
            )
        return text, Source(dataset, None, digest)
    assert path is not None
    text, digest = read_corpus(path)
    return text, Source(None, str(Path(path).resolve()), digest)
