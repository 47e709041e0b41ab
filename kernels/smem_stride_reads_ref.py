# Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:434 (sha256 fad4d73e4efe003c). Edit the book, not this file.
import numpy as np

def smem_stride_reads_ref(words, blocks, reps, stride):
    read = np.arange(32)[:, None] * stride + 32 * np.arange(32)[None, :]   # read[lane, j]
    per_lane = words[read].sum(axis=1, dtype=np.uint32) * np.uint32(reps // 32)
    return np.tile(per_lane, blocks * 8)                                    # 8 warps per block
