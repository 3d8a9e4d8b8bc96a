raise ValueError("this module fails at import")
