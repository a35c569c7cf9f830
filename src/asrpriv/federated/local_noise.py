"""The Gaussian mechanism on one delta file (``add-noise --mechanism gaussian``): local DP."""

from __future__ import annotations

import math

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.federated import gaussian
from asrpriv.privacy.history import Release, new_release_id
from asrpriv.federated.clip import check_clip

#: payload keys of a delta that are exact statistics of the client's data (not in a release)
EXACT_STATS = ("train_words", "train_sentences", "epochs_run")


def noise_delta_file(path: str, output: str, noise_multiplier: float, clip: float | None,
                     seed: int | None, allow_seeded: bool = False) -> tuple[float, float]:
    """Clip the delta at ``path`` to L2 norm C, add N(0, (z C)^2) per coordinate, write ``output``.

    C is ``clip``, else the ``clip_l2`` the delta records (its client clipped it). The release
    (gaussian, unit client, sample_rate 1, rounds 1) is appended to the delta's history; the
    other payload keys (init_fingerprint, client, ...) are kept, ``clip_l2`` is set to C.
    A release holds no exact statistic of the private data: the client's word and sentence
    counts (``train_words``, ``train_sentences``, ``epochs_run``) are dropped and ``weight``
    becomes 1 (a server weights noised deltas uniformly).

    Returns:
        ``(L2 norm before clipping, C)``.
    """
    from asrpriv.nnlm.modelfile import delta_weight, read_model_file, save_model, vocab_and_config
    from asrpriv.privacy.state import HEADER_KEYS, after_release
    from asrpriv.provenance import Inputs

    if not math.isfinite(noise_multiplier) or noise_multiplier < 0:
        raise AsrprivError(f"{arg('noise_multiplier')} must be finite and >= 0")
    payload = read_model_file(path)
    if payload["kind"] != "delta":
        raise InputError(path, None, f"is a {payload['kind']} file, expected a delta")
    delta_weight(payload, path)  # carried to the server, which weights the update by it
    vocab, config = vocab_and_config(payload, path)
    state = payload["state_dict"]
    for name, tensor in state.items():
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            raise InputError(path, None, f"parameter {name} holds NaN or inf")
    if clip is None:
        recorded = payload.get("clip_l2")
        if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
            raise AsrprivError(f"{path} records no clip bound (clip_l2): give {arg('clip')} C")
        clip = float(recorded)
    check_clip(clip)
    privacy = Inputs(allow_seeded).add_payload(path, payload)
    _, norm, _ = gaussian.noisy_delta(state, noise_multiplier, clip, gaussian.NoiseSource(seed))
    extra = {k: v for k, v in payload.items()
             if k not in ("format", "format_version", "kind", "config", "vocab", "state_dict",
                          "clip_l2", *HEADER_KEYS)}
    if noise_multiplier > 0:  # covers the client's clipped update, not what its start model holds
        for key in EXACT_STATS:
            extra.pop(key, None)
        extra["weight"] = 1
        release = Release(new_release_id(), "gaussian", "client",
                          {"noise_multiplier": float(noise_multiplier), "sensitivity_l2": float(clip),
                           "sample_rate": 1.0, "rounds": 1}, seeded=seed is not None)
        privacy = after_release(privacy, release, covers=("client update",), flat=True)
    save_model(output, state, vocab, config, kind="delta", clip_l2=float(clip), privacy=privacy,
               **extra)
    return norm, clip
