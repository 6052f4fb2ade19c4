"""Reading a safetensors file without trusting it: its header is parsed and checked
against the file (sizes, offsets, dtypes, element counts) before a tensor is read, then
the tensors are read through the ``safetensors`` package's NumPy API. Writing goes
through that API too (``safetensors.numpy.save``), atomically.

The format (https://github.com/huggingface/safetensors): 8 bytes, the length N of the
header as a little-endian unsigned integer; N bytes of JSON mapping each tensor's name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the data that follows
the header), and ``"__metadata__"`` to a map of strings; then the data, each tensor's
bytes little-endian and row-major, packed with no gap or overlap. docs/checkpoints.md.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .files import atomic_write, file_kind

#: safetensors' dtype names and NumPy's (the ones a checkpoint or an import may hold).
DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
#: The longest header read (the Rust reader's own limit is 100 MB). A tensor's entry takes
#: about 70 bytes: 50,000 tensors, where the largest checkpoint (an MLP of 1,000 layers)
#: holds 2,000.
MAX_HEADER_BYTES = 2**22
#: The most JSON values (counted from above: commas, ``[`` and ``{``) a header may hold
#: per byte: a tensor's entry has about one per 10 bytes, while 4 MB of ``[],`` would
#: parse into 150 MB of empty lists.
HEADER_BYTES_PER_VALUE = 4
_MAX_DIMS = 32


class TensorFileError(ValueError):
    """A file that is not a sound safetensors file, or whose header does not fit what the
    caller allows: ``problem`` says what, in one line."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(frozen=True)
class Entry:
    """One tensor as the header declares it."""

    dtype: np.dtype
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Header:
    """A checked header: every tensor's entry (in file order) and the metadata."""

    tensors: dict[str, Entry]
    metadata: dict[str, str]


def is_safetensors(raw: bytes) -> bool:
    """Whether ``raw`` (a file's first bytes, at least 9) starts as a safetensors file: a
    header length, then JSON's ``{``."""
    return len(raw) >= 9 and raw[8:9] == b"{" and int.from_bytes(raw[:8], "little") > 0


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise TensorFileError(f"its header names {twice[:60]!r} twice")
    return obj


def _int(x: Any) -> bool:
    return type(x) is int and x >= 0


