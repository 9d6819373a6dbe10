"""cgc: an open compute-graph compiler and runtime (the D3D12 "MLIR programs"
design) for Python.

    import cgc, numpy as np
    session = cgc.Session("mobilenet_v2.onnx", input_shapes={"input": (1, 3, 224, 224)})
    logits = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["logits"]

:func:`compile` compiles an ONNX model for a device's declared patterns,
:class:`Session` runs it with numpy arrays, :class:`InferenceSession` is ONNX
Runtime's API over it, :func:`devices` lists the drivers.
"""

from ._api import (CompiledModel, DeviceInfo, Error, ExternalMemory, ExternalSemaphore,
                   InferenceSession, NodeArg, Session, TensorInfo, compile,
                   create_shared_semaphore, devices, from_dlpack, import_memory,
                   import_semaphore, load)
from ._cgc import runtime_version as _runtime_version

__version__ = _runtime_version()
__all__ = ["CompiledModel", "DeviceInfo", "Error", "ExternalMemory", "ExternalSemaphore",
           "InferenceSession", "NodeArg", "Session", "create_shared_semaphore",
           "import_memory", "import_semaphore",
           "TensorInfo", "compile", "devices", "from_dlpack", "load",
           "__version__"]
