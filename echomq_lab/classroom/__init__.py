"""The workshop: one real Valkey for a class, every learner a worker on the room's one queue.

:mod:`.room` starts the server (the launcher of :mod:`echomq_lab.servers`) with one ACL
user per learner and an instructor, and writes ``room.json``; :mod:`.desk` is a learner's (or
the instructor's) client, which runs the real handles and writes each answer to its own log
stream in the room; :mod:`.ledger` reads those logs back (:func:`tally`, the ledger the
audit of :mod:`echomq_lab.sim` judges, the ACL refusals by user name); :mod:`.board` is what the
instructor's page drives (the reaper, the lease length, storms of stalls); :mod:`.practice` is
a room of one on the embedded server; :mod:`.drill` a robot learner; :mod:`.gateway` lets pages
in the browser reach the room over WebSocket, each as its own user (a desk joins through it
there, when the join link names it).

This layer may import the protocol core, :mod:`echomq_lab.servers` (the one launcher) and
:mod:`echomq_lab.sim`; never the widgets.

``python -m echomq_lab.classroom start --room NAME --learners N --out DIR`` runs a room until
Ctrl-C."""

from echomq_lab.classroom.desk import Desk, join
from echomq_lab.classroom.ledger import acl_refusals, calls, tally
from echomq_lab.classroom.room import Room, RoomError, open_room

__all__ = ["Desk", "Room", "RoomError", "acl_refusals", "calls", "join", "open_room", "tally"]
