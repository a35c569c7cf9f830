"""Pairwise Euclidean geometry of many high-dimensional items through their centred Gram matrix.

For items x_1..x_n in R^d (d up to millions), the direct route holds the n x d matrix X.
Here X is read in dimension blocks B (n x b); each block is centred on its own column means
(centring is per dimension, so per-block centring is exact) and ``G += B_c B_c^T`` is accumulated
in float64. Memory grows with n^2 (plus one block), not with n x d.

Squared distances follow from G:  D2_ij = G_ii + G_jj - 2 G_ij  (clipped at 0). Centring first
matters numerically: deltas fine-tuned from one model share a large common component, and
without centring the subtraction would cancel most significant digits.

The centred Gram matrix also gives an exact isometric embedding E = U sqrt(L) (eigenvectors and
eigenvalues of G, rank <= n - 1): ||E_i - E_j|| = ||x_i - x_j||, and E E^T = G. Every method of the
audit that needs coordinates (k-means, the linear probe) runs on E, which is the same as running
on X: k-means depends only on distances, and an L2-regularized linear model with an intercept
depends only on the centred inner products (representer theorem).
"""

from __future__ import annotations

from dataclasses import dataclass

#: bytes of one float64 block (n x b) read at a time
BLOCK_BYTES = 64 << 20


@dataclass
class Geometry:
    """The centred Gram matrix of the items and what follows from it."""

    gram: "object"          # (n, n) float64, centred
    dim: int                # d, the items' dimension

    def squared_distances(self):
        import numpy as np

        diag = np.diag(self.gram)
        d2 = diag[:, None] + diag[None, :] - 2.0 * self.gram
        np.maximum(d2, 0.0, out=d2)
        np.fill_diagonal(d2, 0.0)
        return d2

    def distances(self):
        import numpy as np

        return np.sqrt(self.squared_distances())

    def condensed_distances(self):
        """The condensed distance vector that ``scipy.cluster.hierarchy.linkage`` takes."""
        from scipy.spatial.distance import squareform

        d = self.distances()
        d = (d + d.T) / 2.0  # exactly symmetric for squareform's check
        return squareform(d, checks=False)

    def embedding(self, tol: float = 1e-10):
        """Coordinates E (n x r) with E E^T = G: an exact isometric embedding of the items."""
        import numpy as np

        values, vectors = np.linalg.eigh((self.gram + self.gram.T) / 2.0)
        keep = values > tol * max(values.max(), 1e-300)
        return vectors[:, keep] * np.sqrt(values[keep])


def centred_gram(blocks, n: int, progress=None) -> Geometry:
    """Accumulate the centred Gram matrix over ``(n, b)`` blocks that together cover every dimension.

    Args:
        blocks: an iterable of float arrays, each (n, b_k), sum of b_k = d.
        n: the number of items.
        progress: optional callable(dimensions_done) for a progress bar.
    """
    import numpy as np

    gram = np.zeros((n, n), dtype=np.float64)
    dim = 0
    for block in blocks:
        block = np.asarray(block, dtype=np.float64)
        if block.shape[0] != n:
            raise ValueError(f"block has {block.shape[0]} rows, expected {n}")
        centred = block - block.mean(axis=0, keepdims=True)
        gram += centred @ centred.T
        dim += block.shape[1]
        if progress is not None:
            progress(block.shape[1])
    gram = (gram + gram.T) / 2.0
    return Geometry(gram=gram, dim=dim)


def block_dims_for(n: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Dimensions per block so that one float64 block of n rows takes about ``block_bytes``."""
    return max(256, block_bytes // (8 * max(n, 1)))
