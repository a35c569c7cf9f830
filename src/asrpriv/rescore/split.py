"""Splitting N-best lists into per-client, time-ordered parts (FL round simulation)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from asrpriv.errors import InputError, arg
from asrpriv.io.nbest import NbestReader, write_header, write_rows
from asrpriv.io.output import atomic_directory, open_output


def part_sizes(n: int, parts: int) -> list[int]:
    """Near-equal contiguous sizes, larger ones first (like numpy.array_split)."""
    base, extra = divmod(n, parts)
    return [base + (1 if k < extra else 0) for k in range(parts)]


def split_by_client(path: str, parts: int, output_dir: str, keep: set[str] | None,
                    drop: set[str], max_per_client: int | None,
                    client_of: dict[str, str] | None) -> list[dict[str, int]]:
    """Write ``output_dir/part-K.tsv``; returns, per part, utterances per client.

    Utterances stay in file order within each part. The whole input is held in memory
    (a client's utterances must be counted before they can be cut).
    """
    if parts != 1 and is_stream(output_dir):
        from asrpriv.errors import AsrprivError

        raise AsrprivError(f"{output_dir}: a stream holds one part; give {arg('parts')} 1, or a "
                           f"directory for {parts} parts")
    reader = NbestReader(path)
    if client_of is None and "client" not in reader.index:
        raise InputError(path, 1, f"no 'client' column: give {arg('utt2client')}")
    by_client: dict[str, list] = {}
    order: list[tuple[str, int]] = []
    for utt in reader:
        client = client_of.get(utt.utt_id) if client_of is not None else utt.client
        if client is None:
            raise InputError(path, utt.hyps[0].lineno, f"utterance {utt.utt_id!r} has no client")
        if (keep is not None and client not in keep) or client in drop:
            continue
        utts = by_client.setdefault(client, [])
        if max_per_client is not None and len(utts) >= max_per_client:
            continue
        order.append((client, len(utts)))
        utts.append(utt)
    part_of: dict[tuple[str, int], int] = {}
    sizes: list[dict[str, int]] = [{} for _ in range(parts)]
    for client, utts in by_client.items():
        start = 0
        for k, size in enumerate(part_sizes(len(utts), parts)):
            for i in range(start, start + size):
                part_of[(client, i)] = k
            sizes[k][client] = size
            start += size
    def write_part(k: int, target: str) -> None:
        with open_output(target) as stream:
            write_header(stream, reader.columns)
            for client, i in order:
                if part_of[(client, i)] == k:
                    write_rows(stream, (h.values for h in by_client[client][i].hyps))

    if is_stream(output_dir):  # '-', /dev/stdout, /dev/fd/N, >(cmd): one part, as a TSV stream
        write_part(0, output_dir)
        return sizes
    with atomic_directory(output_dir) as directory:  # all parts or none; no empty directory
        for k in range(parts):
            write_part(k, os.path.join(directory, f"part-{k}.tsv"))
    return sizes


def is_stream(target: str) -> bool:
    """``-`` or a path naming a descriptor (``/dev/stdout``, ``/dev/fd/N``, a process
    substitution): a stream that holds one N-best TSV, not a directory of parts."""
    from asrpriv.io.output import descriptor_of

    return str(target) == "-" or descriptor_of(str(target)) is not None


@dataclass
class SplitSettings:
    """The settings of ``split-nbest``: the N-best TSV ``input``, ``parts`` per client,
    ``output_dir`` (``part-K.tsv`` files), client selection (``clients``/``exclude_clients``:
    ids separated by commas or spaces), ``max_per_client`` utterances, and ``utt2client``
    (a Kaldi map; default: the TSV's client column)."""

    input: str = "-"
    parts: int = 2
    output_dir: str = "split"
    clients: str | None = None
    exclude_clients: str | None = None
    max_per_client: int | None = None
    utt2client: str | None = None


@dataclass
class SplitResult:
    """Per part, the utterances of each client."""

    sizes: list[dict[str, int]]

    def summary(self) -> str:
        """The line ``split-nbest`` says on stderr: clients, and utterances per part."""
        return split_summary(self.sizes)


def split_nbest(s: SplitSettings) -> SplitResult:
    """The step ``split-nbest``: cut each client's utterances into ``parts`` contiguous,
    time-ordered pieces; part k (``output_dir/part-K.tsv``) holds every client's k-th piece
    (000 Sec. 3.2)."""
    return SplitResult(split_file(s.input, s.parts, s.output_dir, s.clients, s.exclude_clients,
                                  s.max_per_client, s.utt2client))


def split_file(path: str, parts: int, output_dir: str, clients: str | None = None,
               exclude_clients: str | None = None, max_per_client: int | None = None,
               utt2client: str | None = None) -> list[dict[str, int]]:
    """:func:`split_nbest` on plain arguments; returns, per part, utterances per client."""
    from asrpriv.errors import AsrprivError

    if parts < 1:
        raise AsrprivError(f"{arg('parts')} must be >= 1, got {parts}")
    if max_per_client is not None and max_per_client < 1:
        raise AsrprivError(f"{arg('max_per_client')} must be >= 1, got {max_per_client}")
    keep = set(clients.replace(",", " ").split()) if clients else None
    drop = set(exclude_clients.replace(",", " ").split()) if exclude_clients else set()
    if keep is not None and not keep:
        raise AsrprivError(f"{arg('clients')} is empty")
    client_of = None
    if utt2client:
        from asrpriv.io.kaldi import read_map

        client_of = read_map(utt2client, "client")
    return split_by_client(path, parts, output_dir, keep, drop, max_per_client, client_of)


def split_summary(sizes: list[dict[str, int]]) -> str:
    """The line ``split-nbest`` says on stderr: clients, and utterances per part."""
    return (f"split-nbest: {len(sizes[0]) if sizes else 0} client(s); utterances per part: "
            f"{' '.join(str(sum(s.values())) for s in sizes)}")
