"""Entry point of `python3 -m isletune_analysis` and of the `isletune-analyze` script."""

import sys

# Module -> (Debian package, pip name) of every dependency (pyproject.toml lists them).
DEPENDENCIES = {
    "h5py": ("python3-h5py", "h5py"), "numpy": ("python3-numpy", "numpy"),
    "matplotlib": ("python3-matplotlib", "matplotlib"), "pandas": ("python3-pandas", "pandas"),
    "scipy": ("python3-scipy", "scipy"), "yaml": ("python3-yaml", "PyYAML"),
}


def run() -> int:
    """Runs the command line; a missing dependency is one sentence and exit code 2."""
    try:
        from .cli import main
    except ImportError as exc:
        name = (exc.name or "").split(".")[0]
        if name in DEPENDENCIES:
            deb, pip = DEPENDENCIES[name]
            print(f"isletune-analyze: needs the Python module {name}, which is not installed: "
                  f"install {deb} (Debian/Ubuntu) or `pip install {pip}`", file=sys.stderr)
        else:
            print(f"isletune-analyze: {exc}", file=sys.stderr)
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(run())
