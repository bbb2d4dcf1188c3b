"""Rule tables of the static checks: the PyTorch allow-lists and the banned-name prefixes.

Every name here is a resolved dotted name (import aliases already expanded by ``module``).
Strict mode lets ModelNew's call path use only allocation, view, copy and metadata calls from
PyTorch (``TORCH_OK``); any other ``torch.*`` call computes. A method on a receiver known to hold a
tensor computes unless it is in ``TENSOR_METHODS_OK``; on receivers of unknown type only the
``COMPUTE_METHODS`` names count as computing. The ``HOST_*`` tables are what moves the work to the
host (``host_compute``, see ``values``).
"""

from __future__ import annotations


def _names(text: str, prefix: str = "") -> frozenset[str]:
    return frozenset(prefix + word for word in text.split())


# Allocation / view / copy / metadata calls allowed in strict mode; every other torch.* call computes.
# Random fills are fresh tensors too: they compute nothing from the inputs, and a reference that draws
# its initial states in forward (KernelBench L3/35's LSTM) is matched only by PyTorch's own generator.
# triu_indices / tril_indices are index tables from sizes alone, like arange (DLRM's pair list).
TORCH_FRESH = _names(
    "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange "
    "rand rand_like randn randn_like randint randint_like triu_indices tril_indices",
    "torch.",
)
# Views by their ATen schema (the runner's `strict_ops` lets the same ops through): the function forms of
# the view methods below, and broadcast views with zero strides a kernel reads through its strides
TORCH_VIEWS = _names(
    "reshape permute transpose t flatten unsqueeze squeeze narrow chunk split unbind as_strided movedim moveaxis "
    "swapaxes swapdims select unflatten tensor_split broadcast_to broadcast_tensors",
    "torch.",
)
# Views of every tensor argument, not of the first alone
TORCH_VIEWS_OF_EACH = _names("broadcast_tensors", "torch.")
TORCH_OK = (
    TORCH_FRESH
    | TORCH_VIEWS
    | _names(
        "tensor as_tensor clone numel Size device dtype finfo iinfo is_tensor is_floating_point is_grad_enabled "
        "broadcast_shapes result_type promote_types get_default_dtype no_grad inference_mode enable_grad "
        "cuda.synchronize cuda.current_device cuda.current_stream cuda.default_stream cuda.is_available "
        "cuda.device cuda.device_count cuda.get_device_properties cuda.get_device_capability cuda.get_device_name "
        # questions about the process's modes and device that read no tensor (a launcher picking its path);
        # not `cuda.is_current_stream_capturing`, which would tell a graph-captured timed call from a checked one
        "cuda.device_of is_inference_mode_enabled is_autocast_enabled "
        "get_float32_matmul_precision compiler.is_compiling accelerator.is_available "
        "accelerator.current_accelerator accelerator.device_count accelerator.current_device_index "
        "nn.Parameter nn.Buffer nn.Module nn.ModuleList nn.ModuleDict nn.ParameterList nn.ParameterDict "
        # named tuples that torch.max/sort/topk... return, built from tensors already computed
        "return_types.max return_types.min return_types.sort return_types.topk return_types.kthvalue "
        "return_types.median return_types.nanmedian return_types.mode return_types.aminmax "
        "return_types.cummax return_types.cummin",
        "torch.",
    )
)
# Switches and annotations scoped to a `with` block: set on entry and restored on exit, they compute nothing
# (a profiler or NVTX range names the work inside it; grad mode only decides what autograd records). A bare
# call would set process state instead (`torch.set_grad_enabled(False)` as a statement), so only as a with item.
SCOPED_CONTEXTS = _names(
    "set_grad_enabled autograd.set_grad_enabled profiler.record_function autograd.profiler.record_function "
    "cuda.nvtx.range",
    "torch.",
)
# Autocast switched off for the block (`enabled=False` written as a constant): PyTorch ops inside run at their
# own precision; switched on, it would lower them (a precision shortcut), so that stays a call that computes
AUTOCAST = _names("autocast amp.autocast cuda.amp.autocast", "torch.")
META_METHODS = _names(
    "size stride numel nelement dim ndimension is_contiguous data_ptr element_size storage_offset get_device "
    "is_floating_point untyped_storage"
)
ALIAS_METHODS = _names(
    "view view_as reshape reshape_as contiguous permute transpose t expand expand_as unsqueeze squeeze flatten "
    "unflatten movedim chunk split unbind narrow as_strided select detach to cuda cpu float half bfloat16 double "
    "int long bool type requires_grad_ copy_ zero_ fill_ "
    # views as well: other spellings of the above, a broadcast, sliding windows (`unfold`, im2col by strides)
    "moveaxis swapaxes swapdims tensor_split split_with_sizes broadcast_to unfold"
)
NEW_METHODS = _names("new_empty new_zeros new_ones new_full")
TENSOR_METHODS_OK = META_METHODS | ALIAS_METHODS | NEW_METHODS | _names("clone item tolist new_tensor")
COMPUTE_METHODS = _names(
    "matmul mm bmm mv dot einsum softmax log_softmax relu gelu silu sigmoid tanh exp exp2 expm1 log log2 log1p sqrt "
    "rsqrt sum mean var std amax amin max min argmax argmin cumsum cumprod prod norm abs neg pow mul div sub addmm "
    "baddbmm addcmul addcdiv clamp clamp_min clamp_max clip where masked_fill layer_norm group_norm conv1d conv2d "
    "conv3d linear lerp sin cos erf floor ceil round square reciprocal logsumexp topk scatter gather index_select"
)
# Host copies of tensor data (strict only, ``host_compute``). `.item()` / `.tolist()` / float() / int() of data
# derived from the inputs give host values (fine as kernel arguments); computing with them is not: arithmetic,
# comparisons, truth tests, the builtins below, their methods and non-backend library calls on them. NumPy
# views (`.numpy()`), text and bytes of tensor data, and a tensor's raw storage are host round trips at once.
HOST_READS = _names("item tolist")
HOST_CONVERSIONS = _names("float int complex")
HOST_BUILTINS = _names(
    "bool str repr format ascii hex oct bin chr ord bytes bytearray memoryview map filter any all"
)
COMPUTE_BUILTINS = _names("sum max min abs pow round sorted divmod")
HOST_FORMATTERS = _names("format format_map join")
STORAGE_METHODS = _names("untyped_storage storage _typed_storage")
STORAGE_QUERIES = _names("data_ptr nbytes size element_size device dtype")
# Non-PyTorch libraries that may be handed tensors in strict mode: the backends (launch-side helpers such as
# triton.reinterpret, cute's from_dlpack), type hints, partial application and pure copies / views.
TENSOR_LIBRARIES_OK = _names("triton cutlass typing functools.partial copy einops.rearrange")
MUTATORS = _names("append extend insert update setdefault add __setitem__ appendleft put")
CONTAINER_READS = _names("get pop setdefault values items keys __getitem__")
META_ATTRS = _names("shape dtype device ndim is_cuda layout itemsize nbytes requires_grad")
PTR_KEYS = _names("data_ptr id hash untyped_storage storage _cdata")
COMPILED = _names("cutlass.cute.compile triton.compile")
TRITON_JIT = _names("triton.jit triton.runtime.jit.jit triton.runtime.jit")
CUTE_DECORATORS = _names("cutlass.cute.kernel cutlass.cute.jit")

