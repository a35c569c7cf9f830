"""A ``torch.save`` file read one tensor, or one slice, at a time: weights only, no second copy.

``torch.load`` makes every storage at once, and while it reads a file it briefly holds more
(reading one 30 MB model file peaks at about 2.7 times its size). The server step sums a
hundred such files into one accumulator, so it reads them here instead:

1. the structure (the archive's pickle) is loaded by the caller with ``torch.load(...,
   weights_only=True, map_location="meta")``: the same weights-only unpickler, so a file whose
   unpickling would need code is refused exactly as before; every tensor comes back on the
   ``meta`` device (shape and dtype, no data), its storage carrying the offset of its record
   in the file (``_checkpoint_offset``, set by ``torch.load`` for meta and fake tensors);
2. every such offset is checked against the zip archive's own table: the start of a stored
   (uncompressed) record of exactly the storage's size, in a little-endian archive;
3. a tensor's bytes are read with ``readinto``, a slice at a time, into one buffer
   (:meth:`TorchFile.slices`).

Where any of that does not hold (an older torch without the offsets, a legacy non-zip file, a
big-endian archive, a strided view), the caller's plain ``torch.load`` serves the same calls
from memory: such files stay readable, only the memory saving is lost. Deltas already in
memory (the Flower app's) go through the same calls (:meth:`TorchFile.in_memory`).
"""

from __future__ import annotations

import struct
import sys
import zipfile
from typing import Callable, Iterator

from asrpriv.errors import InputError

#: size of a zip local file header before its name and extra field
_LOCAL_HEADER = struct.Struct("<4s22xHH")


def _tensors(obj) -> Iterator:
    """Every tensor inside nested dicts, lists and tuples."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensors(value)


def _stored_records(path: str) -> dict[int, int] | None:
    """``{data offset: size}`` of the archive's uncompressed records; None if it is not a
    little-endian torch zip archive (or the machine is not little-endian)."""
    if sys.byteorder != "little":
        return None
    try:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as f:
            records: dict[int, int] = {}
            for info in archive.infolist():
                if info.filename.endswith("/byteorder") and archive.read(info) != b"little":
                    return None
                if info.compress_type != zipfile.ZIP_STORED:
                    continue
                f.seek(info.header_offset)
                head = f.read(_LOCAL_HEADER.size)
                if len(head) != _LOCAL_HEADER.size:
                    return None
                magic, name_len, extra_len = _LOCAL_HEADER.unpack(head)
                if magic != b"PK\x03\x04":
                    return None
                start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
                records[start] = info.file_size
            return records
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None


class TorchFile:
    """The tensors of one loaded object, read from the file on demand (see the module doc).

    ``obj`` is what ``torch.load`` returned: with meta tensors when :attr:`streamed`, with real
    ones otherwise. Pass any tensor found in ``obj`` to :meth:`slices`.
    """

    def __init__(self, path: str, obj, streamed: bool) -> None:
        self.path = path
        self.obj = obj
        self.streamed = streamed
        self._file = open(path, "rb", buffering=0) if streamed else None

    @classmethod
    def open(cls, path: str, load: Callable[[str], object]) -> "TorchFile":
        """Open ``path``; ``load(map_location)`` is the caller's ``torch.load`` (weights only,
        with its own error messages), called with ``"meta"`` and, where streaming is not
        possible, again with ``"cpu"``."""
        obj = load("meta")
        records = _stored_records(path)
        if records is not None and all(_fits(t, records) for t in _tensors(obj)):
            return cls(path, obj, streamed=True)
        return cls(path, load("cpu"), streamed=False)

    @classmethod
    def in_memory(cls, label: str, obj) -> "TorchFile":
        """Serve the tensors of an object already in memory (``label`` names it in errors)."""
        return cls(label, obj, streamed=False)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "TorchFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def slices(self, tensor, size: int) -> Iterator:
        """``tensor`` flattened, as consecutive 1-D slices of ``size`` elements (the last may be
        shorter). Streamed, each slice lives in one buffer of this call, valid until the next
        slice; in memory, slices are views of the tensor."""
        import torch

        flat_n = tensor.numel()
        if not self.streamed:
            flat = tensor.reshape(-1)
            for start in range(0, flat_n, size):
                yield flat[start:start + size]
            return
        buffer = torch.empty(min(size, flat_n), dtype=tensor.dtype)
        offset, item = _offset(tensor), tensor.element_size()
        for start in range(0, flat_n, size):
            part = buffer[:min(size, flat_n - start)]
            self._fill(part, offset + start * item)
            yield part

    def _fill(self, out, offset: int) -> None:
        import torch

        view = memoryview(out.view(-1).view(torch.uint8).numpy())
        self._file.seek(offset)
        done = 0
        while done < len(view):
            got = self._file.readinto(view[done:])
            if not got:
                raise InputError(self.path, None, "truncated: a tensor's data ends early")
            done += got


def _offset(tensor) -> int:
    return (tensor.untyped_storage()._checkpoint_offset
            + tensor.storage_offset() * tensor.element_size())


def _fits(tensor, records: dict[int, int]) -> bool:
    """A meta tensor whose bytes are one contiguous run inside a stored record of the archive."""
    storage = tensor.untyped_storage()
    start = getattr(storage, "_checkpoint_offset", None)
    if tensor.device.type != "meta" or not isinstance(start, int) or not tensor.is_contiguous():
        return False
    if records.get(start) != storage.nbytes():
        return False
    end = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
    return tensor.storage_offset() >= 0 and end <= storage.nbytes()
