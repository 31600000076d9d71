"""What every algorithm walks with: the tree (``tree.py``), the articulated-inertia pass
(``articulated.py``) and the sparse factorization M = L^T D L (``ltdl.py``)."""
