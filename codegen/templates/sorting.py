"""The orders PyTorch's CPU kernels inherit from the C++ standard library, for results that depend on them.

torch.mode sorts each row with std::sort (comparing values only, so equal values end up in an order the
algorithm decides) and reports the position of the last element of the winning run. Which of several equal
values that is depends on libstdc++'s introsort step for step; `std_sort_order` is that algorithm.

Copied verbatim into reftorch/kernels/sorting.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `sorting.<name>`.
"""

def std_sort_order(v):
    """libstdc++'s std::sort (introsort: median-of-three quicksort, heapsort past 2*lg(n) levels, insertion
    sort of 16-element runs) of the values v, comparing with < only: the order of the original positions."""
    a = [(x, i) for i, x in enumerate(v)]

    def sift(first, hole, n, val):          # __adjust_heap + __push_heap
        top, child = hole, hole
        while child < (n - 1) // 2:
            child = 2 * (child + 1)
            if a[first + child][0] < a[first + child - 1][0]:
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if n % 2 == 0 and child == (n - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and a[first + parent][0] < val[0]:
            a[first + hole] = a[first + parent]
            hole, parent = parent, (parent - 1) // 2
        a[first + hole] = val

    def heapsort(first, last):
        n = last - first
        for parent in range((n - 2) // 2, -1, -1):
            sift(first, parent, n, a[first + parent])
        while last - first > 1:
            last -= 1
            val, a[last] = a[last], a[first]
            sift(first, 0, last - first, val)

    def loop(first, last, depth):
        while last - first > 16:
            if depth == 0:
                return heapsort(first, last)
            depth -= 1
            x, y, z = a[first + 1], a[first + (last - first) // 2], a[last - 1]
            pick = (first + (last - first) // 2 if y[0] < z[0] else last - 1 if x[0] < z[0] else first + 1) \
                if x[0] < y[0] else (first + 1 if x[0] < z[0] else last - 1 if y[0] < z[0] else first + (last - first) // 2)
            a[first], a[pick] = a[pick], a[first]
            lo, hi, p = first + 1, last, a[first][0]
            while True:
                while a[lo][0] < p:
                    lo += 1
                hi -= 1
                while p < a[hi][0]:
                    hi -= 1
                if not lo < hi:
                    break
                a[lo], a[hi] = a[hi], a[lo]
                lo += 1
            loop(lo, last, depth)
            last = lo

    def insert(i, guarded):
        val, j = a[i], i
        if guarded and val[0] < a[0][0]:
            a[1:i + 1] = a[0:i]
            a[0] = val
            return
        while val[0] < a[j - 1][0]:
            a[j] = a[j - 1]
            j -= 1
        a[j] = val

    n = len(a)
    if n > 1:
        loop(0, n, 2 * (n.bit_length() - 1))
        for i in range(1, n):
            insert(i, i < 16)
    return [i for _, i in a]


def mode(v):
    """(value, position) that torch.mode reports for the values v: the first longest run of equal values
    (`!=` ends a run, so each NaN is a run of its own) after std::sort, and its last element's position."""
    order = std_sort_order(v)
    best, at, longest, run = None, None, 0, 0
    for k, i in enumerate(order):
        run += 1
        if k == len(order) - 1 or v[i] != v[order[k + 1]]:
            if run > longest:
                best, at, longest = v[i], i, run
            run = 0
    return best, at
