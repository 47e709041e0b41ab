# The peers' Python worker (see runner/src/peers/mod.rs): it prepares a job (PyTorch's
# transpose, a Python block's transpose(x), torch.sum), checks its output, and returns the
# samples it is asked for; the runner applies the stopping rule and asks for more.
#
# Protocol, one JSON object per line: first {"ready": "torch X"} or {"unavailable": why}; then
#   {"job": {"op": NAME, ...}, "flush_bytes", "warmup", "take": N}
#                                                      -> {"ok", "samples_ms", "version"}
#   {"more": N}                                        -> {"ok": true, "samples_ms"}
#   {"release": true}                                  -> {"released": true}
# or {"ok": false, "mismatch"}, {"unavailable"}, {"error": traceback} for a job.
#
# Each sample queues a GPU-side sleep, the L2 flush, the start event, the operation and the end
# event. The sleep keeps the GPU busy while Python enqueues the rest, so the flush, the start
# event and the operation then run back to back, as they do for the course's kernels: the time
# between the events is the operation's, not Python's launch overhead (tens of microseconds for
# a Triton launch, comparable to the kernel itself), and the operation starts right after the
# flush, not after an idle gap.
import json, os, sys, traceback
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


def reply(message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()


try:
    import torch
except Exception as error:
    reply({"unavailable": sys.executable + " has no torch (" + type(error).__name__
           + "): KERNELBOOK_PYTHON names the interpreter to use"})
    sys.exit(0)
try:
    import triton  # imported now, while nothing waits for it
except Exception:
    pass
reply({"ready": "torch " + torch.__version__})

SLEEP_CYCLES = 1_000_000  # about 0.5 ms at 2 GHz: longer than any Python launch
HOST = {}
CURRENT = {}


def host_buffers(x):
    # Page-locked copies of the input and of its transpose, kept for the next request of the
    # same shape: copying 256 MiB into fresh pageable memory takes longer than the kernel's
    # whole measurement.
    key = (tuple(x.shape), x.dtype)
    if key not in HOST:
        HOST.clear()
        rows, cols = x.shape
        HOST[key] = (torch.empty(rows, cols, dtype=x.dtype, pin_memory=True),
                     torch.empty(cols, rows, dtype=x.dtype, pin_memory=True))
    return HOST[key]


class Refused(Exception):
    """A job that gives an answer other than samples."""

    def __init__(self, answer):
        self.answer = answer


def transpose_op(job, version):
    block_path = job.get("block")
    if not block_path:
        return (lambda x: x.t().contiguous()), version
    # A Python block of the book: it must define transpose(x) returning the transpose.
    namespace = {"__name__": "kernelbook_block"}
    try:
        exec(compile(open(block_path).read(), block_path, "exec"), namespace)
    except ModuleNotFoundError as error:
        raise Refused({"unavailable": "python3 has no " + str(error.name) + " (the block imports it)"})
    if not callable(namespace.get("transpose")):
        raise Refused({"error": "the block defines no function transpose(x)"})
    if "triton" in sys.modules:
        version = "triton " + sys.modules["triton"].__version__ + ", " + version
    return namespace["transpose"], version


def check_transpose(x, y, version):
    x_host, y_host = host_buffers(x)
    x_host.copy_(x)
    expected = x_host.t().contiguous()
    if tuple(y.shape) == tuple(expected.shape):
        y_host.copy_(y)
        actual = y_host
    else:
        actual = y.cpu()
    if tuple(actual.shape) == tuple(expected.shape) and torch.equal(actual, expected):
        return
    mismatch = None
    if actual.shape == expected.shape:
        wrong = (actual != expected).flatten().nonzero()
        i = int(wrong[0]) if len(wrong) else 0
        mismatch = {"index": i, "expected": repr(float(expected.flatten()[i])),
                    "actual": repr(float(actual.flatten()[i])), "count": int(len(wrong))}
    raise Refused({"ok": False, "mismatch": mismatch, "version": version})


def check_sum(job, x, y, version):
    expected = float(x.double().sum())
    actual = float(y)
    if abs(expected - actual) <= job["atol"] + job["rtol"] * abs(expected):
        return
    mismatch = {"index": 0, "expected": repr(expected), "actual": repr(actual), "count": 1}
    raise Refused({"ok": False, "mismatch": mismatch, "version": version})


def torch_transpose(job, version):
    op, version = transpose_op(job, version)
    x = torch.rand(int(job["rows"]), int(job["cols"]), device="cuda") * 2 - 1
    return op, x, version, lambda y: check_transpose(x, y, version)


def torch_sum(job, version):
    x = torch.rand(int(job["n"]), device="cuda") * 2 - 1
    return torch.sum, x, version, lambda y: check_sum(job, x, y, version)


# The jobs, by the name of their builtin (core/src/builtins.rs): each makes its input and
# returns the operation, its input, the implementation's name and the check of one output.
JOBS = {
    "torch_transpose": torch_transpose,
    "python_transpose": torch_transpose,  # the block's transpose(x), found by transpose_op
    "torch_sum": torch_sum,
}


def prepare(job):
    """The operation, its input and the implementation's name, checked once."""
    make = JOBS.get(job["op"])
    if make is None:
        raise Refused({"error": "the worker has no job " + repr(job["op"])})
    op, x, version, check = make(job, "torch " + torch.__version__)
    y = op(x)
    torch.cuda.synchronize()
    check(y)
    return op, x, version


def take(count):
    op, x, flush = CURRENT["op"], CURRENT["x"], CURRENT["flush"]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(count):
        torch.cuda._sleep(SLEEP_CYCLES)
        flush.fill_(CURRENT["n"] % 251)
        CURRENT["n"] += 1
        start.record()
        op(x)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return samples


def start_job(request):
    if not torch.cuda.is_available():
        return {"unavailable": "torch " + torch.__version__ + " sees no CUDA GPU"}
    CURRENT.clear()
    try:
        op, x, version = prepare(request["job"])
    except Refused as refused:
        return refused.answer
    for _ in range(request["warmup"]):
        op(x)
    torch.cuda.synchronize()
    flush = torch.empty(request["flush_bytes"], dtype=torch.uint8, device="cuda")
    CURRENT.update(op=op, x=x, flush=flush, n=0)
    return {"ok": True, "samples_ms": take(request["take"]), "version": version}


def answer(request):
    if "job" in request:
        return start_job(request)
    if "more" in request:
        if not CURRENT:
            return {"error": "more samples asked of no job"}
        return {"ok": True, "samples_ms": take(request["more"])}
    CURRENT.clear()
    # Give the memory back: the labs measured next may need all of it.
    torch.cuda.empty_cache()
    return {"released": True}


for line in sys.stdin:
    try:
        message = answer(json.loads(line))
    except Exception:
        message = {"error": traceback.format_exc(limit=-3)}
    if message.get("ok") is not True and "released" not in message:
        # A job that ends without samples is not released by the runner: free it here.
        CURRENT.clear()
        torch.cuda.empty_cache()
    reply(message)
