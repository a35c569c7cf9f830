"""Items of an audit: one vector per file, read block by block.

Accepted files (one item each):

- asrpriv model or delta files (``torch.load(weights_only=True)``): the parameters whose names match
  ``--layer`` (a glob, e.g. ``blocks.0.*``, or an exact name), flattened in name order and
  concatenated;
- counts files (``word<TAB>count``): the vector of counts over the sorted union of all counts
  files' words (absent words count 0);
- ``.npy`` files holding one float vector (any shape, flattened in C order): read in slices
  straight from the file, so a 1M-dimension item never sits in memory whole.

Every item of one audit must have the same kind and dimension; a mismatch names the files.
The item name is the file name without its extension (``x.delta.pt`` -> ``x``), or the first
column of an ``@LISTFILE`` (``item<TAB>path`` lines).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.lines import iter_lines

_EXTENSIONS = (".delta.pt", ".pt", ".pth", ".counts", ".npy", ".tsv", ".txt")


@dataclass(frozen=True)
class Item:
    name: str
    path: str


def item_name(path: str) -> str:
    """``dir/spk1_a.delta.pt`` -> ``spk1_a``."""
    base = os.path.basename(path)
    for ext in _EXTENSIONS:
        if base.endswith(ext) and len(base) > len(ext):
            return base[: -len(ext)]
    stem, _ = os.path.splitext(base)
    return stem or base


def expand_items(args: list[str]) -> list[Item]:
    """Paths and ``@LISTFILE`` arguments -> items, in order; duplicate names are refused."""
    items: list[Item] = []
    for arg in args:
        if arg.startswith("@"):
            listfile = arg[1:]
            base = os.path.dirname(os.path.abspath(listfile))
            for lineno, line in iter_lines(listfile):
                if not line.strip() or line.startswith("#"):
                    continue
                parts = line.split("\t")
                if len(parts) != 2 or not parts[0] or not parts[1]:
                    raise InputError(listfile, lineno, "expected 'item<TAB>path'")
                path = parts[1] if os.path.isabs(parts[1]) else os.path.join(base, parts[1])
                items.append(Item(parts[0], path))
        else:
            items.append(Item(item_name(arg), arg))
    seen: dict[str, str] = {}
    for item in items:
        if item.name in seen:
            raise AsrprivError(f"two items are named {item.name!r}: {seen[item.name]} and {item.path}")
        seen[item.name] = item.path
    if len(items) < 2:
        raise AsrprivError("an audit needs at least 2 items")
    return items


def file_kind(path: str) -> str:
    """``torch``, ``npy`` or ``counts``, from the file's first bytes."""
    from asrpriv.io.sniff import is_torch_file

    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except IsADirectoryError:
        raise AsrprivError(f"{path}: is a directory, not an item file") from None
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if is_torch_file(path):
        return "torch"
    return "counts"


