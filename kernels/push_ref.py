# Tangled by `kernelbook tangle` from book/src/labs/layout.md:153 (sha256 93ebd58cf9ed66f4). Edit the book, not this file.
import numpy as np

def push_ref(n, dt, e, aos=None, soa=None):
    n = int(n)
    fields = aos[: 8 * n].reshape(n, 8).T if aos is not None else soa[: 8 * n].reshape(8, n)
    x, vx, q = (fields[k].astype(np.float64) for k in (0, 3, 7))
    dt, e = np.float64(np.float32(dt)), np.float64(np.float32(e))
    return (x + dt * (vx + dt * q * e)).astype(np.float32)
