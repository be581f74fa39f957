"""`make scale`: the operator on a simulated 100-node cluster (kwok) with 1,000 runs.

Pure builders (`pools`, `fleet`), pure checks (`placement`, `apimetrics`) and
the processes around them (`simulating`, `operating`, `results_side`); the
script itself is hack/scale.py.
"""
