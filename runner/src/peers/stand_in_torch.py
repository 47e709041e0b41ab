# A stand-in for PyTorch, on NumPy and the CPU, for the tests of worker.py: just what its
# sum and transpose jobs use when the output is right. Each timed operation takes 1 ms by the stand-in events.
import numpy as np

__version__ = "0.0-stand-in"
uint8 = np.uint8


class Tensor:
    def __init__(self, array):
        self.array = np.asarray(array)

    def __mul__(self, k):
        return Tensor(self.array * np.float32(k))

    def __sub__(self, k):
        return Tensor(self.array - np.float32(k))

    def double(self):
        return Tensor(self.array.astype(np.float64))

    def sum(self):
        return Tensor(self.array.sum())

    def __float__(self):
        return float(self.array)

    def fill_(self, value):
        self.array.fill(value)

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    def t(self):
        return Tensor(self.array.T)

    def contiguous(self):
        return Tensor(np.ascontiguousarray(self.array))

    def copy_(self, other):
        self.array[...] = other.array


def equal(a, b):
    return bool(np.array_equal(a.array, b.array))


def rand(*shape, device=None):
    return Tensor(np.random.default_rng(7).random(shape, dtype=np.float32))


def empty(*shape, dtype=None, device=None, pin_memory=False):
    return Tensor(np.empty(shape, dtype=dtype))


def sum(x):
    return Tensor(x.array.sum(dtype=np.float32))


class _Event:
    def __init__(self, enable_timing=False):
        self.at = 0.0

    def record(self):
        cuda.clock += 1.0
        self.at = cuda.clock

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return end.at - self.at


class cuda:
    clock = 0.0
    Event = _Event

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def _sleep(cycles):
        pass

    @staticmethod
    def empty_cache():
        pass
