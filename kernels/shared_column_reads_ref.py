# Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:323 (sha256 2f41cb4774cc296c). Edit the book, not this file.
import numpy as np

def shared_column_reads_ref(words, blocks, reps):
    tile = words[: blocks * 1024].reshape(blocks, 32, 32)          # tile[b, i, j]
    row = tile.sum(axis=2, dtype=np.uint32)                        # row[b, x]
    sums = np.repeat((row * np.uint32(reps // 32))[:, None, :], 8, axis=1)   # sums[b, y, x]
    y = np.arange(8)
    for r in range(reps % 32):
        sums += tile[:, :, (y + r) % 32].transpose(0, 2, 1)       # tile[b, x, (y + r) % 32]
    return sums
