raise RuntimeError("a dot file is never imported")
