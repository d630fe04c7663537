"""The workshop: one real Valkey for a class, every learner a worker on the room's one queue.

:mod:`.room` starts the server (the launcher of :mod:`echomq_lab.servers`: loopback only, an
append-only file, no eviction, a session of its own) with one ACL user per learner, one for the
gateway and one for the instructor, writes ``room.json``, and brings a room back
(:func:`~.room.resume`) or ends it (:func:`~.room.stop_room`); :mod:`.gateway` is the learners'
one way in (TCP and WebSocket), which passes on only the lab's calls and writes the record of who
did what (:mod:`.record` names its keys, :mod:`.resp` reads the wire); :mod:`.desk` is a
learner's (or the instructor's) client, which runs the real handles; :mod:`.ledger` reads the
record back (:func:`tally`, the ledger the audit of :mod:`echomq_lab.sim` judges, the refusals);
:mod:`.board` is what the instructor's page drives (the reaper, the lease length, storms of
stalls); :mod:`.practice` is a room of one on the embedded server; :mod:`.drill` a robot learner;
:mod:`.watch` starts a dead server again; :mod:`.memory` is the budget the gateway keeps below
``maxmemory``; :mod:`.pace` each learner's pace at the gateway.

This layer may import the protocol core, :mod:`echomq_lab.servers` (the one launcher) and
:mod:`echomq_lab.sim`; never the widgets.

``python -m echomq_lab.classroom start --room NAME --learners N --out DIR`` runs a room until
Ctrl-C; ``resume DIR`` brings it back after its process died; ``stop DIR`` ends it."""

from echomq_lab.classroom.desk import Desk, join
from echomq_lab.classroom.ledger import acl_refusals, calls, tally
from echomq_lab.classroom.room import Room, RoomError, open_room

__all__ = ["Desk", "Room", "RoomError", "acl_refusals", "calls", "join", "open_room", "tally"]
