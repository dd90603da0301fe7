"""``tuner.tune``: a C kernel given as source text, tuned on the CPU end to end (compiled, verified against the
float64 reference, timed, stored, reported), its restrictions applied."""

from __future__ import annotations

import pytest

from tests.cpu.conftest import QUICK
from tuner.kernels.discovery import template_text_hash
from tuner.results import table as results

SOURCE = r"""
#include <stddef.h>
void matmul(const real_t* A, const real_t* B, real_t* C, int M, int N, int K) {
    for (int i0 = 0; i0 < M; i0 += TILE)
        for (int i = i0; i < M && i < i0 + TILE; ++i)
            for (int j = 0; j < N; ++j) {
                real_t acc = 0;
                for (int k = 0; k < K; k += UNROLL)
                    for (int u = 0; u < UNROLL && k + u < K; ++u)
                        acc += A[(size_t)i * K + k + u] * B[(size_t)(k + u) * N + j];
                C[(size_t)i * N + j] = UNROLL == 3 ? 0 : acc;  /* a wrong result, for verification to catch */
            }
}
"""


@pytest.mark.slow  # a whole run on the CPU, with its report
def test_a_c_kernel_given_as_source_is_tuned_verified_and_reported(quick_ceilings, tmp_path):
    import tuner

    out = tmp_path / "run"
    result = tuner.tune(source=SOURCE, parameters={"TILE": [4, 8, 16], "UNROLL": [1, 3, 4]},
                        restrictions=["TILE * UNROLL <= 32"], problem=(37, 29, 23), name="blocked_given",
                        trials=20, out=out, quiet=True, measure=QUICK)
    df, metadata = results.load(out)
    tuned = df[df["family"] == "blocked_given"]
    pairs = set(zip(tuned["p_TILE"], tuned["p_UNROLL"], strict=True))
    assert pairs == {(t, u) for t in (4, 8, 16) for u in (1, 3, 4) if t * u <= 32}  # (16, 4) never evaluated
    assert set(tuned[tuned["p_UNROLL"] == 3]["status"]) == {"wrong"}
    ok = tuned[tuned["p_UNROLL"] != 3]
    assert set(ok["status"]) == {"ok"} and ok["gflops"].gt(0).all() and ok["samples"].ge(3).all()
    assert metadata["runs"][0]["backend"] == "cpu"
    environment = next(iter(metadata["environments"].values()))
    assert environment["template_texts"]["blocked_given"] == template_text_hash("blocked_given")
    assert (out / "report.html").is_file() and (out / "study.log").is_file()
    assert result.best.iloc[0]["family"] == "blocked_given"

    again = tuner.tune(source=SOURCE, parameters={"TILE": [4, 8, 16], "UNROLL": [1, 3, 4]},
                       restrictions=["TILE * UNROLL <= 32"], problem=(37, 29, 23), name="blocked_given",
                       trials=20, out=out, quiet=True, measure=QUICK, report=False)
    assert len(again.df[again.df["family"] == "blocked_given"]) == len(tuned)  # continued: nothing left to try
