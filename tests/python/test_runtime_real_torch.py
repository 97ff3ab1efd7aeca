"""The call path with real torch tensors (skipped without torch). An exact torch.Tensor is read
straight through torch.Tensor's descriptors (python/src/bind_runtime.cc, tensor_attr); a subclass
(nn.Parameter, a user subclass overriding a read) goes through the ordinary attribute lookup.
Both must see the same dtype, shape, strides, pointer and device: the error messages of calls
that stop in validation show what was read. No GPU here: the CPU tensors stop at the device
check, which comes after every read."""
import pytest

torch = pytest.importorskip("torch")
_tilec = pytest.importorskip("tilec._tilec")
import tilec.kernel as K  # noqa: E402
from launch_plans import ADD_PLAN, ADD_SOURCE  # noqa: E402



@pytest.fixture(scope="module")
def kernel():
    ok, why = _tilec.nvrtc_available()
    if not ok:
        pytest.skip(f"NVRTC not available: {why}")
    return K.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", use_cache=False)


def error_of(k, *args):
    with pytest.raises(K.KernelArgumentError) as e:
        k(*args)
    return str(e.value)


class Wrapped(torch.Tensor):
    """A subclass that reports another shape: the ordinary lookup must honour the override."""

    @property
    def shape(self):
        return torch.Size((7, 4))


def test_reads_of_an_exact_tensor(kernel):
    assert "'n' = 3 (set by argument 'A' dimension 0), got 5 (shape [5, 4])" in error_of(
        kernel, torch.zeros(3, 4), torch.zeros(5, 4))
    assert "float16" in error_of(kernel, torch.zeros(3, 4, dtype=torch.float16), torch.zeros(3, 4))
    assert "got strides [1, 3] for shape [3, 4]" in error_of(kernel, torch.zeros(4, 3).t(), torch.zeros(3, 4))
    assert "expected a CUDA tensor, got a tensor on cpu" in error_of(kernel, torch.zeros(3, 4), torch.zeros(3, 4))
    assert "complex" in error_of(kernel, torch.zeros(3, 4, dtype=torch.complex64), torch.zeros(3, 4))


def test_subclasses_take_the_ordinary_lookup(kernel):
    p = torch.nn.Parameter(torch.zeros(3, 4))
    assert "got a tensor on cpu" in error_of(kernel, p, torch.zeros(3, 4))
    assert "got 5 (shape [5, 4])" in error_of(kernel, p, torch.nn.Parameter(torch.zeros(5, 4)))
    w = torch.zeros(3, 4).as_subclass(Wrapped)
    message = error_of(kernel, w, torch.zeros(3, 4))
    assert "'n' = 7 (set by argument 'A' dimension 0), got 3" in message, message  # the subclass's shape
