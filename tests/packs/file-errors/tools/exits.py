import sys

sys.exit("a module that exits at import")
