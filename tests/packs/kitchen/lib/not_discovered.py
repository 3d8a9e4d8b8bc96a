raise RuntimeError("lib/ is matched by no glob")
