raise RuntimeError("venv is never walked")
