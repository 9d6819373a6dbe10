"""The cgc Python API: compile ONNX models for a device, run them with numpy.

Everything goes through cgc's runtime library (its C API, cgc/runtime.h):
compiling asks the device's driver for its patterns through MLIR_EXCHANGE
(the spec's DXCGC inside the application), running records the command list
once and replays it. Errors are :class:`Error` with the runtime's message,
which names the ONNX node, the input, the bind point or the file.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _cgc
from ._container import read_plan


class Error(RuntimeError):
    """A failure reported by cgc's runtime or compiler.

    ``message`` is the runtime's text, ``code`` its status name
    ("INVALID_ARGUMENT", "NOT_FOUND", "DEVICE_LOST", ...).
    """

    def __init__(self, message: str, code: str = "INTERNAL") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return "%s [%s]" % (self.message, self.code)


_cgc._set_error_type(Error)

ModelLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: its name, numpy dtype and static shape."""

    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class DeviceInfo:
    """A D3D12 driver as the compiler sees it (:func:`devices`)."""

    driver: str
    mlir_tier: str
    target: Optional[str]
    patterns: Tuple[str, ...]
    unavailable: str = ""


def _info_from_plan(entry: Mapping[str, Any]) -> TensorInfo:
    return TensorInfo(entry["name"], np.dtype(entry["dtype"]), tuple(entry["shape"]))


_devices: Dict[Tuple[Optional[str], bool, int, str], "_cgc.Device"] = {}
_devices_lock = threading.Lock()


def _device(driver: Optional[str] = None, debug_layer: bool = False,
            threads: Optional[int] = None, driver_options: Optional[str] = None) -> "_cgc.Device":
    """A device on `driver` (a name, a path, or None for the default),
    created once per process and settings (again after a failed run lost
    it)."""
    if threads is not None and (not isinstance(threads, int) or threads < 0):
        raise ValueError("threads must be a non-negative integer, got %r" % (threads,))
    if driver_options is not None and not isinstance(driver_options, str):
        raise TypeError("driver_options must be a string such as 'winograd=0,spin-us=0', got %r"
                        % (driver_options,))
    key = (None if driver is None else os.fspath(driver), bool(debug_layer), int(threads or 0),
           driver_options or "")
    with _devices_lock:
        # A device a failed run removed serves no more runs: later sessions
        # get a new one (sessions on the old one keep failing).
        if key not in _devices or _devices[key].lost():
            _devices[key] = _cgc.Device(key[0], key[1], key[2], key[3] or None)
        return _devices[key]


def _shape_options(input_shapes: Optional[Mapping[str, Any]]) -> List[str]:
    out = []
    for name, shape in (input_shapes or {}).items():
        if isinstance(shape, str):  # "sequence(N)", "none": a sequence's or optional's binding
            out.append("%s=%s" % (name, shape))
            continue
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise ValueError("input_shapes[%r]: dimensions must be non-negative, got %r"
                             % (name, tuple(shape)))
        out.append("%s=%s" % (name, "x".join(str(d) for d in dims)))
    return out


