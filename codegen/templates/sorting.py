"""The orders PyTorch's CPU kernels inherit from the C++ standard library, for results that depend on them.

torch.mode sorts each row with std::sort (comparing values only, so equal values end up in an order the
algorithm decides) and reports the position of the last element of the winning run; torch.topk selects
with std::nth_element (then std::sort of the first k - 1) or, for k * 64 <= n, std::partial_sort. Which of
several equal values lands where depends on libstdc++'s algorithms step for step; `_Std` is those
algorithms (bits/stl_algo.h, bits/stl_heap.h), on a list of (value, position) pairs.

Copied verbatim into reftorch/kernels/sorting.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `sorting.<name>`.
"""


def _lg(n):
    return n.bit_length() - 1


class _Std:
    """libstdc++'s introsort, introselect and heap algorithms over (value, position) pairs, `less` comparing
    values: the same comparisons and moves in the same order, so equal values end where libstdc++ puts them."""

    def __init__(self, v, less):
        self.a = [(x, i) for i, x in enumerate(v)]
        self.less = less

    def lt(self, i, j):
        return self.less(self.a[i][0], self.a[j][0])

    def swap(self, i, j):
        self.a[i], self.a[j] = self.a[j], self.a[i]

    def adjust_heap(self, first, hole, n, val):         # __adjust_heap + __push_heap
        a, less = self.a, self.less
        top = child = hole
        while child < (n - 1) // 2:
            child = 2 * (child + 1)
            if less(a[first + child][0], a[first + child - 1][0]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if n % 2 == 0 and child == (n - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[first + parent][0], val[0]):
            a[first + hole] = a[first + parent]
            hole, parent = parent, (parent - 1) // 2
        a[first + hole] = val

    def pop_heap(self, first, last, result):
        val, self.a[result] = self.a[result], self.a[first]
        self.adjust_heap(first, 0, last - first, val)

    def heap_select(self, first, middle, last):         # __make_heap, then a pop for each smaller element
        n = middle - first
        for parent in range((n - 2) // 2, -1, -1) if n >= 2 else ():
            self.adjust_heap(first, parent, n, self.a[first + parent])
        for i in range(middle, last):
            if self.lt(i, first):
                self.pop_heap(first, middle, i)

    def partial_sort(self, first, middle, last):        # __heap_select + __sort_heap
        self.heap_select(first, middle, last)
        while middle - first > 1:
            middle -= 1
            self.pop_heap(first, middle, middle)

    def partition_pivot(self, first, last):             # __move_median_to_first + __unguarded_partition
        x, y, z = first + 1, first + (last - first) // 2, last - 1
        lt = self.lt
        if lt(x, y):
            pick = y if lt(y, z) else z if lt(x, z) else x
        else:
            pick = x if lt(x, z) else z if lt(y, z) else y
        self.swap(first, pick)
        lo, hi = first + 1, last
        while True:
            while lt(lo, first):
                lo += 1
            hi -= 1
            while lt(first, hi):
                hi -= 1
            if not lo < hi:
                return lo
            self.swap(lo, hi)
            lo += 1

    def linear_insert(self, i):                         # __unguarded_linear_insert
        a, less = self.a, self.less
        val, j = a[i], i
        while less(val[0], a[j - 1][0]):
            a[j] = a[j - 1]
            j -= 1
        a[j] = val

    def insertion_sort(self, first, last):
        a = self.a
        for i in range(first + 1, last):
            if self.lt(i, first):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                self.linear_insert(i)

    def introsort_loop(self, first, last, depth):
        while last - first > 16:
            if depth == 0:
                return self.partial_sort(first, last, last)
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort_loop(cut, last, depth)
            last = cut

    def sort(self, first, last):                        # std::sort: introsort, then __final_insertion_sort
        if last - first < 2:
            return
        self.introsort_loop(first, last, 2 * _lg(last - first))
        self.insertion_sort(first, min(first + 16, last))
        for i in range(first + 16, last):
            self.linear_insert(i)

    def nth_element(self, first, nth, last):            # __introselect
        if first == last or nth == last:
            return
        depth = 2 * _lg(last - first)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)


def std_sort_order(v):
    """libstdc++'s std::sort of the values v comparing with < only: the order of the original positions."""
    s = _Std(v, lambda x, y: x < y)
    s.sort(0, len(s.a))
    return [i for _, i in s.a]


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


def _nan_first_greater(x, y):
    return (x != x and y == y) or x > y


def _nan_last_less(x, y):
    return (x == x and y != y) or x < y


def topk_order(v, k, largest, sorted):
    """The positions torch.topk reports for the k largest (smallest) of the values v, NaN counting as the
    largest: PyTorch's topk_impl_loop, partial_sort for k * 64 <= n, else nth_element at k - 1 and (sorted)
    std::sort of the k - 1 before it."""
    if k == 0:
        return []
    s = _Std(v, _nan_first_greater if largest else _nan_last_less)
    n = len(s.a)
    if k * 64 <= n:
        s.partial_sort(0, k, n)
    else:
        s.nth_element(0, k - 1, n)
        if sorted:
            s.sort(0, k - 1)
    return [i for _, i in s.a[:k]]