def read_header(path: Path, max_bytes: int, max_elements: int) -> Header:
    """The header of the safetensors file ``path``, checked before any tensor is read: a
    regular file of at most ``max_bytes``; a header length within the file and
    MAX_HEADER_BYTES, few enough JSON values for its bytes, no key twice; each tensor a
    known dtype, a shape of at most ``max_elements`` numbers, and offsets whose span is
    its shape's bytes; the tensors packed from the header's end to the file's, no gap, no
    overlap. Memory: the header's bytes. A TensorFileError (one line) for any fault."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TensorFileError("no such file") from None
    except (OSError, ValueError) as e:
        raise TensorFileError(f"cannot open it ({getattr(e, 'strerror', None) or e})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TensorFileError(f"is {file_kind(info.st_mode)}, not a safetensors file")
        size = info.st_size
        if size > max_bytes:
            raise TensorFileError(f"is {size:,} bytes, more than the {max_bytes:,} allowed")
        first = os.pread(fd, 8, 0)
        if len(first) < 8:
            raise TensorFileError(f"is {size} bytes, too short for a safetensors header")
        n = int.from_bytes(first, "little")
        if n > min(size - 8, MAX_HEADER_BYTES):
            raise TensorFileError(
                f"declares a header of {n:,} bytes; the file holds {size - 8:,} after its "
                f"length (truncated, or not safetensors?)"
            )
        raw = os.pread(fd, n, 8)
    except OSError as e:
        raise TensorFileError(f"cannot read it ({e.strerror})") from None
    finally:
        os.close(fd)
    if len(raw) != n:
        raise TensorFileError("was cut short while being read")
    values = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if values > n // HEADER_BYTES_PER_VALUE + 64:
        raise TensorFileError(
            f"its header holds about {values:,} JSON values in {n:,} bytes, more than one "
            f"per {HEADER_BYTES_PER_VALUE} (bloated, or not safetensors?)"
        )
    try:
        doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as e:
        if isinstance(e, TensorFileError):
            raise
        raise TensorFileError("its header is not JSON (corrupt, or not safetensors?)") from None
    if not isinstance(doc, dict):
        raise TensorFileError("its header is not a JSON object")
    metadata = doc.pop("__metadata__", {})
    if not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise TensorFileError("its '__metadata__' is not a map of strings")
    return Header(_entries(doc, size - 8 - n, max_elements), metadata)


def _entries(doc: dict[str, Any], data_bytes: int, max_elements: int) -> dict[str, Entry]:
    """Each tensor's entry checked, in the order of its data."""
    entries = []
    total = 0
    for name, entry in doc.items():
        where = f"tensor {name[:60]!r}"
        if not (isinstance(entry, dict) and set(entry) == {"dtype", "shape", "data_offsets"}):
            raise TensorFileError(f"{where} is not {{dtype, shape, data_offsets}}")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in DTYPES:
            raise TensorFileError(
                f"{where} has dtype {str(dtype)[:20]!r}, not one of {list(DTYPES)}"
            )
        if not (isinstance(shape, list) and len(shape) <= _MAX_DIMS and all(map(_int, shape))):
            raise TensorFileError(f"{where} has no valid shape (got {str(shape)[:60]})")
        elements = math.prod(shape)
        total += elements
        if elements > max_elements or total > max_elements:
            raise TensorFileError(
                f"{where} claims {elements:,} numbers; the file may hold {max_elements:,} in all"
            )
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_int, offsets))):
            raise TensorFileError(f"{where} has no valid data_offsets (got {str(offsets)[:60]})")
        begin, end = offsets
        nbytes = elements * DTYPES[dtype].itemsize
        if end - begin != nbytes:
            raise TensorFileError(
                f"{where} spans bytes {begin:,} to {end:,}; its shape {tuple(shape)} of "
                f"{dtype} takes {nbytes:,}"
            )
        if end > data_bytes:
            raise TensorFileError(
                f"{where} ends at byte {end:,} of the data; the file holds {data_bytes:,} "
                "(truncated?)"
            )
        entries.append((begin, end, name, Entry(DTYPES[dtype], tuple(shape), begin, end)))
    entries.sort(key=lambda e: (e[0], e[1]))
    reached, previous = 0, None
    for begin, end, name, _ in entries:
        if begin < reached:
            raise TensorFileError(f"tensors {previous[:60]!r} and {name[:60]!r} overlap")
        if begin > reached:
            raise TensorFileError(
                f"{begin - reached:,} bytes before {name[:60]!r} belong to no tensor"
            )
        reached, previous = end, name
    if reached != data_bytes:
        raise TensorFileError(
            f"holds {data_bytes - reached:,} bytes after its last tensor that belong to none"
        )
    return {name: entry for _, _, name, entry in entries}


def read_tensors(
    path: Path, header: Header, names: list[str] | None = None
) -> dict[str, np.ndarray]:
    """The tensors ``names`` (all by default) of the file whose checked header is
    ``header``, read with ``safetensors.numpy``; each must be as the header said (the file
    may have changed since). A TensorFileError for any fault."""
    from safetensors import SafetensorError, safe_open

    wanted = list(header.tensors) if names is None else names
    out = {}
    try:
        with safe_open(path, framework="np") as f:
            if (f.metadata() or {}) != header.metadata:
                raise TensorFileError("changed while being read")
            for name in wanted:
                array = f.get_tensor(name)
                entry = header.tensors[name]
                if array.dtype != entry.dtype or array.shape != entry.shape:
                    raise TensorFileError("changed while being read")
                out[name] = array
    except SafetensorError as e:
        raise TensorFileError(f"not a readable safetensors file ({str(e)[:100]})") from None
    except OSError as e:
        raise TensorFileError(f"cannot read it ({e.strerror or e})") from None
    return out


def write_tensors(
    path: str | os.PathLike[str], tensors: Mapping[str, np.ndarray], metadata: dict[str, str]
) -> None:
    """``tensors`` (contiguous NumPy arrays by name) and ``metadata`` written to ``path``
    with ``safetensors.numpy.save_file``, streamed from the arrays (``save`` would build
    the file twice in memory first), with atomic_write's guarantees: into its temporary
    file by name, then synced and renamed. save_file replaces that name with a file of its
    own, unsynced and readable by its owner only, so that file is given the temporary
    file's permissions and synced before the rename."""
    from safetensors.numpy import save_file

    def write(f: Any) -> None:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        save_file(dict(tensors), f.name, metadata=metadata)
        fd = os.open(f.name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)

    atomic_write(path, write, binary=True)
