"""A stand-in for the few parts of PyTorch that torch_interception_job.py
uses, over the CUDA driver API, for running that job on the simulated GPU
(where the real PyTorch cannot run: the CUDA runtime checks the driver's
integrity). scripts/gpu-check --sim puts this directory on PYTHONPATH for
that one job; it is never used on a real GPU and says so in __version__.

It binds the driver the way the CUDA runtime does, through cuGetProcAddress
(not dlsym of each name), so the interposer is tested on the path PyTorch
takes; and it keeps a caching allocator with PyTorch's semantics: freed
tensors go back to a cache counted in memory_reserved(); an allocation the
driver refuses frees the cache and retries once, then raises
OutOfMemoryError; empty_cache() gives the cache back to the driver.
"""
import ctypes
import os

__version__ = "0.0+gpushare-standin"

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
uint8 = "uint8"


class OutOfMemoryError(RuntimeError):
    pass


class _Version:
    cuda = None


version = _Version()


class _Driver:
    """The driver's entry points, resolved with cuGetProcAddress_v2."""

    SIGNATURES = {
        "cuInit": [ctypes.c_uint],
        "cuDriverGetVersion": [ctypes.POINTER(ctypes.c_int)],
        "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuCtxSetCurrent": [ctypes.c_void_p],
        "cuCtxSynchronize": [],
        "cuMemGetInfo": [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
        "cuMemAlloc": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
        "cuMemFree": [ctypes.c_uint64],
        "cuMemsetD8": [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t],
        "cuMemcpyDtoH": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
    }

    # The CUDA version the entry points are asked for, as a runtime built for
    # CUDA 12 asks. GPUSHARE_STANDIN_CUDA_VERSIONS=NAME=VERSION,... asks for
    # some at another version, so a test can reach variants the interposer
    # does not wrap (cuMemAlloc=3000 is the 32-bit cuMemAlloc of CUDA 3.0).
    VERSION = 12000
    VERSIONS = dict((name, int(version)) for name, version in
                    (item.split("=") for item in
                     os.environ.get("GPUSHARE_STANDIN_CUDA_VERSIONS", "").split(",") if item))

    def __init__(self):
        library = ctypes.CDLL("libcuda.so.1")
        resolve = library.cuGetProcAddress_v2
        resolve.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                            ctypes.c_uint64, ctypes.c_void_p]
        for name, arguments in self.SIGNATURES.items():
            pointer = ctypes.c_void_p()
            status = resolve(name.encode(), ctypes.byref(pointer),
                             self.VERSIONS.get(name, self.VERSION), 0, None)
            if status != CUDA_SUCCESS or not pointer.value:
                raise RuntimeError(f"cuGetProcAddress({name}) failed: {status}")
            function = ctypes.CFUNCTYPE(ctypes.c_int, *arguments)(pointer.value)
            setattr(self, name, function)

    def check(self, status, call):
        if status != CUDA_SUCCESS:
            raise RuntimeError(f"{call}: CUDA error {status}")


class _Cuda:
    OutOfMemoryError = OutOfMemoryError

    def __init__(self):
        self._driver = None
        self._cache = {}      # size -> [pointer, ...], free blocks kept for reuse
        self._reserved = 0    # bytes held from the driver, in use or cached
        self._peak = 0

    def _init(self):
        if self._driver is None:
            driver = _Driver()
            driver.check(driver.cuInit(0), "cuInit")
            device, context = ctypes.c_int(), ctypes.c_void_p()
            driver.check(driver.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
            driver.check(driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
                         "cuDevicePrimaryCtxRetain")
            driver.check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
            number = ctypes.c_int()
            driver.check(driver.cuDriverGetVersion(ctypes.byref(number)), "cuDriverGetVersion")
            version.cuda = f"{number.value // 1000}.{number.value % 1000 // 10}"
            self._driver = driver
        return self._driver

    def is_available(self):
        try:
            self._init()
            return True
        except (OSError, RuntimeError):
            return False

    def current_device(self):
        return 0

    def mem_get_info(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        driver = self._init()
        driver.check(driver.cuMemGetInfo(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
        return free.value, total.value

    def synchronize(self):
        driver = self._init()
        driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

    def memory_reserved(self):
        return self._reserved

    def max_memory_reserved(self):
        return self._peak

    def empty_cache(self):
        driver = self._init()
        for size, pointers in self._cache.items():
            for pointer in pointers:
                driver.check(driver.cuMemFree(pointer), "cuMemFree")
                self._reserved -= size
        self._cache.clear()

    def _allocate(self, size):
        if self._cache.get(size):
            return self._cache[size].pop()
        driver = self._init()
        pointer = ctypes.c_uint64()
        status = driver.cuMemAlloc(ctypes.byref(pointer), size)
        if status == CUDA_ERROR_OUT_OF_MEMORY:
            self.empty_cache()  # as PyTorch does before giving up
            status = driver.cuMemAlloc(ctypes.byref(pointer), size)
            if status == CUDA_ERROR_OUT_OF_MEMORY:
                raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {size} bytes")
        driver.check(status, "cuMemAlloc")
        self._reserved += size
        self._peak = max(self._peak, self._reserved)
        return pointer.value

    def _release(self, pointer, size):
        self._cache.setdefault(size, []).append(pointer)


cuda = _Cuda()


class _Scalar:
    def __init__(self, value):
        self._value = value

    def item(self):
        return self._value


class Tensor:
    """A uint8 device buffer; a strided view of one for sampling."""

    def __init__(self, pointer, size, step=1, owner=None):
        self._pointer, self._size, self._step, self._owner = pointer, size, step, owner

    def __del__(self):
        if self._owner is None and cuda is not None:
            cuda._release(self._pointer, self._size)

    def fill_(self, value):
        driver = cuda._init()
        driver.check(driver.cuMemsetD8(self._pointer, value, self._size), "cuMemsetD8")
        return self

    def __getitem__(self, index):
        if not isinstance(index, slice) or index.start or index.stop:
            raise TypeError("the stand-in supports only [::step]")
        return Tensor(self._pointer, self._size, index.step or 1, owner=self)

    def sum(self):
        driver = cuda._init()
        byte = ctypes.c_ubyte()
        total = 0
        for offset in range(0, self._size, self._step):
            driver.check(driver.cuMemcpyDtoH(ctypes.byref(byte), self._pointer + offset, 1),
                         "cuMemcpyDtoH")
            total += byte.value
        return _Scalar(total)


def empty(size, dtype=uint8, device="cuda"):
    if dtype != uint8 or device != "cuda":
        raise TypeError("the stand-in makes only uint8 tensors on cuda")
    return Tensor(cuda._allocate(int(size)), int(size))
