# Tangled by `kernelbook tangle` from book/src/labs/lab4-reuse.md:242 (sha256 f86ed606df9afd49). Edit the book, not this file.
# cuBLAS SGEMM through PyTorch: x^T · I is an n × n × n matrix multiply whose exact result is
# x^T, which is what the book's Python harness checks, bit for bit.
import torch

torch.backends.cuda.matmul.allow_tf32 = False  # FP32 FMAs, not TF32 tensor cores
torch.set_float32_matmul_precision("highest")
_identity = {}


def transpose(x):
    key = (x.shape[0], x.device)
    if key not in _identity:  # made on the checked call, before anything is timed
        _identity[key] = torch.eye(x.shape[0], device=x.device, dtype=x.dtype)
    return torch.matmul(x.t(), _identity[key])
