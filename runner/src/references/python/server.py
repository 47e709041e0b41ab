# kernelbook's NumPy reference server: runs the book's ```python reference=NAME blocks.
#
# Started by runner/src/references/python/mod.rs, which documents the contract a block meets and
# the protocol: one JSON job per line on stdin, one JSON reply per job (with the job's id) on a
# private copy of stdout, in the order the jobs came. Inputs and the output travel in files.
import inspect, json, linecache, os, signal, sys, traceback

# What a block starts (`subprocess.Popen(["sleep", ...])`) dies with this process. The runner
# starts it leading a process group of its own and kills that group when it is done with it;
# when the runner dies instead, the parent-death signal reaches this process only, so it is made
# SIGTERM here, caught, and answered by killing the whole group. The end of the jobs does the same.
LEADER = os.getpgrp() == os.getpid()
PARENT = os.getppid()


def end_group(*_):
    if LEADER:
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


if LEADER and sys.platform.startswith("linux"):
    signal.signal(signal.SIGTERM, end_group)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if os.getppid() != PARENT:  # the runner died before the signal was set
        end_group()

# Replies go to a copy of stdout that only this script writes; whatever a block prints goes to
# stderr. A block cannot read the jobs either: its stdin is /dev/null.
PROTOCOL = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
JOBS = os.fdopen(os.dup(0), "r")
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
sys.stdin = open(os.devnull)


def reply(message):
    PROTOCOL.write(json.dumps(message) + "\n")
    PROTOCOL.flush()


def first_line(error):
    """`ModuleNotFoundError: No module named 'numpy'`: one line, whatever the message holds."""
    lines = str(error).splitlines()
    return type(error).__name__ + (": " + lines[0] if lines else "")


try:
    import numpy as np
except Exception as error:  # a broken install raises more than ImportError
    np, NO_NUMPY = None, first_line(error)
else:
    NO_NUMPY = None
    reply({"reply": "ready", "numpy": np.__version__})

# (name, hash, file, line) -> the namespace the block's source was executed in, once.
NAMESPACES = {}
# A chapter's lines as far as its blocks tell them, for the source lines of tracebacks: the file
# named in a traceback is the chapter, which this process may not be able to read.
CHAPTERS = {}


def remember_lines(block):
    lines = CHAPTERS.setdefault(block["file"], [])
    first = block["line"] - 1
    source = block["source"].splitlines(keepends=True)
    lines.extend("\n" for _ in range(first + len(source) - len(lines)))
    lines[first : first + len(source)] = source
    # An entry without a modification time is never checked against the file system.
    linecache.cache[block["file"]] = (sum(map(len, lines)), None, lines, block["file"])


def block_traceback(error, filename):
    """The exception and the frames of its traceback that are in a reference block."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    text = "".join(traceback.format_exception_only(type(error), error))
    if frames:
        stack = "".join(traceback.StackSummary.from_list(frames).format())
        text = "Traceback (most recent call last):\n" + stack + text
    return text


def namespace_of(block):
    """The block run in a namespace of its own, compiled so that its line numbers are the
    chapter's: the source is preceded by as many empty lines as the chapter has above it."""
    key = (block["name"], block["hash"], block["file"], block["line"])
    if key not in NAMESPACES:
        remember_lines(block)
        padded = "\n" * (block["line"] - 1) + block["source"]
        code = compile(padded, block["file"], "exec")
        namespace = {"__name__": "kernelbook_reference_" + block["name"]}
        exec(code, namespace)
        NAMESPACES[key] = namespace
    return NAMESPACES[key]


def bind(function, available):
    """The keyword arguments to call `function` with, or the reply that says why there are none."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        reason = "its signature cannot be read (" + first_line(error) + ")"
        return None, {"reply": "bad_signature", "reason": reason}
    kwargs, everything = {}, False
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            everything = True
        elif parameter.kind is parameter.VAR_POSITIONAL:
            continue
        elif parameter.kind is parameter.POSITIONAL_ONLY:
            if parameter.default is parameter.empty:
                reason = "`" + parameter.name + "` is positional-only; arguments are passed by name"
                return None, {"reply": "bad_signature", "reason": reason}
        elif parameter.name in available:
            kwargs[parameter.name] = available[parameter.name]
        elif parameter.default is parameter.empty:
            return None, {"reply": "unknown_argument", "argument": parameter.name}
    return (dict(available) if everything else kwargs), None


def param(value):
    # Integers arrive as JSON integers, other numbers as floats, and NaN and the infinities
    # (which JSON has no number for) as the strings "nan", "inf" and "-inf".
    return float(value) if isinstance(value, str) else value


def inputs(job):
    arrays = {}
    for spec in job["inputs"]:
        array = np.fromfile(spec["path"], dtype=spec["dtype"])
        array.flags.writeable = False
        arrays[spec["name"]] = array
    return arrays


def run(job):
    if NO_NUMPY is not None:
        return {"reply": "no_numpy", "reason": NO_NUMPY}
    block, output = job["block"], job["output"]
    try:
        namespace = namespace_of(block)
    except ModuleNotFoundError as error:
        return {"reply": "missing_module", "module": str(error.name)}
    except (Exception, SystemExit) as error:
        return {"reply": "raised", "traceback": block_traceback(error, block["file"])}
    function = namespace.get(block["name"])
    if not callable(function):
        return {"reply": "no_function"}
    available = {name: param(value) for name, value in job["params"].items()}
    available.update(inputs(job))  # the runner sends no name as both
    kwargs, refusal = bind(function, available)
    if refusal is not None:
        return refusal
    try:
        result = np.asarray(function(**kwargs))
    except (Exception, SystemExit) as error:
        return {"reply": "raised", "traceback": block_traceback(error, block["file"])}
    if result.dtype != np.dtype(output["dtype"]):
        return {"reply": "wrong_dtype", "returned": str(result.dtype)}
    if result.size != output["len"]:
        return {"reply": "wrong_size", "shape": list(result.shape)}
    np.ascontiguousarray(result).tofile(output["path"])
    return {"reply": "done"}


for line in JOBS:
    try:
        job = json.loads(line)
    except ValueError:
        continue
    if not isinstance(job, dict):
        continue
    try:
        answer = run(job)
    except Exception:
        answer = {"reply": "failed", "error": traceback.format_exc()}
    answer["id"] = job.get("id")
    reply(answer)

end_group()
