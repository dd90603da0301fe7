"""The process Nsight Compute profiles: each kernel of a job launched once, on a verified workspace.

    python -m tuner.backends.pycuda.ncu_child JOB_FOLDER

Each configuration's cubin (compiled by the tuner, from its compile cache) is loaded and launched exactly once,
in the job's order, into outputs poisoned beforehand, on the inputs the tuner measures with (seeded random
values, the float64 reference computed from them); after the launch the outputs are compared with the reference,
so that every counted launch is a correct one. Nothing else runs on the GPU here (poisoning and copies are
driver calls, not kernels), so the profiler's results are the job's kernels in launch order; the manifest says
which ran (:mod:`tuner.counters.job`). Progress goes to the manifest, read by the parent while it waits.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from tuner.counters.job import JOB_FILE, MANIFEST_FILE, Job, JobKernel, ManifestWriter
from tuner.errors import TunerError

LAUNCH_REFUSALS = ("too many resources requested", "invalid argument", "out of resources")


def _device_record() -> dict[str, Any]:
    from tuner.backends.pycuda.device import describe

    device = describe()
    return {k: device.get(k) for k in ("name", "uuid", "compute_capability", "arch", "multiprocessors",
                                       "sm_clock_mhz", "l2_bytes")}


class Launcher:
    """One workspace at a time (the job is ordered by problem and dtype), each kernel launched once."""

    def __init__(self, input_seed: int, multiprocessors: int | None):
        import pycuda.driver as cuda

        self.cuda = cuda
        self.input_seed = input_seed
        self.multiprocessors = multiprocessors
        self.key: tuple[Any, ...] | None = None
        self.workspace: Any = None

    def _workspace(self, kernel: JobKernel) -> Any:
        from tuner.backends.pycuda.workspace import Workspace, host_data
        from tuner.kernels.discovery import get_family

        config = kernel.config
        family_kernel = get_family(config.family).kernel
        key = (family_kernel, config.problem, config.dtype)
        if key != self.key:
            if self.workspace is not None:
                self.workspace.free()
                self.workspace = None
            host = host_data(family_kernel, config.problem, config.dtype, self.input_seed)
            self.workspace, self.key = Workspace(family_kernel, config.problem, config.dtype, host), key
        return self.workspace

    def run(self, index: int, kernel: JobKernel, manifest: ManifestWriter) -> bool:
        """Launch one kernel; False when the context is lost and nothing more can run."""
        if kernel.launch.extended:
            return self._run_extended(index, kernel, manifest)
        from tuner.kernels.targets import STATIC_SHARED_LIMIT

        cuda, launch, key = self.cuda, kernel.launch, kernel.config.key
        workspace = self._workspace(kernel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function = cuda.module_from_buffer(kernel.cubin.read_bytes()).get_function(launch.kernel_name)
        if launch.dynamic_shared_bytes > STATIC_SHARED_LIMIT:
            function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.dynamic_shared_bytes)
        function.prepare(workspace.signature)
        workspace.prepare_outputs()
        cuda.Context.synchronize()
        manifest.launching(index, key)
        try:
            function.prepared_call(launch.grid_on(self.multiprocessors), launch.block, *workspace.arguments(),
                                   shared_size=launch.dynamic_shared_bytes)
        except cuda.Error as exc:
            if any(marker in str(exc) for marker in LAUNCH_REFUSALS):
                manifest.outcome(index, key, "refused", f"the driver refused the launch: {exc}")
                return True
            raise
        try:
            cuda.Context.synchronize()
        except cuda.Error as exc:
            manifest.outcome(index, key, "crashed", f"{type(exc).__name__}: {exc}")
            return False
        verdict = workspace.check()
        manifest.outcome(index, key, "ok" if verdict.ok else "wrong", verdict.reason or "")
        return True


    def _run_extended(self, index: int, kernel: JobKernel, manifest: ManifestWriter) -> bool:
        """A cluster or tensor-map launch, through the GPU measuring process's own launcher."""
        from tuner.backends import cuda_driver
        from tuner.backends.measuring_process import Fatal
        from tuner.backends.pycuda.measurer import ExtendedLaunch, LaunchRejected
        from tuner.kernels.tensor_maps import TensorMapRefused

        key, workspace = kernel.config.key, self._workspace(kernel)
        try:
            launcher = ExtendedLaunch(kernel.cubin.read_bytes(), kernel.launch, workspace, self.multiprocessors)
        except (TensorMapRefused, cuda_driver.DriverError) as exc:
            manifest.outcome(index, key, "refused", str(exc))
            return True
        try:
            workspace.prepare_outputs()
            self.cuda.Context.synchronize()
            manifest.launching(index, key)
            launcher.run()
            self.cuda.Context.synchronize()
        except LaunchRejected as exc:
            manifest.outcome(index, key, "refused", str(exc))
            return True
        except (Fatal, self.cuda.Error) as exc:
            manifest.outcome(index, key, "crashed", f"{type(exc).__name__}: {exc}")
            return False
        finally:
            launcher.close()
        verdict = workspace.check()
        manifest.outcome(index, key, "ok" if verdict.ok else "wrong", verdict.reason or "")
        return True


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tuner.backends.pycuda.ncu_child JOB_FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    job = Job.read(folder / JOB_FILE)
    from tuner.backends.pycuda.device import require_gpu
    from tuner.kernels.discovery import use_family_dirs

    try:
        use_family_dirs(list(job.family_dirs))
        require_gpu()
    except TunerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with (folder / MANIFEST_FILE).open("a") as stream:
        manifest = ManifestWriter(stream)
        device = _device_record()
        manifest.device(device)
        launcher = Launcher(job.input_seed, device.get("multiprocessors"))
        for index, kernel in enumerate(job.kernels):
            if not launcher.run(index, kernel, manifest):
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
