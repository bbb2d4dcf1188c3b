"""One lock for everything that traces or runs the reference in the searching process.

FX symbolic tracing (fusion and rewrite seeds) patches `torch.nn.Module.__call__` for the whole
process while it traces: a module called meanwhile from another thread is routed into that trace
("NameError: module is not installed as a submodule", seen when L3/15's reference check ran beside
L3/13's rewrite seed in one sweep process). Dynamo (compiler seeds) refuses to run while any thread
is inside an FX trace. Operators propose from a thread pool, and a sweep runs several problems in one
process, so seed generation that traces, and the reference checks that run models, take this lock.
"""

from __future__ import annotations

import threading

TRACING_LOCK = threading.RLock()