def _model_bytes_or_path(model: ModelLike) -> Tuple[Any, str]:
    """(bytes or a path string, a name for messages)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "model.onnx"
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError("%s: no such file" % path)
        return path, path
    serialize = getattr(model, "SerializeToString", None)
    if serialize is None:
        raise TypeError("model must be a path, bytes or an onnx.ModelProto, got %s"
                        % type(model).__name__)
    return serialize(), "model.onnx"


class CompiledModel:
    """A compiled model: the bytes the runtime loads (a `.cgc` file), its
    inputs and outputs, and its memory plan. Made by :func:`compile` or
    :func:`load`."""

    def __init__(self, data: bytes, messages: str = "") -> None:
        self._data = bytes(data)
        self._plan = read_plan(self._data)
        self.messages = messages
        """What the compiler said: the device, what each target claimed."""

    @property
    def data(self) -> bytes:
        return self._data

    @property
    def inputs(self) -> List[TensorInfo]:
        return [_info_from_plan(e) for e in self._plan["inputs"]]

    @property
    def outputs(self) -> List[TensorInfo]:
        return [_info_from_plan(e) for e in self._plan["outputs"]]

    @property
    def plan(self) -> Dict[str, Any]:
        """The execution plan (docs/architecture.md): programs, commands with
        their bindings, scratch and constants, and the memory figures."""
        return self._plan

    @property
    def memory(self) -> Dict[str, int]:
        """Scratch footprint, its lower bound and the naive sum, in bytes."""
        return dict(self._plan.get("memory", {}))

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        with open(path, "wb") as f:
            f.write(self._data)

    def __repr__(self) -> str:
        return "CompiledModel(inputs=%r, outputs=%r, %d bytes)" % (
            [i.name for i in self.inputs], [o.name for o in self.outputs], len(self._data))


def compile(model: ModelLike, *, device: Optional[str] = None,
            targets: Optional[Sequence[str]] = None,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
            freeze_inputs: Optional[Mapping[str, Union[str, "os.PathLike[str]"]]] = None,
            max_loop_iterations: Optional[int] = None) -> CompiledModel:
    """Compiles an ONNX model (a path, bytes or an ``onnx.ModelProto``).

    By default for the patterns the device's driver declares through
    MLIR_EXCHANGE (``device``: a driver name or path, None for the default
    device), the rest for the fallback target. ``targets`` names the
    compilation targets instead (cgc-compile's ``--target``), ``input_shapes``
    binds symbolic input dimensions, ``freeze_inputs`` binds inputs that
    determine shapes to ``.pb`` tensors, ``max_loop_iterations`` is how many
    iterations a Loop steered at run time is compiled for (default 64; a run
    that needs more fails).
    """
    source, name = _model_bytes_or_path(model)
    return _compile(_device(device), source, name, targets, input_shapes, freeze_inputs,
                    max_loop_iterations)


def _compile(dev: "_cgc.Device", source: Any, name: str, targets: Optional[Sequence[str]],
             input_shapes: Optional[Mapping[str, Sequence[int]]],
             freeze_inputs: Optional[Mapping[str, Union[str, "os.PathLike[str]"]]],
             max_loop_iterations: Optional[int] = None) -> CompiledModel:
    """Compiles `source` (bytes or a path) on `dev`: its patterns first
    unless `targets` names the targets."""
    frozen = ["%s=%s" % (k, os.fspath(v)) for k, v in (freeze_inputs or {}).items()]
    data, messages = _cgc.compile_onnx(dev, source, name, list(targets or []),
                                       _shape_options(input_shapes), frozen, bool(targets),
                                       int(max_loop_iterations or 0))
    return CompiledModel(data, messages)


def load(path: Union[str, "os.PathLike[str]"]) -> CompiledModel:
    """Reads a compiled model (``.cgc``) written by cgc-compile or
    :meth:`CompiledModel.save`."""
    with open(path, "rb") as f:
        return CompiledModel(f.read())


def devices() -> List[DeviceInfo]:
    """The D3D12 drivers found, with their MLIR programs tier and the
    patterns they declare (asked through their devices)."""
    out = []
    for path in _cgc.drivers():
        info = _device(path).info()
        out.append(DeviceInfo(path, info["mlir_tier"], info["target"],
                              tuple(info["patterns"]), info["unavailable"]))
    return out


def from_dlpack(tensor: Any) -> np.ndarray:
    """A numpy view of a CPU tensor of another library (torch, ...) through
    DLPack: no copy. Session.run does this for any input with ``__dlpack__``;
    its outputs are numpy arrays, which export ``__dlpack__`` themselves
    (``torch.from_dlpack(output)`` shares their memory)."""
    return np.from_dlpack(tensor)


class ExternalMemory:
    """Memory another process or device shares as a file descriptor (a
    memfd, a /dev/shm file, a dma-buf), mapped into this process without a
    copy (:func:`import_memory`). Bind it to a session's inputs and outputs
    (:meth:`Session.bind`), or view it with :meth:`array`."""

    def __init__(self, native: "_cgc.ExternalMemory", importer: "_cgc.Importer") -> None:
        self._native = native
        self._importer = importer

    @property
    def size(self) -> int:
        return self._native.size

    def array(self, dtype: Any, shape: Sequence[int], offset: int = 0) -> np.ndarray:
        """A numpy view of the imported bytes at ``offset`` (no copy)."""
        return self._native.array(np.dtype(dtype), [int(d) for d in shape], int(offset))


class ExternalSemaphore:
    """A 64-bit timeline semaphore shared as a file descriptor (a D3D12 fence
    created with D3D12_FENCE_FLAG_SHARED, :func:`create_shared_semaphore`):
    sessions wait for and signal values on it (:meth:`Session.wait_for`,
    :meth:`Session.signal`)."""

    def __init__(self, native: "_cgc.ExternalSemaphore", importer: "_cgc.Importer") -> None:
        self._native = native
        self._importer = importer

    @property
    def value(self) -> int:
        """The current value, read on the CPU."""
        return self._native.value


_importers: Dict[int, "_cgc.Importer"] = {}


def _importer(dev: "_cgc.Device") -> "_cgc.Importer":
    with _devices_lock:
        if id(dev) not in _importers:
            _importers[id(dev)] = _cgc.Importer(dev)
        return _importers[id(dev)]


def import_memory(fd: int, size: int, *, offset: int = 0, access: str = "read_write",
                  dma_buf: bool = False, device: Optional[str] = None) -> ExternalMemory:
    """Imports ``size`` bytes at ``offset`` of a shared allocation (the
    caller keeps ``fd``; the import holds a descriptor of its own).
    ``access``: "read_write", "read_only" (inputs only) or "write_only"."""
    importer = _importer(_device(device))
    return ExternalMemory(importer.import_memory(int(fd), int(size), int(offset), access,
                                                 bool(dma_buf)), importer)


def import_semaphore(fd: int, *, device: Optional[str] = None) -> ExternalSemaphore:
    """Imports a timeline semaphore (a shared D3D12 fence's descriptor)."""
    importer = _importer(_device(device))
    return ExternalSemaphore(importer.import_semaphore(int(fd)), importer)


def create_shared_semaphore(initial: int = 0, *, device: Optional[str] = None) -> int:
    """Creates a shared timeline semaphore (a D3D12 fence with
    D3D12_FENCE_FLAG_SHARED) and returns its file descriptor, which the
    caller owns: import it here or send it to another process."""
    return _cgc.create_shared_fence(_device(device), int(initial))


def _declared_inputs_outputs(source: Any) -> Optional[Tuple[List["TensorInfo"],
                                                           List["TensorInfo"],
                                                           Dict[str, str]]]:
    """The graph inputs (initializers left out) and outputs an ONNX model
    declares, a dimension that is not a number as None, and the kinds of
    those that are not tensors ("sequence", "optional",
    "optional_sequence"), when some input has such a dimension or some input
    or output is not a tensor; else None (also when the onnx package is
    missing or the model does not parse: compiling it then says what is
    wrong)."""
    try:
        import onnx
        from onnx import mapping
    except ImportError:
        return None
    try:
        if isinstance(source, bytes):
            model = onnx.load_model_from_string(source)
        else:
            model = onnx.load(source, load_external_data=False)
    except Exception:  # the compiler reports a malformed model precisely
        return None

    def infos(values: Any, skip: Any) -> Optional[List[TensorInfo]]:
        out = []
        for value in values:
            if value.name in skip:
                continue
            kind, type_ = "tensor", value.type
            if type_.HasField("optional_type"):
                kind, type_ = "optional", type_.optional_type.elem_type
            if type_.HasField("sequence_type"):
                kind = "optional_sequence" if kind == "optional" else "sequence"
                type_ = type_.sequence_type.elem_type
            if not type_.HasField("tensor_type"):
                return None
            if kind != "tensor":
                kinds[value.name] = kind
            tensor = type_.tensor_type
            dtype = mapping.TENSOR_TYPE_TO_NP_TYPE.get(tensor.elem_type)
            if dtype is None or (kind == "tensor" and not tensor.HasField("shape")):
                return None
            # A sequence's or optional's info describes its tensors (any
            # shape when the model leaves it open).
            shape = tuple(d.dim_value if d.HasField("dim_value") else None
                          for d in tensor.shape.dim) if tensor.HasField("shape") else None
            out.append(TensorInfo(value.name, np.dtype(dtype), shape))
        return out

    kinds: Dict[str, str] = {}
    inputs = infos(model.graph.input, {i.name for i in model.graph.initializer})
    outputs = infos(model.graph.output, set())
    if inputs is None or outputs is None or (
            not kinds and all(None not in i.shape for i in inputs)):
        return None
    return inputs, outputs, kinds


class Session:
    """A model loaded on a device, ready to run.

    ``model_or_path``: a :class:`CompiledModel`, a ``.cgc`` path, or an ONNX
    model (path, bytes or ``onnx.ModelProto``), which is compiled for the
    device first (``input_shapes``, ``targets``, ``max_loop_iterations`` as for
    :func:`compile`).
    An ONNX model with symbolic input dimensions and no ``input_shapes`` is
    compiled on its first run with each new set of input shapes; the
    compiled models of the last ``shape_cache`` (default 8) sets are kept,
    the least recently used one closed when a new set comes (only
    :meth:`run` is available in that mode: binding memory needs one shape).
    A model with sequence or optional inputs or outputs runs in that mode
    too, compiled per sequence length and presence: a sequence is fed and
    returned as a list of arrays, an optional holding nothing as None
    (sequences are resolved at compile time, docs/importer.md).
    ``device`` names the driver, ``threads`` the device's worker threads,
    ``debug_layer`` validates every dispatch, ``driver_options`` is the
    driver's configuration of the device ("name=value,...": the CPU
    driver's kernel and scheduling choices, docs/runtime.md).
    """

    def __init__(self, model_or_path: Union[CompiledModel, ModelLike], *,
                 device: Optional[str] = None, threads: Optional[int] = None,
                 debug_layer: bool = False,
                 input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 targets: Optional[Sequence[str]] = None,
                 driver_options: Optional[str] = None, shape_cache: int = 8,
                 max_loop_iterations: Optional[int] = None) -> None:
        self._device = _device(device, debug_layer, threads, driver_options)
        self._per_shape: Optional["OrderedDict[Tuple[Tuple[int, ...], ...], Session]"] = None
        compiled = model_or_path
        if not isinstance(compiled, CompiledModel):
            source, name = _model_bytes_or_path(model_or_path)
            is_cgc = (isinstance(source, bytes) and source[:4] == b"DXBC") or \
                (isinstance(source, str) and source.endswith(".cgc"))
            declared = None if is_cgc or input_shapes else _declared_inputs_outputs(source)
            if declared is not None:
                if not isinstance(shape_cache, int) or shape_cache < 1:
                    raise ValueError("shape_cache must be a positive integer, got %r"
                                     % (shape_cache,))
                self._inputs, self._outputs, self._kinds = declared
                self._input_index = {t.name: i for i, t in enumerate(self._inputs)}
                self._output_index = {t.name: i for i, t in enumerate(self._outputs)}
                self._per_shape = OrderedDict()
                self._shape_closed = False
                self._shape_cache = shape_cache
                self._compile_args = (source, name, targets, max_loop_iterations)
                self._session_args = dict(device=device, threads=threads,
                                          debug_layer=debug_layer,
                                          driver_options=driver_options)
                self._lock = threading.Lock()
                self.compiled = None
                return
            if is_cgc:
                compiled = CompiledModel(source) if isinstance(source, bytes) else load(source)
            else:
                compiled = _compile(self._device, source, name, targets, input_shapes, None,
                                    max_loop_iterations)
        self.compiled = compiled
        self._model = _cgc.Model(self._device, compiled.data)
        self._context = _cgc.Context(self._model)
        self._inputs = [TensorInfo(t.name, np.dtype(t.dtype), tuple(t.shape))
                        for t in self._model.inputs]
        self._outputs = [TensorInfo(t.name, np.dtype(t.dtype), tuple(t.shape))
                         for t in self._model.outputs]
        self._input_index = {t.name: i for i, t in enumerate(self._inputs)}
        self._output_index = {t.name: i for i, t in enumerate(self._outputs)}
        self._lock = threading.Lock()

    @property
    def inputs(self) -> List[TensorInfo]:
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorInfo]:
        return list(self._outputs)

    def _array(self, info: TensorInfo, value: Any) -> np.ndarray:
        array = value if isinstance(value, np.ndarray) else from_dlpack(value) \
            if hasattr(value, "__dlpack__") else np.asarray(value)
        if array.dtype != info.dtype:
            raise TypeError("input %r is %s; the model expects %s (cgc does not convert)"
                            % (info.name, array.dtype, info.dtype))
        if tuple(array.shape) != info.shape:
            raise ValueError("input %r has shape %s; the model expects %s"
                             % (info.name, tuple(array.shape), info.shape))
        return array

    def run(self, feeds: Mapping[str, Any],
            outputs: Optional[Sequence[str]] = None) -> Dict[str, np.ndarray]:
        """Runs the model on ``feeds`` (every input by name) and returns the
        outputs by name (those named in ``outputs``, else all). Inputs that
        are C-contiguous and 64-byte aligned are read in place; outputs are
        written in place into the arrays returned. The GIL is released while
        the device runs."""
        if self._per_shape is not None:
            return self._run_per_shape(feeds, outputs)
        if self._context.closed:
            raise ValueError("the session is closed")
        self._check_feeds(feeds)
        wanted = list(outputs) if outputs is not None else [o.name for o in self._outputs]
        for name in wanted:
            if name not in self._output_index:
                raise KeyError("unknown output %r; the model's outputs are %s"
                               % (name, [o.name for o in self._outputs]))
        arrays = [self._array(info, feeds[info.name]) for info in self._inputs]
        with self._lock:
            results = self._context.run(arrays)
        return {name: results[self._output_index[name]] for name in wanted}

    def _check_feeds(self, feeds: Any) -> None:
        """Every input given by name, no other."""
        if not isinstance(feeds, Mapping):
            raise TypeError("feeds must be a mapping from input names to arrays")
        unknown = sorted(set(feeds) - set(self._input_index))
        if unknown:
            raise KeyError("unknown input %r; the model's inputs are %s"
                           % (unknown[0], [i.name for i in self._inputs]))
        missing = [i.name for i in self._inputs if i.name not in feeds]
        if missing:
            raise KeyError("missing input %r" % missing[0])

    def _expand_feeds(self, feeds: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """The compiled model's feeds and the compile-time bindings of
        ``feeds``: a sequence (a list of arrays) ``x`` becomes the tensors
        ``x[0]``, ``x[1]``, ... bound as ``x=sequence(N)``, an optional holds
        its value or None (bound as ``x=none``)."""
        tensors: Dict[str, Any] = {}
        shapes: Dict[str, Any] = {}

        def tensor(name: str, info: TensorInfo, value: Any) -> None:
            shape = tuple(int(d) for d in np.shape(value))
            if info.shape is not None and (len(shape) != len(info.shape) or any(
                    want is not None and want != got for want, got in zip(info.shape, shape))):
                raise ValueError("input %r has shape %s; the model declares %s (None: any)"
                                 % (name, shape, info.shape))
            tensors[name], shapes[name] = value, shape

        for info in self._inputs:
            value, kind = feeds[info.name], self._kinds.get(info.name, "tensor")
            if kind in ("optional", "optional_sequence") and value is None:
                shapes[info.name] = "none"
                continue
            if kind in ("sequence", "optional_sequence"):
                if not isinstance(value, (list, tuple)):
                    raise TypeError("input %r is a sequence: pass a list of arrays" % info.name)
                shapes[info.name] = "sequence(%d)" % len(value)
                for i, item in enumerate(value):
                    tensor("%s[%d]" % (info.name, i), info, item)
                continue
            tensor(info.name, info, value)
        return tensors, shapes

    def _group_outputs(self, results: Mapping[str, np.ndarray],
                       outputs: Optional[Sequence[str]]) -> Dict[str, Any]:
        """The declared outputs from the compiled model's: a sequence ``y``
        gathered from ``y[0]``, ``y[1]``, ... into a list, an optional as its
        value or None."""
        grouped: Dict[str, Any] = {}
        for info in self._outputs:
            kind = self._kinds.get(info.name, "tensor")
            if kind in ("sequence", "optional_sequence"):
                items = []
                while "%s[%d]" % (info.name, len(items)) in results:
                    items.append(results["%s[%d]" % (info.name, len(items))])
                grouped[info.name] = None if (kind == "optional_sequence" and not items and
                                              info.name not in results) else items
            else:
                grouped[info.name] = results.get(info.name)
        wanted = list(outputs) if outputs is not None else [o.name for o in self._outputs]
        for name in wanted:
            if name not in grouped:
                raise KeyError("unknown output %r; the model's outputs are %s"
                               % (name, [o.name for o in self._outputs]))
        return {name: grouped[name] for name in wanted}

    def _run_per_shape(self, feeds: Mapping[str, Any],
                       outputs: Optional[Sequence[str]]) -> Dict[str, Any]:
        """run() of a model with symbolic dimensions or sequence and
        optional values: the session compiled for these input shapes (and
        sequence lengths, and optionals present or not), compiled now if it
        is new."""
        self._check_feeds(feeds)
        tensors, shapes = self._expand_feeds(feeds)
        key = tuple(sorted(shapes.items()))
        with self._lock:
            if self._shape_closed:
                raise ValueError("the session is closed")
            session = self._per_shape.get(key)
            if session is None:
                source, name, targets, loops = self._compile_args
                compiled = _compile(self._device, source, name, targets, shapes, None, loops)
                session = Session(compiled, **self._session_args)
                self._per_shape[key] = session
                while len(self._per_shape) > self._shape_cache:
                    _, oldest = self._per_shape.popitem(last=False)
                    oldest.close()
            else:
                self._per_shape.move_to_end(key)
        if not self._kinds:
            return session.run(tensors, outputs)
        return self._group_outputs(session.run(tensors), outputs)

    def _one_shape(self, what: str) -> None:
        if self._per_shape is not None:
            raise Error("%s needs the model compiled for one set of input shapes; this model "
                        "has symbolic dimensions: pass input_shapes=... to Session" % what,
                        "INVALID_ARGUMENT")

    def bind(self, name: str, memory: ExternalMemory, offset: int = 0) -> None:
        """Binds input or output ``name`` to imported memory at ``offset``:
        :meth:`submit` reads (writes) it in place, zero copy. :meth:`run`
        binds its own arrays again."""
        self._one_shape("bind")
        if name in self._input_index:
            output, index = False, self._input_index[name]
        elif name in self._output_index:
            output, index = True, self._output_index[name]
        else:
            raise KeyError("the model has no input or output %r" % name)
        self._context.bind_external(memory._importer, output, index, memory._native, int(offset))

    def submit(self) -> None:
        """Queues a run with the buffers bound now (after any queued
        semaphore wait) and returns at once; :meth:`wait` blocks for it."""
        self._one_shape("submit")
        self._context.submit()

    def wait(self, timeout_ms: int = 0xFFFFFFFF) -> None:
        """Blocks until the submitted runs are done."""
        self._one_shape("wait")
        self._context.wait(int(timeout_ms))

    def wait_for(self, semaphore: ExternalSemaphore, value: int) -> None:
        """Later runs start only once ``semaphore`` reaches ``value``."""
        self._one_shape("wait_for")
        self._context.wait_semaphore(semaphore._importer, semaphore._native, int(value))

    def signal(self, semaphore: ExternalSemaphore, value: int) -> None:
        """``semaphore`` is set to ``value`` once the runs submitted so far
        are done."""
        self._one_shape("signal")
        self._context.signal_semaphore(semaphore._importer, semaphore._native, int(value))

    def stats(self) -> Dict[str, int]:
        """Runs, command-list recordings and bytes the runtime copied."""
        self._one_shape("stats")
        return self._context.stats()

    def close(self) -> None:
        """Waits for the session's runs and frees its memory; runs after it
        raise."""
        if self._per_shape is not None:
            with self._lock:
                sessions = list(self._per_shape.values())
                self._per_shape.clear()
                self._shape_closed = True
            for session in sessions:
                session.close()
            return
        self._context.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass(frozen=True)
class NodeArg:
    """ONNX Runtime's description of an input or output."""

    name: str
    shape: List[int]
    type: str


_ORT_TYPES = {"float32": "tensor(float)", "float64": "tensor(double)",
              "float16": "tensor(float16)", "int8": "tensor(int8)", "uint8": "tensor(uint8)",
              "int16": "tensor(int16)", "uint16": "tensor(uint16)", "int32": "tensor(int32)",
              "uint32": "tensor(uint32)", "int64": "tensor(int64)",
              "uint64": "tensor(uint64)", "bool": "tensor(bool)"}


class InferenceSession:
    """ONNX Runtime's ``InferenceSession`` over cgc: an ORT user switches with
    one line. ``providers`` and ``sess_options`` are accepted and ignored
    (cgc runs on its own device); keyword arguments go to :class:`Session`."""

    def __init__(self, path_or_bytes: ModelLike, sess_options: Any = None,
                 providers: Optional[Sequence[Any]] = None, provider_options: Any = None,
                 **kwargs: Any) -> None:
        self._session = Session(path_or_bytes, **kwargs)

    def get_inputs(self) -> List[NodeArg]:
        return [NodeArg(i.name, list(i.shape), _ORT_TYPES.get(i.dtype.name, str(i.dtype)))
                for i in self._session.inputs]

    def get_outputs(self) -> List[NodeArg]:
        return [NodeArg(o.name, list(o.shape), _ORT_TYPES.get(o.dtype.name, str(o.dtype)))
                for o in self._session.outputs]

    def get_providers(self) -> List[str]:
        return ["CgcExecutionProvider"]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[np.ndarray]:
        names = list(output_names) if output_names else [o.name for o in self._session.outputs]
        result = self._session.run(input_feed, names)
        return [result[n] for n in names]
