# Tangled by `kernelbook tangle` from book/src/labs/reduction.md:320 (sha256 5e9523960e14e97b). Edit the book, not this file.
import numpy as np

def sum_ref(src, n, count=None):
    count = int(n if count is None else count)
    return np.array([src[:count].sum(dtype=np.float64)], dtype=np.float32)