class VectorSource:
    """Reads the items' vectors in dimension blocks: ``block(start, stop)`` -> (n, stop-start) float32."""

    def __init__(self, items: list[Item], layer: str | None = None) -> None:
        self.items = items
        kinds = {item.path: file_kind(item.path) for item in items}
        distinct = sorted(set(kinds.values()))
        if len(distinct) != 1:
            by_kind = {k: next(p for p, v in kinds.items() if v == k) for k in distinct}
            raise AsrprivError("items of different kinds: " +
                               ", ".join(f"{k} ({p})" for k, p in by_kind.items()))
        self.kind = distinct[0]
        self.layer = layer
        self.names: list[str] = []   # parameter names (torch) or words (counts)
        if self.kind == "torch":
            self._open_torch()
        elif self.kind == "npy":
            self._open_npy()
        else:
            if layer is not None:
                raise AsrprivError(f"{arg('layer')} applies to model/delta files, not to counts files")
            self._open_counts()

    # -- torch model / delta files -------------------------------------------------------
    def _open_torch(self) -> None:
        import torch  # noqa: F401 - only torch files need it

        from asrpriv.nnlm.modelfile import read_model_file

        first = self.items[0].path
        payload = read_model_file(first)
        state = payload["state_dict"]
        names = sorted(state)
        if self.layer is not None:
            names = [n for n in names if fnmatch.fnmatchcase(n, self.layer) or n == self.layer]
            if not names:
                raise AsrprivError(f"{arg('layer')} {self.layer!r} matches no parameter of {first} "
                                   f"(names: {', '.join(sorted(state)[:8])}...)")
        self.names = names
        self.shapes = {n: tuple(state[n].shape) for n in names}
        self.dim = sum(int(state[n].numel()) for n in names)

    def _torch_vectors(self, index: int):
        """The flattened selected parameters of item ``index`` (float32, CPU)."""
        import torch

        from asrpriv.nnlm.modelfile import read_model_file

        item = self.items[index]
        payload = read_model_file(item.path)
        state = payload["state_dict"]
        parts = []
        for name in self.names:
            if name not in state:
                raise InputError(item.path, None, f"has no parameter {name!r} (items differ)")
            tensor = state[name]
            if tuple(tensor.shape) != self.shapes[name]:
                raise InputError(item.path, None, f"parameter {name!r} has shape "
                                 f"{tuple(tensor.shape)}, {self.items[0].path} has "
                                 f"{self.shapes[name]}")
            parts.append(tensor.detach().reshape(-1).to(torch.float32))
        vector = torch.cat(parts).numpy()
        import numpy as np

        if not np.isfinite(vector).all():
            raise InputError(item.path, None, "non-finite (NaN or inf) weights")
        return vector

    # -- .npy vectors ----------------------------------------------------------------------
    def _open_npy(self) -> None:
        import numpy as np

        self._npy: list[tuple[int, np.dtype]] = []
        dims = {}
        for item in self.items:
            with open(item.path, "rb") as f:
                try:
                    version = np.lib.format.read_magic(f)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, fortran, dtype = read_header(f)
                except ValueError as err:
                    raise InputError(item.path, None, f"bad .npy header: {err}") from None
                if fortran and len(shape) > 1:
                    raise InputError(item.path, None, "Fortran-ordered arrays are not supported")
                if dtype.kind not in "fiu" or dtype.hasobject:
                    raise InputError(item.path, None, f"not a numeric array ({dtype})")
                offset = f.tell()
            dim = int(np.prod(shape)) if shape else 1
            dims[item.path] = dim
            self._npy.append((offset, dtype))
        if len(set(dims.values())) != 1:
            a, b = sorted(dims.items(), key=lambda kv: kv[1])[0], sorted(dims.items(), key=lambda kv: kv[1])[-1]
            raise AsrprivError(f"items have different dimensions: {a[0]} has {a[1]}, {b[0]} has {b[1]}")
        self.dim = next(iter(dims.values()))

    # -- counts files ----------------------------------------------------------------------
    def _open_counts(self) -> None:
        import numpy as np

        from asrpriv.io.counts import read_counts

        tables = []
        vocab: set[str] = set()
        for item in self.items:
            _meta, counts = read_counts(item.path, allow_empty=True)
            tables.append(counts)
            vocab.update(counts)
        self.names = sorted(vocab)
        index = {w: i for i, w in enumerate(self.names)}
        dense = np.zeros((len(self.items), len(self.names)), dtype=np.float64)
        for row, counts in enumerate(tables):
            for word, value in counts.items():
                dense[row, index[word]] = value
        self._dense = dense
        self.dim = len(self.names)
        if self.dim == 0:
            raise AsrprivError("the counts files have no words")

    # -- reading ---------------------------------------------------------------------------
    def in_memory_bytes(self) -> int:
        return len(self.items) * self.dim * 4

    def iter_blocks(self, block_dims: int, memory_budget: int):
        """Yield ``(n, width)`` float64 blocks covering every dimension once.

        Counts are dense already; ``.npy`` items are read slice by slice from the files;
        model files are loaded one at a time and their vectors kept in a float32 matrix when it
        fits in ``memory_budget`` bytes, else spilled to a temporary file laid out by blocks.
        """
        import numpy as np

        n = len(self.items)
        if self.kind == "counts":
            for start in range(0, self.dim, block_dims):
                yield self._dense[:, start:start + block_dims]
            return
        if self.kind == "npy":
            buffer = np.empty((n, min(block_dims, self.dim)), dtype=np.float64)
            handles = [open(item.path, "rb") for item in self.items]
            try:
                for start in range(0, self.dim, block_dims):
                    stop = min(start + block_dims, self.dim)
                    for row, (handle, (offset, dtype)) in enumerate(zip(handles, self._npy)):
                        width = stop - start
                        handle.seek(offset + start * dtype.itemsize)
                        raw = handle.read(width * dtype.itemsize)
                        if len(raw) != width * dtype.itemsize:
                            raise InputError(self.items[row].path, None, "truncated .npy file")
                        buffer[row, :width] = np.frombuffer(raw, dtype=dtype)
                    block = buffer[:, : stop - start]
                    if not np.isfinite(block).all():
                        bad = int(np.nonzero(~np.isfinite(block).all(axis=1))[0][0])
                        raise InputError(self.items[bad].path, None, "non-finite values")
                    yield block
            finally:
                for handle in handles:
                    handle.close()
            return
        # torch files: one full load per item
        if self.in_memory_bytes() <= memory_budget:
            matrix = np.empty((n, self.dim), dtype=np.float32)
            for row in range(n):
                matrix[row] = self._torch_vectors(row)
            for start in range(0, self.dim, block_dims):
                yield matrix[:, start:start + block_dims].astype(np.float64)
            return
        yield from self._spilled_blocks(block_dims)

    def _spilled_blocks(self, block_dims: int):
        """Transpose through a temporary file: item rows written once, dimension blocks read back."""
        import tempfile

        import numpy as np

        n = len(self.items)
        starts = list(range(0, self.dim, block_dims))
        with tempfile.TemporaryFile(prefix="asrpriv-audit-") as spill:
            for row in range(n):
                vector = self._torch_vectors(row)
                for start in starts:
                    stop = min(start + block_dims, self.dim)
                    spill.seek((start * n + row * (stop - start)) * 4)
                    spill.write(vector[start:stop].tobytes())
            for start in starts:
                stop = min(start + block_dims, self.dim)
                spill.seek(start * n * 4)
                raw = spill.read(n * (stop - start) * 4)
                yield np.frombuffer(raw, dtype=np.float32).reshape(n, stop - start).astype(np.float64)
