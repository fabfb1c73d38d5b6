"""metrics.csv of a grove run folder (train bc, nlp lm train, ...) as
numpy columns.

    m = grove.read_metrics("runs/s1/metrics.csv")
    m["update"], m["nll"]      # float64 arrays; NaN where a cell is empty
"""

import csv

import numpy as np

from ._lib import GroveError


def read_metrics(path):
    """{column: float64 array} in file order (the dict keeps the header's
    column order). Empty cells (a column not measured on that row) are NaN.
    GroveError naming the line for a ragged row or a cell that is not a
    number."""
    path = str(path)
    try:
        f = open(path, newline="")
    except OSError as e:
        raise GroveError("%s: cannot read: %s" % (path, e.strerror)) from None
    with f:
        rows = list(csv.reader(f))
    if not rows or not rows[0]:
        raise GroveError("%s: empty (no header line)" % path)
    names = [n.strip() for n in rows[0]]
    cols = [[] for _ in names]
    for lineno, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(names):
            raise GroveError("%s: line %d has %d cells, the header %d"
                             % (path, lineno, len(row), len(names)))
        for i, cell in enumerate(row):
            cell = cell.strip()
            try:
                cols[i].append(float(cell) if cell else np.nan)
            except ValueError:
                raise GroveError("%s: line %d, column '%s': '%s' is not a "
                                 "number" % (path, lineno, names[i], cell)) \
                    from None
    return {n: np.array(c, np.float64) for n, c in zip(names, cols)}
