# Tangled by `kernelbook tangle` from book/src/labs/l2-window.md:34 (sha256 1ac3ca41bf85bdef). Edit the book, not this file.
import numpy as np

def hot_cold_ref(n, hot_n, cold=None, hot=None):
    n, hot_n = int(n), int(hot_n)
    return cold[:n] + np.resize(hot[:hot_n], n)
