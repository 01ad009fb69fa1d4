"""The timeline: what happened to a table, instant by instant.

- `instant`: an instant (time, action, state) and its file names;
- `active`: `Timeline`, the active timeline (layouts 1 and 2) with the archived one behind it;
- `archived`: the archived timeline's commits;
- `instant_content`: what an instant file holds (JSON or Avro);
- `commit_metadata`: typed commit, clean, rollback and compaction-plan metadata;
- `models`: the Avro schemas of the timeline records we write.
"""

from metadata.timeline.active import WRITER_GRACE_SECONDS, WRITER_PAUSES, Timeline, WrittenBases
from metadata.timeline.instant import Action, Instant, State

__all__ = ["WRITER_GRACE_SECONDS", "WRITER_PAUSES", "Action", "Instant", "State", "Timeline", "WrittenBases"]
