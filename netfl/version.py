"""The package version (a leaf module, so any layer may import it)."""

__version__ = "0.1.0"


def torch_version() -> str:
    """torch's ``__version__`` (with its build tag, e.g. ``+cu130``) without importing
    torch when a run did not need it: read from the installed ``torch/version.py``."""
    import importlib.util
    import re
    import sys
    from pathlib import Path

    if "torch" in sys.modules:
        return str(sys.modules["torch"].__version__)
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        text = (Path(spec.origin).parent / "version.py").read_text(errors="replace")
        found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if found:
            return found.group(1)
    from importlib.metadata import version

    return version("torch")
