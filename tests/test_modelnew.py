"""KernelBench out: model_new.py is self-contained Python that KernelBench's evaluator can exec(),
its ModelNew has Model's constructor, parameters (the same weights given the same seed) and
forward signature, and launches the kernel per its contract (checked here with a stand-in driver;
the real one is in test_kernelbench_gpu.py). A scripted `kgen generate --kernelbench` run
writes it."""

from __future__ import annotations

import base64
import ctypes
import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from helpers import fenced

from kgen import expr
from kgen.arch import parse_arch
from kgen.cli import main
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.loop.modelnew import render
from kgen.ops.kernelbench import load_problem

pytestmark = pytest.mark.nvcc

DATA = Path(__file__).parent / "data" / "kernelbench"
KERNELS = DATA / "kernels"
_SPECS: dict[str, object] = {}


def _spec(name: str):
    if name not in _SPECS:
        _SPECS[name] = load_problem(DATA / f"{name}.py")
    return _SPECS[name]


def _model_new(name: str, origin: str = "test", kernel: str = "") -> tuple[str, bytes]:
    spec = _spec(name)
    source = (KERNELS / f"{kernel or name}.cu").read_text()
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    compiled = compile_source(source, parse_arch("sm_90"))
    assert compiled.ok, compiled.summary
    return render(spec, contract, compiled.cubin, "sm_90", source, origin), compiled.cubin


def _load(text: str) -> dict:
    """As KernelBench's load_custom_model does: exec the source into a fresh context."""
    context: dict = {}
    exec(compile(text, "<model_new>", "exec"), context)
    return context


class Recorder:
    """Stands in for the CUDA driver: records what would be launched."""

    def __init__(self):
        self.calls = []

    def launch(self, device, tensors):
        self.calls.append((device, dict(tensors)))


def test_model_new_has_models_constructor_weights_and_signature():
    text, cubin = _model_new("l2_gemm_bias_gelu")
    context = _load(text)
    model_cls, new_cls = context["Model"], context["ModelNew"]
    assert issubclass(new_cls, model_cls)
    init = context["get_init_inputs"]()
    torch.manual_seed(7)
    model = model_cls(*init)
    torch.manual_seed(7)
    new = new_cls(*init)
    assert model.state_dict().keys() == new.state_dict().keys()
    for key, value in model.state_dict().items():
        assert torch.equal(value, new.state_dict()[key]), key
    assert list(context["ModelNew"].forward.__code__.co_varnames[:2]) == ["self", "x"]
    assert context["_KGEN_BINARY"] == cubin
    assert context["_kgen_launches"](132) == [("gemm_bias_gelu_f32", (128, 32, 1), (16, 16, 1), 0, (
        "x", "linear_weight", "linear_bias", "out", "batch_size", "in_features",
        "out_features"), ())]
    assert "int main" not in context["_KGEN_SOURCE"] and "gemm_bias_gelu_f32" in context[
        "_KGEN_SOURCE"]


def test_forward_launches_per_the_contract_with_the_modules_own_weights():
    context = _load(_model_new("l2_gemm_bias_gelu")[0])
    recorder = Recorder()
    context["_KGEN_DRIVER"] = recorder
    new = context["ModelNew"](*context["get_init_inputs"]())
    (x,) = context["get_inputs"]()
    out = new(x)
    (device, tensors), = recorder.calls
    assert device.type == "cpu" and out.shape == (512, 2048) and out.dtype == torch.float32
    assert tensors["x"].data_ptr() == x.data_ptr()
    assert tensors["linear_weight"].data_ptr() == new.linear.weight.data_ptr()
    assert tensors["out"] is out
    argument = context["_kgen_argument"]
    assert argument("in_features", tensors, 132).value == 1024
    assert isinstance(argument("in_features", tensors, 132), ctypes.c_int)
    assert argument("x", tensors, 132).value == x.data_ptr()


def test_two_outputs_come_back_as_a_tuple_and_bad_inputs_are_told():
    context = _load(_model_new("l1_max_with_index")[0])
    context["_KGEN_DRIVER"] = Recorder()
    new = context["ModelNew"]()
    values, indices = new(*context["get_inputs"]())
    assert values.dtype == torch.float32 and indices.dtype == torch.int64
    with pytest.raises(ValueError, match=r"built for input x of shape \(4096, 1000\) float32"):
        new(torch.zeros(3, 3))


def test_the_real_driver_refuses_cpu_tensors_with_a_clear_error():
    context = _load(_model_new("l1_relu")[0])
    new = context["ModelNew"]()
    with pytest.raises(ValueError, match="runs on CUDA tensors"):
        new(*context["get_inputs"]())