# Resolved-name prefixes -> (code, why). Checked on imports and on every maximal Name/Attribute chain.
NAME_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        _names("torch.compile torch.jit torch._dynamo torch._inductor torch.export torch.fx"),
        "torch_compile",
        "uses the PyTorch compiler, which hides the work the kernel must do",
    ),
    (
        _names(
            "torch.cuda.Stream torch.cuda.stream torch.cuda.set_stream torch.cuda.Event torch.cuda.ExternalStream "
            "torch.cuda.StreamContext torch.cuda.streams torch.Stream torch.Event"
        ),
        "side_stream",
        "creates or switches CUDA streams/events; work must run on the current stream",
    ),
    (
        _names(
            "threading _thread multiprocessing concurrent asyncio subprocess signal pty sched torch.multiprocessing "
            "torch.futures os.fork os.forkpty os.system os.popen os.posix_spawn os.posix_spawnp os.kill os.spawnl "
            "os.spawnle os.spawnlp os.spawnlpe os.spawnv os.spawnve os.spawnvp os.spawnvpe os.execl os.execle "
            "os.execlp os.execlpe os.execv os.execve os.execvp os.execvpe"
        ),
        "thread_spawn",
        "starts threads, processes or async work",
    ),
    (
        _names(
            "ctypes _ctypes cffi gc inspect traceback dis sys._getframe sys.settrace sys.setprofile sys.modules "
            # NumPy's bridge to ctypes (`np.ctypeslib.ctypes` is the module), and its view with unchecked
            # strides, which reaches any address (a stride from its own array to a tensor's `data_ptr()`)
            "sys._current_frames numpy.ctypeslib numpy.lib.stride_tricks.as_strided"
        ),
        "introspection",
        "inspects or manipulates the interpreter",
    ),
    (_names("builtins unittest.mock mock contextvars"), "patching", "can patch the harness's functions"),
    (
        # a kernel registered from Python replaces what an ATen op computes for every caller (`x.clone()`
        # computing relu below the strict trace; the runner's own copies); a custom op gets any name
        _names("torch.library torch.ops.load_library torch.ops.import_module torch.classes"),
        "patching",
        "registers kernels or ops with PyTorch's dispatcher, which can change what any PyTorch op computes",
    ),
    (
        _names(
            "importlib runpy pickle marshal code codeop dill cloudpickle types.FunctionType types.CodeType "
            "types.ModuleType torch.utils.cpp_extension torch.cuda.jiterator cupy numba pycuda"
        ),
        "dynamic_code",
        "builds or loads code at run time (or kernels outside the chosen backend)",
    ),
    (
        _names(
            "reference __main__ kernelevolve io pathlib shutil tempfile glob socket urllib http requests os.open "
            "os.read os.listdir os.scandir os.walk torch.load torch.save torch.serialization numpy.load"
        ),
        "reference_access",
        "reads files, the reference or the harness",
    ),
    (
        _names(
            "torch.utils._python_dispatch torch.overrides torch.Tensor._make_subclass torch.Tensor.as_subclass"
        ),
        "lazy_result",
        "makes tensor subclasses whose work can be deferred",
    ),
    (
        _names(
            "logging.handlers torch.utils.data os.register_at_fork os.killpg os.setsid os.setpgid os.pidfd_open"
        ),
        "thread_spawn",
        "starts threads or processes, or signals them, through a library",
    ),
    (
        # submodules of allowed packages that build and import C or Fortran, load code from a package or a
        # hub, or start processes and remote calls
        _names(
            "numpy.f2py numpy.distutils numpy.testing numpy.lib.format numpy.lib.npyio numpy.DataSource "
            "torch.hub torch.package torch.utils.model_zoo torch.distributed torch.onnx torch.utils.benchmark "
            "torch.utils.collect_env torch.utils.bottleneck torch.utils.show_pickle torch.utils.jit"
        ),
        "dynamic_code",
        "builds, loads, fetches or runs code (C, Fortran, a package, a hub, a benchmark's statement given as "
        "text), or reaches files or processes",
    ),
    (
        _names("timeit pkgutil pydoc cProfile profile trace pdb bdb doctest logging.config string.Formatter"),
        "dynamic_code",
        "runs code given as text, or reaches objects by a dotted name given as text",
    ),
    (_names("weakref atexit"), "lazy_result", "runs code later, after the call has returned"),
    (
        # a string annotation is text these evaluate as code with the module's builtins (`eval`): in 3.11 a
        # lambda passes their type check; singledispatch's `register` reads a function's annotations so
        _names(
            "typing.get_type_hints typing.ForwardRef typing_extensions.get_type_hints typing_extensions.ForwardRef "
            "typing_extensions.evaluate_forward_ref typing_extensions.get_annotations functools.singledispatch "
            "functools.singledispatchmethod"
        ),
        "dynamic_code",
        "evaluates annotations given as text as code",
    ),
    (
        _names("logging.currentframe"),
        "introspection",
        "hands out the caller's frame (`sys._getframe(1)`): its builtins and the frames above it",
    ),
    (
        _names("faulthandler sys.addaudithook sys.audit"),
        "introspection",
        "runs code or writes tracebacks on interpreter events and signals (frames handed to a hook)",
    ),
    (
        _names(
            "mmap os.fwalk os.truncate os.ftruncate os.remove os.unlink os.rename os.replace os.mkdir os.makedirs "
            "os.rmdir os.symlink os.link os.chmod os.memfd_create os.mkfifo os.mknod torch.from_file "
            "numpy.memmap numpy.fromfile numpy.loadtxt numpy.genfromtxt numpy.save numpy.savez numpy.savetxt"
        ),
        "reference_access",
        "maps, lists or changes files (the judge's shared memory among them)",
    ),
    (_names("contextlib.suppress"), "try_except_fallback", "suppresses failures of the kernel work"),
    (
        # each makes attributes (or class attributes) of a mapping's keys, so of names chosen at run time
        _names(
            "dataclasses.make_dataclass types.new_class argparse.Namespace optparse.Values logging.makeLogRecord"
        ),
        "dynamic_code",
        "makes objects or classes whose attribute names are chosen at run time (a library's protocol names "
        "among them)",
    ),
    (
        _names("operator.methodcaller operator.attrgetter"),
        "dynamic_code",
        "calls methods or reads attributes by a name chosen at run time",
    ),
)
# What a kernel may read of `sys`; every other member installs interpreter hooks (audit, exception,
# unraisable, async-generator hooks), tunes the interpreter or reaches its state
SYS_OK = _names(
    "maxsize maxunicode float_info int_info hash_info float_repr_style version version_info hexversion "
    "implementation platform byteorder getsizeof getrecursionlimit getdefaultencoding stdout stderr"
)
# What a kernel may use of `os`: the environment, path helpers and constants. The rest works on files,
# processes and raw file descriptors, among them the runner's channel to the judge (`os.write` of a forged
# reply frame, `os.dup2` over it): doors found one by one before, now closed as a class.
OS_OK = _names(
    "environ getenv path sep linesep name curdir pardir extsep altsep pathsep devnull cpu_count "
    "process_cpu_count getpid"
)
# The modules a candidate may import (roots): the kernel languages, PyTorch, NumPy and pure helpers of the
# standard library. Every other module is a door the name rules below would have to list member by member:
# `posix` is `os` unfiltered (fork, read), `imp.load_source` runs a file the runner may write, `wrapt` and
# `hydra` patch or fetch objects by a dotted name given as text (the harness's own), `jinja2`, `sympy` and
# `yaml` evaluate text, `faiss` and `safetensors` read raw addresses; the environment holds many more.
CANDIDATE_MODULES = _names(
    "torch triton numpy cutlass cuda einops __future__ typing typing_extensions dataclasses collections "
    "functools itertools operator enum abc numbers contextlib copy types re string textwrap warnings logging "
    "random time math cmath os posixpath ntpath genericpath sys struct array heapq bisect statistics "
    "fractions decimal json hashlib zlib base64 binascii pprint keyword"
)
# Triton's doors beyond kernels: compiling and importing C (`runtime.build`, the backends' launchers),
# loading binaries and its file caches (`runtime.driver`'s utilities, `runtime.cache`), its compiler entry
# points and process-wide switches and hooks (`knobs`); device queries through the driver stay legal
TRITON_DOORS = _names(
    "triton.runtime.build triton.runtime.cache triton.runtime.RedisRemoteCacheBackend "
    "triton.runtime.RemoteCacheBackend triton.backends triton.compiler triton.tools.compile triton.tools.link "
    "triton.knobs triton.testing.nvsmi triton.runtime.driver.active.utils.load_binary "
    "triton.runtime.driver.active.launcher_cls"
)
# What a kernel may use of cuda-python: the stream type a CuTe launcher is handed. Its driver, runtime and
# NVRTC compile and launch kernels outside the chosen backend (CUDA C by `cuModuleLoadData`) and copy
# device memory by raw address (`cuMemcpyDtoH`), as cupy or pycuda would
CUDA_PYTHON_OK = _names("cuda cuda.bindings cuda.bindings.driver cuda.bindings.driver.CUstream")
GRAPH_NAMES = _names(
    "torch.cuda.CUDAGraph torch.cuda.graph torch.cuda.graphs torch.cuda.make_graphed_callables"
)
GLOBAL_STATE_CALLS = _names(
    "torch.manual_seed torch.seed torch.set_rng_state torch.random torch.cuda.manual_seed torch.cuda.manual_seed_all "
    "torch.cuda.set_rng_state torch.set_default_dtype torch.set_default_device torch.set_default_tensor_type "
    "torch.set_float32_matmul_precision torch.set_flush_denormal torch.use_deterministic_algorithms "
    "torch.set_deterministic_debug_mode torch.set_num_threads torch.set_num_interop_threads torch.cuda.set_device "
    "numpy.random.seed random.seed"
)
BUILTIN_RULES = {
    "exec": ("dynamic_code", "exec runs code built at run time"),
    "eval": ("dynamic_code", "eval runs code built at run time"),
    "compile": ("dynamic_code", "compile builds code at run time"),
    "__import__": ("dynamic_code", "__import__ loads modules dynamically"),
    "open": ("reference_access", "open reads or writes files"),
    "globals": ("introspection", "globals() reaches module state by name"),
    "locals": ("introspection", "locals() reaches frame state by name"),
    "vars": ("introspection", "vars() reaches object/module state by name"),
    "__builtins__": ("patching", "__builtins__ can patch builtins"),
    "Model": ("reference_access", "uses the reference Model; compute the result in your own kernel"),
    "get_inputs": ("reference_access", "uses the reference's get_inputs"),
    "get_init_inputs": ("reference_access", "uses the reference's get_init_inputs"),
}
FRAME_ATTRS = _names(
    "f_back f_locals f_globals f_code tb_frame gi_frame cr_frame __globals__ __closure__ __code__ "
    "__subclasses__ __mro__ __bases__ __base__ __self__ __func__ __wrapped__ __getattribute__ __get__ "
    "__reduce__ __reduce_ex__ __loader__ __spec__ __objclass__ __traceback__ __builtins__ __import__ "
    # a function's defaults hold whatever it was given (a wrapper's original); `mro()` is `__mro__` by a method
    "__defaults__ __kwdefaults__ mro "
    # a frame's builtins dict holds getattr, exec and __import__ by key; an async generator's frame
    "f_builtins f_trace ag_frame"
)
# Attributes that turn text into code or hand a mode every op: an object's annotations (set at run time,
# they are text `typing` evaluates and names `dataclass` writes into the code it generates), and the
# tensor-subclass and mode hooks, however they are bound (a class-body assignment, not only a `def`)
TEXT_CODE_ATTRS = _names("__annotations__")
OVERRIDE_HOOKS = _names("__torch_dispatch__ __torch_function__")
# A finalizer runs when its object is freed, whenever the garbage collector gets to a cycle: inside the
# harness's own work, a point a candidate can line up by counting allocations (`lazy_output_via_gc_finalizer`)
FINALIZERS = _names("__del__")
# Standard-library roots whose private members (`typing._eval_type`, `warnings._setoption`) are internals:
# the kernel-language and array packages have rules of their own
STDLIB_ROOTS = CANDIDATE_MODULES - _names("torch triton numpy cutlass cuda einops __future__")
# NumPy's and CUDA's array protocols: an object naming an address makes NumPy (or a GPU library) read that
# memory directly, a tensor's included, without a tensor method the runner could count (`host_reads`);
# an array's `.ctypes` hands out its address and the ctypes module (`string_at` of any address)
RAW_MEMORY_NAMES = _names("__array_interface__ __array_struct__ __cuda_array_interface__ ctypes")
# Attributes that map, read or write files by path whatever object they are reached through (a storage's
# `from_file`; NumPy's `fromregex` reads any file, /proc/self/maps with the judge's shared files among them;
# logging's `FileHandler` and `basicConfig(filename=...)` open any file for writing; an array's `dump`
# pickles to a path)
FILE_ATTRS = _names("from_file fromfile tofile memmap fwalk fromregex FileHandler basicConfig dump")
# Builtins that read or write an attribute by a name given as a value
ATTRIBUTE_BUILTINS = _names("getattr setattr delattr")


