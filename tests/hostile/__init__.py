"""The hostile-table generator (issue 64): tables shaped by someone who can
write their files, and a runner that puts every command to each of them
with memory capped.

`TRAPS` names each trap; `Trap.plant(table, outside)` turns a copy of the
base table (a version 8 MERGE_ON_READ table with a metadata table) into the
hostile one, aimed at `outside`, a folder beside the table that holds the
canary. Traps that held before this suite are here too, so that they stay
held. `tests/test_hostile_tables.py` runs them.
"""

from tests.hostile.traps import COMMANDS, TRAPS, Trap, base_table, canary

__all__ = ["COMMANDS", "TRAPS", "Trap", "base_table", "canary"]