def test_future_imports_of_the_problem_move_to_the_top(tmp_path):
    problem = tmp_path / "future_relu.py"
    problem.write_text('"""A docstring first."""\nfrom __future__ import annotations\n'
                       + (DATA / "l1_relu.py").read_text())
    spec = load_problem(problem)
    source = (KERNELS / "l1_relu.cu").read_text().replace("op=l1_relu", "op=future_relu")
    contract, _ = parse_contract(source, spec)
    text = render(spec, contract, b"\x7fELF", "sm_90", source, "test")
    assert text.count("from __future__ import annotations") == 1
    assert "ModelNew" in _load(text)
    assert base64.b64encode(b"\x7fELF").decode() in text


@pytest.mark.slow
def test_a_scripted_kernelbench_run_writes_an_importable_model_new(tmp_path):
    reply = fenced((KERNELS / "l1_relu.cu").read_text())
    (tmp_path / "script.json").write_text(json.dumps([reply]))
    result = CliRunner().invoke(main, [
        "generate", "--kernelbench", str(DATA / "l1_relu.py"), "--arch", "sm_90", "--no-gpu",
        "--backend", "scripted", "--out", str(tmp_path / "run"), "--json"],
        env={"KGEN_SCRIPT": str(tmp_path / "script.json"), "KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    text = (tmp_path / "run" / "model_new.py").read_text()
    assert "could NOT validate it" in text and "attempt 1" in text
    context = _load(text)
    assert issubclass(context["ModelNew"], context["Model"])
    assert "model_new.py" in (tmp_path / "run" / "report.md").read_text()
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert saved["kernelbench"] == str((DATA / "l1_relu.py").resolve())


def _relu_with(launches: str):
    """l1_relu.cu with its launch line replaced by `launches` (one or more contract lines)."""
    spec = _spec("l1_relu")
    source = (KERNELS / "l1_relu.cu").read_text()
    line = next(ln for ln in source.splitlines() if ln.startswith("// kgen: launch"))
    source = source.replace(line, launches)
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    return spec, contract, source


def test_only_the_launch_whose_condition_holds_at_the_problems_size_is_written():
    # dim = 16384: the first launch's condition fails there, the second's holds.
    spec, contract, source = _relu_with(
        "// kgen: launch relu_f32 grid=(cdiv(batch_size * dim, 256)) block=(256) "
        "args=(x, out, batch_size, dim) when=(dim % 3 == 0)\n"
        "// kgen: launch relu_f32 grid=(cdiv(batch_size * dim, 128)) block=(128) "
        "args=(x, out, batch_size, dim) when=(dim % 3 != 0)")
    context = _load(render(spec, contract, b"\x7fELF", "sm_90", source, "test"))
    assert context["_kgen_launches"](132) == [("relu_f32", (2048, 1, 1), (128, 1, 1), 0, (
        "x", "out", "batch_size", "dim"), ())]


_CLUSTER_TMAP = ("// kgen: launch relu_f32 grid=(cdiv(batch_size * dim, 256)) block=(256) "
                 "smem=(SMS * 0 + 1024) cluster=(2) args=(tmap(x, box=(32, dim // 4096), "
                 "swizzle=128{optional}), out, batch_size, dim)")


def test_cluster_launches_and_tensor_maps_go_into_the_launch_table():
    spec, contract, source = _relu_with(_CLUSTER_TMAP.format(optional=", optional=1"))
    context = _load(render(spec, contract, b"\x7fELF", "sm_90", source, "test"))
    assert context["_kgen_launches"](132) == [(
        "relu_f32", (1024, 1, 1), (256, 1, 1), 1024,
        (("tmap", "x", (32, 4), 128, True), "out", "batch_size", "dim"), (2, 1, 1))]


def test_launches_over_the_sm_count_are_computed_from_the_gpus_count():
    """The SM count is known only on the GPU that runs model_new.py: expressions over SMS are
    written out as Python with the problem's sizes put in, and SMS passed as an argument is the
    device's count (the driver asks cuDeviceGetAttribute; test_kernelbench_gpu.py runs it)."""
    text, _ = _model_new("l1_relu", kernel="l1_relu_persistent")
    spec = _spec("l1_relu")
    contract, _ = parse_contract((KERNELS / "l1_relu_persistent.cu").read_text(), spec)
    assert contract is not None
    context = _load(text)
    args = ("x", "out", "batch_size", "dim", "SMS")
    assert context["_kgen_launches"](132) == [
        ("relu_sms_f32", (528, 1, 1), (256, 1, 1), 0, args, ())]
    assert context["_kgen_launches"](20) == [
        ("relu_sms_f32", (80, 1, 1), (128, 1, 1), 0, args, ())]
    # batch_size * dim = 262,144: 2,048 blocks of 128 where 4 * SMS is more
    assert context["_kgen_launches"](99)[0][1] == (396, 1, 1)
    assert context["_kgen_launches"](600) == [("relu_sms_f32", (2400, 1, 1), (256, 1, 1), 0,
                                                args, ())]
    table = text.split("def _kgen_launches")[1].split("return launches")[0]
    assert "_kgen_cdiv(16 * 16384, 128)" in table and "batch_size" not in table.replace(
        "'batch_size'", "")
    argument = context["_kgen_argument"]
    sms = argument("SMS", {}, 114)
    assert isinstance(sms, ctypes.c_int) and sms.value == 114


@pytest.mark.parametrize("grid", [
    "4 * SMS", "min(SMS * 3, cdiv(batch_size * dim, 1000))", "(SMS > 100 and 4) * 2 + 1",
    "(SMS < 50 or 7) * cdiv(dim, SMS) + (not SMS % 3)", "max(1, dim // SMS - SMS % 7)",
    "(batch_size - SMS) % 5 + 1"])
def test_launch_expressions_over_the_sm_count_have_kgens_value_in_the_file(grid):
    when = "SMS % 2 == 0 and SMS > 10 or SMS == 7"
    spec, contract, source = _relu_with(
        f"// kgen: launch relu_f32 grid=({grid}) block=(256) args=(x, out, batch_size, dim) "
        f"when=({when})")
    launches = _load(render(spec, contract, b"\x7fELF", "sm_90", source, "test"))[
        "_kgen_launches"]
    entry = spec.test_sizes[0]
    for sms in (1, 7, 20, 99, 100, 114, 132, 133):
        values = {**entry, "SMS": sms}
        want = [("relu_f32", (expr.evaluate(grid, values), 1, 1), (256, 1, 1), 0,
                 ("x", "out", "batch_size", "dim"), ())] if expr.evaluate(when, values) else []
        assert launches(sms) == want, sms


class FakeCuda:
    """Stands in for libcuda: a GPU of `sms` multiprocessors; records each kernel launch's
    grid, block and the values of its int arguments."""

    def __init__(self, sms: int):
        self.sms, self.launched = sms, []

    def __getattr__(self, name):
        return lambda *args: 0  # cuInit, cuCtxPushCurrent_v2, ...: CUDA_SUCCESS

    def cuDeviceGetAttribute(self, value, attribute, device):
        assert attribute == 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        value._obj.value = self.sms
        return 0

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, smem, stream, pointers, extra):
        ints = [ctypes.cast(pointers[i], ctypes.POINTER(ctypes.c_int)).contents.value
                for i in range(2, 5)]  # batch_size, dim, SMS
        self.launched.append(((gx, gy, gz), (bx, by, bz), ints))
        return 0


@pytest.mark.parametrize("sms, grid, block", [(132, 528, 256), (20, 80, 128)])
def test_the_driver_launches_what_the_gpus_sm_count_picks_and_passes_the_count(sms, grid, block):
    context = _load(_model_new("l1_relu", kernel="l1_relu_persistent")[0])
    fake = FakeCuda(sms)
    driver = context["_KGEN_DRIVER"]
    driver._lib = fake
    stream = type("Stream", (), {"cuda_stream": 0})()
    context["_kgen_torch"] = type("Torch", (), {"cuda": type("Cuda", (), {
        "current_stream": staticmethod(lambda device: stream)})})
    x, out = torch.zeros(16, 16384), torch.zeros(16, 16384)
    driver.launch(torch.device("cuda", 0), {"x": x, "out": out})
    assert fake.launched == [((grid, 1, 1), (block, 1, 1), [16, 16384, sms])]
    fake.sms = 7  # loaded once per device: the count asked at load time stands
    driver.launch(torch.device("cuda", 0), {"x": x, "out": out})
    assert fake.launched[1] == fake.launched[0]


class FakeHopperCuda(FakeCuda):
    """FakeCuda that also builds tensor maps (each 128 bytes of 0xAB, the call recorded) and
    records cuLaunchKernelEx's grid, block, shared bytes, cluster attribute, the tensor-map
    argument's bytes and the int arguments."""

    def __init__(self):
        super().__init__(132)
        self.maps = []

    def cuTensorMapEncodeTiled(self, address, dtype, rank, ptr, dims, strides, box, elements,
                               interleave, swizzle, promotion, fill):
        assert address.value % 64 == 0  # the driver wants a 64-byte aligned CUtensorMap
        self.maps.append((dtype, rank, ptr.value, list(dims[:rank]), list(strides[:rank - 1]),
                          list(box[:rank]), list(elements[:rank]), swizzle))
        ctypes.memset(address.value, 0xAB, 128)
        return 0

    def cuLaunchKernelEx(self, config, func, pointers, extra):
        cfg = config._obj
        attribute = cfg.attrs[0]
        dim = attribute.value.clusterDim
        ints = [ctypes.cast(pointers[i], ctypes.POINTER(ctypes.c_int)).contents.value
                for i in (2, 3)]
        self.launched.append(((cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                              (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), cfg.sharedMemBytes,
                              cfg.numAttrs, attribute.id, (dim.x, dim.y, dim.z),
                              ctypes.string_at(pointers[0], 128), ints))
        return 0


def _hopper_driver(optional: str):
    spec, contract, source = _relu_with(_CLUSTER_TMAP.format(optional=optional))
    context = _load(render(spec, contract, b"\x7fELF", "sm_90", source, "test"))
    fake = FakeHopperCuda()
    driver = context["_KGEN_DRIVER"]
    driver._lib = fake
    stream = type("Stream", (), {"cuda_stream": 0})()
    context["_kgen_torch"] = type("Torch", (), {"cuda": type("Cuda", (), {
        "current_stream": staticmethod(lambda device: stream)})})
    return driver, fake


def test_the_driver_builds_tensor_maps_and_launches_clusters_as_the_worker_does():
    driver, fake = _hopper_driver("")
    x, out = torch.zeros(16, 16384), torch.zeros(16, 16384)
    driver.launch(torch.device("cuda", 0), {"x": x, "out": out})
    # float32 (CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7), dims and box innermost first, the row
    # stride in bytes, 128-byte swizzle (code 3)
    assert fake.maps == [(7, 2, x.data_ptr(), [16384, 16], [16384 * 4], [32, 4], [1, 1], 3)]
    assert fake.launched == [((1024, 1, 1), (256, 1, 1), 1024, 1, 4, (2, 1, 1), b"\xab" * 128,
                              [16, 16384])]
    driver.launch(torch.device("cuda", 0), {"x": x.clone(), "out": out})
    assert len(fake.maps) == 2  # rebuilt per forward: the map holds the tensor's address


def test_a_tensor_tma_cannot_address_gets_zeros_where_optional_else_a_clear_error():
    x = torch.zeros(16 * 16384 + 1)[1:].view(16, 16384)  # 4 bytes past an aligned address
    driver, fake = _hopper_driver(", optional=1")
    driver.launch(torch.device("cuda", 0), {"x": x, "out": torch.zeros(16, 16384)})
    assert fake.maps == [] and fake.launched[0][6] == bytes(128)
    driver, fake = _hopper_driver("")
    with pytest.raises(RuntimeError, match="TMA cannot address x"):
        driver.launch(torch.device("cuda", 0), {"x": x, "out": torch.zeros(16, 16384)})


def test_the_driver_says_so_when_no_launch_runs_at_the_gpus_sm_count():
    spec, contract, source = _relu_with(
        "// kgen: launch relu_f32 grid=(SMS) block=(256) args=(x, out, batch_size, dim) "
        "when=(SMS >= 100)")
    context = _load(render(spec, contract, b"\x7fELF", "sm_90", source, "test"))
    context["_KGEN_DRIVER"]._lib = FakeCuda(20)
    with pytest.raises(RuntimeError, match="no launch of the kernel's contract runs on a GPU "
                       "of 20 multiprocessors"):
        context["_KGEN_DRIVER"].launch(torch.device("cuda", 0), {})


@pytest.mark.slow
def test_a_run_whose_best_kernel_needs_the_sm_count_writes_model_new(tmp_path):
    source = (KERNELS / "l1_relu_persistent.cu").read_text()
    (tmp_path / "script.json").write_text(json.dumps([fenced(source)]))
    result = CliRunner().invoke(main, [
        "generate", "--kernelbench", str(DATA / "l1_relu.py"), "--arch", "sm_90", "--no-gpu",
        "--backend", "scripted", "--out", str(tmp_path / "run"), "--json"],
        env={"KGEN_SCRIPT": str(tmp_path / "script.json"), "KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    context = _load((tmp_path / "run" / "model_new.py").read_text())
    assert context["_kgen_launches"](132)[0][:3] == ("relu_sms_f32", (528, 1, 1), (256, 1, 1))
    assert "model_new.py" in (tmp_path / "run" / "report.md").read_text()
