"""A family without arithmetic (the transpose example) through the run and the report: its search maximizes the
effective bandwidth, its figures are bandwidth rooflines, its numbers are told in GB/s."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner
from tests.scripted_backend import ScriptedBackend
from tuner.config import Config
from tuner.kernels import discovery
from tuner.measure.measurement import Measurement, Resources, Status, Timing
from tuner.report import write_report
from tuner.results import table as results
from tuner.tuning.progress import summary_table

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "transpose" / "transpose.yaml"


class Copies(ScriptedBackend):
    """A stand-in whose transposes all run: the tiled ones at 2 ms, the naive ones at 6 ms (not measurements)."""

    def evaluate(self, config: Config) -> Measurement:
        self.calls.append(config.key)
        median = 2.0 if config["VARIANT"] == "tiled" else 6.0
        timing = Timing(median, median, median, 0.0, (median,) * 3)
        return Measurement(Status.OK, timing=timing, error=0.0, resources=Resources(registers=16))


@pytest.fixture(scope="module")
def transposed(tmp_path_factory) -> tuner.RunResult:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(discovery, "_dirs", ())
        discovery.families.cache_clear()
        out = tmp_path_factory.mktemp("transpose")
        result = tuner.run(EXAMPLE, backend=Copies(with_baseline=False), strategy="grid", trials=40, out=out,
                           quiet=True, report=False)
        yield result
    discovery.families.cache_clear()


def test_the_search_maximizes_the_effective_bandwidth(transposed):
    df = transposed.df
    ok = df[df["status"] == "ok"]
    assert ok["gflops"].isna().all() and (ok["flops"] == 0).all()
    assert (ok["performance"] == ok["effective_bandwidth_gbs"]).all()
    big = ok[ok["problem"] == "8192x8192"]
    float32 = big[big["dtype"] == "float32"]
    assert float32["performance"].max() == pytest.approx(2 * 8192 * 8192 * 4 / 2e-3 / 1e9)
    best = results.best_rows(df)
    assert set(best["p_VARIANT"]) == {"tiled"} and len(best) == 4
    table = summary_table(df)
    assert all(str(cell).endswith(" GB/s") for cell in table["GFLOP/s"])


@pytest.mark.slow
def test_the_report_draws_bandwidth_rooflines(transposed):
    written = {path.name for path in write_report(transposed.out, quiet=True)}
    assert {f"bandwidth_{d}_{p}.png" for d in ("float32", "float64") for p in ("8192x8192", "4000x3000")} <= written
    assert not any(name.startswith("roofline") for name in written), "a transpose has no place on the FLOP roofline"
    page = (transposed.out / "report.html").read_text()
    assert "Bandwidth roofline" in page and "GB/s" in page
