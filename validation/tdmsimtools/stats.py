"""The error measures every accuracy report uses (one definition each)."""
import math


def err(sim, ref):
    """Relative error of a simulated value against the reference: sim / ref - 1."""
    return sim / ref - 1.0


def mape(rows, key_sim, key_ref):
    """Mean absolute percentage error (in percent) of rows[key_sim] against rows[key_ref];
    NaN for no rows."""
    if not rows:
        return float("nan")
    return 100 * sum(abs(err(r[key_sim], r[key_ref])) for r in rows) / len(rows)


def spearman(a, b):
    """Spearman rank correlation (average ranks for ties); NaN for fewer than two values
    or a constant sequence."""
    def ranks(x):
        order = sorted(range(len(x)), key=lambda i: x[i])
        r = [0.0] * len(x)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va > 0 and vb > 0 else float("nan")
