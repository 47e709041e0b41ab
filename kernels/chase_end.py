# Tangled by `kernelbook tangle` from book/src/labs/hierarchy-on-your-gpu.md:78 (sha256 8e6a0305dacae573). Edit the book, not this file.
import numpy as np

def chase_end(nodes, spacing, warm, steps):
    mask = nodes - 1
    bits = bin(mask).count("1")
    x = (warm + steps) % nodes & mask       # the position in the lap; then chase_slot(x, nodes)
    x = (x * 0x9E3779B1) & mask
    x ^= x >> max(bits // 2, 1)
    x = (x * 0x85EBCA6B) & mask
    x ^= x >> max(bits // 3, 1)
    return np.array([(x & mask) * spacing], dtype=np.uint32)
