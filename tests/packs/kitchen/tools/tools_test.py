raise RuntimeError("a test file must never be imported by the indexer")
