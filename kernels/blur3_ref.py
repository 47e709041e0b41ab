# Tangled by `kernelbook tangle` from book/src/exercises/drill-race.md:33 (sha256 2a25bbfdf445f3f4). Edit the book, not this file.
import numpy as np

def blur3_ref(src):
    zero = np.zeros(1, dtype=np.float32)
    left = np.concatenate((zero, src[:-1]))
    right = np.concatenate((src[1:], zero))
    return ((left + src) + right) * np.float32(1.0 / 3.0)
