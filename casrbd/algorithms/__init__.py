"""The algorithms, one module each, written once over casadi types.

They take casadi column vectors (SX, MX or DM) and return casadi matrices;
``casrbd.api`` checks shapes, dispatches numeric calls to cached Functions
and converts results."""
