raise RuntimeError("hidden folders are never walked")
