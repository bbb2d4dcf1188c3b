"""One lock for everything that traces the reference in the searching process.

FX symbolic tracing (fusion seeds) and Dynamo (compiler seeds) keep process-wide state: Dynamo
refuses to run while any thread is inside an FX trace ("using FX to symbolically trace a
dynamo-optimized function"). Operators propose from a thread pool, and a sweep runs several
problems in one process, so seed generation that traces takes this lock.
"""

from __future__ import annotations

import threading

TRACING_LOCK = threading.RLock()
