"""The ``add-noise`` step: one entry for both mechanisms.

:func:`add_noise` takes :class:`AddNoiseSettings`: ``mechanism="laplace"`` releases counts
with exact discrete Laplace noise (:func:`asrpriv.unigram.noise.add_noise_counts`, paper 000
Eq. 8-9), ``"gaussian"`` clips one model delta and adds Gaussian noise
(:func:`asrpriv.federated.local_noise.noise_delta_file`, local DP of one client's update).
Which settings belong to which mechanism, and what the step says, live here; the privacy
logic stays in those two functions.

With ``by_client`` the step takes many inputs (``inputs``: each one client's or item's counts
or delta) and makes one independent release of each into that directory, under its own file
name, in one process: what a recipe would otherwise do with one ``add-noise`` process per file
(each paying the interpreter and torch start-up). Seeded (test) noise then derives file i's seed
(1-based, in the order given) by the one rule, ``derive_seed(seed, i, noise_draw)``
(:mod:`asrpriv.federated.seeds`); unseeded, every file draws from the OS's secure source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from asrpriv.errors import AsrprivError, arg


@dataclass
class AddNoiseSettings:
    """The settings of ``add-noise``.

    Attributes:
        input: counts (laplace) or one delta file (gaussian); ``-`` = stdin (counts).
        mechanism: ``laplace`` or ``gaussian``.
        epsilon, vocab, sensitivity, clamp: laplace (see :class:`asrpriv.unigram.noise.LaplaceSettings`).
        noise_multiplier, clip: gaussian (z, and C; None = the delta's recorded clip_l2).
        seed: seeded, NOT private noise (tests); allow_seeded: accept seeded inputs.
        debug_private: also say un-noised statistics of the private input.
        output: the release (``-`` = stdout; the gaussian mechanism needs a file).
        inputs, by_client: many inputs, one release each, written to the directory
            ``by_client`` under the input's file name (``input`` and ``output`` unused).
        noise_draw: with ``seed`` and ``by_client``: the draw D of file i's seed
            ``derive_seed(seed, i, D)``.
    """

    input: str = "-"
    mechanism: str = "laplace"
    epsilon: str | float | None = None
    vocab: str | None = None
    sensitivity: str | float | None = None
    clamp: bool = True
    noise_multiplier: float | None = None
    clip: float | None = None
    seed: int | None = None
    allow_seeded: bool = False
    debug_private: bool = False
    output: str | None = "-"
    inputs: tuple[str, ...] = ()
    by_client: str | None = None
    noise_draw: int = 0


@dataclass
class AddNoiseResult:
    """What ``add-noise`` released: the Laplace release (:class:`asrpriv.unigram.noise.LaplaceResult`)
    or the Gaussian one (``delta_norm``: the L2 norm before clipping, ``clip``: C, ``noise_std``:
    z C per coordinate), and what the step says (``notes``) and warns about (``warnings``).
    With ``by_client``: ``releases`` holds each input's result, in the order given."""

    mechanism: str
    laplace: object | None = None
    delta_norm: float | None = None
    clip: float | None = None
    noise_std: float | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    releases: list["AddNoiseResult"] = field(default_factory=list)


def add_noise(s: AddNoiseSettings,
              seeded_warning: Callable[[str], None] | None = None,
              progress: Callable[[int], object] | None = None) -> AddNoiseResult:
    """The step ``add-noise`` (see the module docstring). ``progress(total)``: a meter with
    ``update()`` and ``close()`` over the files of ``by_client`` (None: none)."""
    if s.mechanism not in ("laplace", "gaussian"):
        raise AsrprivError(f"{arg('mechanism')} must be laplace or gaussian, got {s.mechanism!r}")
    if s.by_client is not None:
        return _add_noise_each(s, seeded_warning, progress)
    if s.inputs:
        raise AsrprivError(f"several inputs need {arg('by_client')} DIR (one release of each)")
    if s.mechanism == "gaussian":
        if s.epsilon is not None or s.vocab is not None or s.sensitivity is not None or not s.clamp:
            raise AsrprivError(f"{arg('epsilon')}, {arg('vocab')}, {arg('sensitivity')} and "
                               f"{arg('no_clamp')} are for {arg('mechanism')} laplace")
        if s.noise_multiplier is None:
            raise AsrprivError(f"{arg('mechanism')} gaussian needs {arg('noise_multiplier')} Z")
        if s.output in (None, "-"):
            raise AsrprivError(f"{arg('mechanism')} gaussian: give the noisy delta as -o FILE")
        if s.seed is not None:
            if seeded_warning is None:
                from asrpriv.talk import seeded_warning
            seeded_warning(f"--seed {s.seed}")
        from asrpriv.federated.local_noise import noise_delta_file

        norm, used_clip = noise_delta_file(s.input, s.output, s.noise_multiplier, s.clip, s.seed,
                                           s.allow_seeded)
        result = AddNoiseResult("gaussian", delta_norm=norm, clip=used_clip,
                                noise_std=s.noise_multiplier * used_clip)
        if s.debug_private:  # the un-noised norm of the private delta
            result.notes.append(f"add-noise: delta L2 norm {norm:.4g} (before clipping)")
        result.notes.append(f"add-noise: delta clipped to L2 norm {used_clip:g}; Gaussian noise "
                            f"std {result.noise_std:.4g} per coordinate (z {s.noise_multiplier:g})")
        return result
    if s.noise_multiplier is not None or s.clip is not None:
        raise AsrprivError(f"{arg('noise_multiplier')} and {arg('clip')} are for "
                           f"{arg('mechanism')} gaussian")
    from asrpriv.unigram.noise import LaplaceSettings, add_noise_counts

    release = add_noise_counts(LaplaceSettings(input=s.input, epsilon=s.epsilon, vocab=s.vocab,
                                               sensitivity=s.sensitivity, clamp=s.clamp,
                                               seed=s.seed, allow_seeded=s.allow_seeded,
                                               output=s.output), seeded_warning=seeded_warning)
    result = AddNoiseResult("laplace", laplace=release)
    report = release.report
    if report.sensitivity_source == "override" and "max_l1" not in release.input_meta:
        result.warnings.append(
            f"{arg('sensitivity')} on counts that record no bound: the guarantee rests on your "
            "claim that one unit changes the counts by at most that much in L1")
    if s.debug_private and report.dropped_words:
        result.notes.append(f"add-noise: dropped {report.dropped_words} input word(s) outside "
                            f"the vocabulary ({report.dropped_mass:g} pseudo-counts)")
    result.notes.append(
        f"add-noise: Laplace scale {report.scale:g} (sensitivity {float(report.sensitivity):g} "
        f"from {report.sensitivity_source}, epsilon {float(release.epsilon):g}); epsilon spent "
        f"{release.meta.get('epsilon', 'none: seeded noise is not private')}")
    return result


def _add_noise_each(s: AddNoiseSettings, seeded_warning: Callable[[str], None] | None,
                    progress: Callable[[int], object] | None) -> AddNoiseResult:
    """One release of each of ``s.inputs`` into the directory ``s.by_client`` (atomic: the
    directory appears whole or, on an error or a signal, not at all)."""
    import dataclasses
    import os

    from asrpriv.federated.seeds import check_rounds, derive_seed
    from asrpriv.io.output import atomic_directory

    inputs = list(s.inputs)
    if not inputs:
        raise AsrprivError(f"{arg('by_client')}: give the input files (one release of each)")
    if s.output not in (None, "-"):
        raise AsrprivError(f"{arg('by_client')} writes DIR/<input file name>: leave out {arg('output')}")
    names: dict[str, str] = {}
    target = os.path.realpath(s.by_client)
    for path in inputs:
        if path == "-":
            raise AsrprivError(f"{arg('by_client')} reads files, not stdin ('-')")
        name = os.path.basename(path)
        if name in names:
            raise AsrprivError(f"{arg('by_client')}: {names[name]} and {path} have the same file "
                               f"name {name}, and each release is written under its input's name")
        names[name] = path
        if os.path.dirname(os.path.realpath(path)) == target:
            raise AsrprivError(f"{arg('by_client')} {s.by_client} holds the input {path}: the "
                               "releases would replace the private inputs; write them elsewhere")
    check_rounds(s.seed, len(inputs), s.noise_draw)
    if s.seed is not None:
        if seeded_warning is None:
            from asrpriv.talk import seeded_warning
        seeded_warning(f"--seed {s.seed}")
    meter = progress(len(inputs)) if progress is not None else None
    releases = []
    try:
        with atomic_directory(s.by_client) as tmp:
            for i, path in enumerate(inputs, start=1):
                one = dataclasses.replace(
                    s, input=path, output=os.path.join(tmp, os.path.basename(path)),
                    seed=derive_seed(s.seed, i, s.noise_draw), inputs=(), by_client=None)
                releases.append(add_noise(one, seeded_warning=lambda _text: None))
                if meter is not None:
                    meter.update()
    finally:
        if meter is not None:
            meter.close()
    result = AddNoiseResult(s.mechanism, releases=releases)
    seen: set[str] = set()
    for release in releases:  # the same warning once, not once per file
        for line in release.warnings:
            if line not in seen:
                seen.add(line)
                result.warnings.append(line)
    if s.debug_private:
        for path, release in zip(inputs, releases):
            result.notes.extend(f"{path}: {note}" for note in release.notes[:-1])
    result.notes.append(f"add-noise: {len(releases)} independent {s.mechanism} releases, one of "
                        f"each input, in {s.by_client}; the last one: {releases[-1].notes[-1]}")
    return result
