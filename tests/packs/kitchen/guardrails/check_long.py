raise RuntimeError("guardrails/check_?.py matches one character only")
