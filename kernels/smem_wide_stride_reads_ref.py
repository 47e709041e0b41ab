# Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:537 (sha256 ebd5b4f02272b085). Edit the book, not this file.
import numpy as np

def smem_wide_stride_reads_ref(words, blocks, reps, stride, width):
    row = 32 // width                                                        # elements per bank row
    element = np.arange(32)[:, None] * stride + row * np.arange(32)[None, :]  # element[lane, j]
    first = element * width
    per_lane = sum(words[first + k] for k in range(width)).sum(axis=1, dtype=np.uint32)
    return np.tile(per_lane * np.uint32(reps // 32), blocks * 8)             # 8 warps per block
