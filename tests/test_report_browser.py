"""The HTML report as a browser shows it: headless Chromium renders the fixture run's report.html in a narrow
window; the screenshot must not be blank and must show the embedded figures, and the DOM must hold them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from test_report import build_run_folder

from tests.patience import patient
from tuner.report import write_report
from tuner.report.roofline import CUBLAS_COLOR, MODEL_STYLES

pytestmark = pytest.mark.slow

WIDTH, HEIGHT = 480, 2400


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    if found is None:
        pytest.skip("chromium is not installed (apt-get install chromium); the HTML is checked without a browser "
                    "in test_report.py")
    return found


def _browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=patient(180))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, list[Path]]:
    folder = build_run_folder(tmp_path_factory.mktemp("browser_run"))
    written = write_report(folder, quiet=True)
    return folder / "report.html", written


def _hex(color: str) -> np.ndarray:
    return np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)]) / 255.0


def _near(pixels: np.ndarray, color: str, tolerance: float = 0.12) -> int:
    return int((np.abs(pixels - _hex(color)).max(axis=-1) < tolerance).sum())


def test_screenshot_in_a_narrow_window_shows_the_figures(report, tmp_path):
    page, _ = report
    shot = tmp_path / "report.png"
    done = _browse(page, tmp_path / "profile", f"--screenshot={shot}")
    assert shot.is_file(), done.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert pixels.std() > 0.05, "the screenshot is blank"
    colours = np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200
    # The page's own styles use neither the cuBLAS gold nor the machine model's red: those pixels come from the
    # roofline figure, so the embedded PNG was decoded and drawn.
    assert _near(pixels, CUBLAS_COLOR) > 10
    assert _near(pixels, MODEL_STYLES[0]["color"]) > 20


def test_dom_holds_every_figure_as_a_data_uri(report, tmp_path):
    page, written = report
    done = _browse(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    sources = re.findall(r'<img [^>]*src="([^"]*)"', dom)
    assert len(sources) == len([p for p in written if p.suffix == ".png"])
    assert all(s.startswith("data:image/png;base64,") for s in sources)
    assert 'extern "C" __global__' in dom and "<h2>Roofline</h2>" in dom
