"""Keep large freed blocks in the process heap (glibc malloc), for torch on CPU.

By default glibc serves blocks above a dynamic threshold with ``mmap`` and returns them on
``free``, so every large tensor a step allocates (logits blocks of |V| x 256 floats, feed-forward
activations) is fresh memory that the kernel zero-fills page by page; trimming does the same to
the heap top. PyTorch's CPU performance guide recommends jemalloc/tcmalloc for this; we ask
glibc itself, in-process: blocks up to 32 MiB come from the heap and up to 512 MiB of freed
memory stays there for reuse. Measured on rescore-nbest (2,000 AMI hypotheses, 2 cores): 0.85 s
-> 0.79 s. Memory use grows by at most the retained amount.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

#: mallopt parameter numbers from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: the largest block served from the heap (glibc's ceiling for M_MMAP_THRESHOLD on 64-bit)
MMAP_THRESHOLD = 32 << 20
#: freed memory kept at the heap top before it is returned to the system
TRIM_THRESHOLD = 512 << 20

_done = False


@functools.lru_cache(maxsize=1)
def _libc():
    """The C library, found once (``ctypes.util.find_library`` runs ``ldconfig``/``gcc`` as
    subprocesses: ~3 ms a call, and the server round trims after every parameter)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def retain_freed_blocks() -> bool:
    """Apply the settings above once per process; True if glibc accepted them (False on other
    C libraries or platforms, where nothing changes)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = _libc().mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    _done = ok
    return ok


def release_freed_memory() -> bool:
    """Give the heap's free pages back to the system now (glibc ``malloc_trim(0)``); True if
    called. A step that frees one model's worth of tensors before it allocates the next
    (the server round) keeps its peak that low only if the freed pages leave the process."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = _libc().malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True
