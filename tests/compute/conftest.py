"""Fixtures of the compute tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def sigcomm21_artifact() -> Path:
    """The fetched SIGCOMM21-5G artifact (the fetch tool's snapshot of
    github.com/SIGCOMM21-5G/artifact), or a skip saying why the fits are not re-run."""
    from validation.sigcomm21.fit_modem_power import DEFAULT_ARTIFACT

    if not DEFAULT_ARTIFACT.exists():
        pytest.skip(
            f"the SIGCOMM21-5G artifact is not at {DEFAULT_ARTIFACT} (fetch github:SIGCOMM21-5G/"
            "artifact, or run the script with --artifact PATH): the fit is not re-run"
        )
    return DEFAULT_ARTIFACT