MEMOIZERS = _names("functools.lru_cache functools.cache")


# Triton device-function libraries a kernel may call (Inductor's code uses them): the module itself and
# its Triton functions, `libdevice` and `math` (tl math), nothing else reachable through it.
DEVICE_FUNCTION_LIBRARY = "torch._inductor.runtime.triton_helpers"
_DEVICE_LIBRARY_MEMBERS: frozenset[str] | None = None


def device_function_library_name(name: str) -> bool:
    """Whether `name` is the device-function library or one of its kernel-side members."""
    if name == DEVICE_FUNCTION_LIBRARY:
        return True
    head, _, member = name.rpartition(".")
    if head == DEVICE_FUNCTION_LIBRARY + ".libdevice" or head == DEVICE_FUNCTION_LIBRARY + ".math":
        return True  # tl math and libdevice functions
    return head == DEVICE_FUNCTION_LIBRARY and member in _device_library_members()


def _device_library_members() -> frozenset[str]:
    global _DEVICE_LIBRARY_MEMBERS
    if _DEVICE_LIBRARY_MEMBERS is None:
        try:
            import importlib

            library = importlib.import_module(DEVICE_FUNCTION_LIBRARY)
            # JITFunction on a GPU, InterpretedFunction under TRITON_INTERPRET
            kinds = ("JITFunction", "InterpretedFunction")
            jitted = {n for n, v in vars(library).items() if type(v).__name__ in kinds}
        except Exception:  # no triton or a torch without it: nothing is exempt beyond the names above
            jitted = set()
        _DEVICE_LIBRARY_MEMBERS = frozenset(jitted | {"libdevice", "math"})
    return _DEVICE_LIBRARY_MEMBERS


def matches(name: str, prefixes: frozenset[str]) -> bool:
    """Whether a dotted name is one of `prefixes` or lies under one of them."""
    parts = name.split(".")
    return any(".".join(parts[:i]) in prefixes for i in range(1, len(parts) + 1))
