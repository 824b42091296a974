"""The typed events a session emits: the one stream every command (and the fleet) reports through.

A command emits events into its session; the terminal UI draws them, the transcript writer records
them, ``--json`` is written from them, and ``rigaudit replay`` draws the recorded ones again with the
same UI. An :data:`~.sink.EventSink` is anything that takes an event; :func:`~.sink.discard` is the one
that ignores them.

The events live in one module per concern (:mod:`.session`, :mod:`.audit`, :mod:`.chat`, :mod:`.apply`,
:mod:`.bench`, :mod:`.gate`, :mod:`.fleet`, :mod:`.diff`, :mod:`.catalog`, :mod:`.transcripts`), the :data:`~.union.Event`
union of them all in :mod:`.union`: a command imports the events it emits from their modules, and only one that
reads or writes a transcript imports them all (each event class costs its start, ``rigaudit check``'s above all).
This package gives no names of its own.
"""
