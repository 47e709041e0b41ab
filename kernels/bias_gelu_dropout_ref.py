# Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:151 (sha256 d4d72053d7835562). Edit the book, not this file.
import numpy as np

def bias_gelu_dropout_ref(x, bias, rows, cols, threshold, seed):
    v = (x[: rows * cols].reshape(rows, cols) + bias).ravel().astype(np.float64)
    gelu = 0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v * v * v)))
    h = np.arange(rows * cols, dtype=np.uint32) ^ np.uint32(seed * 0x9E3779B9 % 2**32)
    h ^= h >> 16
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> 13
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> 16
    scale = 2.0**32 / (2.0**32 - threshold)
    return np.where(h < threshold, 0.0, gelu * scale).astype(np.float32)
