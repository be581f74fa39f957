"""dbbench's results service: the one writer of the results claim.

Runner pods hand it their result files and progress over HTTP; the operator
asks it to merge a step's pods and reads summaries and progress from it. It
owns the claim, so ReadWriteOnce storage works wherever runner pods land.
See docs/results.md for the API and its guarantees.
"""

__version__ = "0.1.0"
