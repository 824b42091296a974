"""``bench inference --sessions N``: N sessions in one command, each a fresh process, a pause between.

One session a side cannot tell a change from the noise between sessions (a new process, new connections,
the server's state: about 8% on the 1x H200). Several sessions a side can: ``bench compare`` counts each
session once and estimates that noise from them. Each session's result is written to ``FILE-sNN.json``
(from ``--json FILE``) and published like one ``bench inference`` run; before the first one, what change
that many sessions a side can detect is said.
"""

from __future__ import annotations

from pathlib import Path

from rigaudit.orchestrator.bench.compare import run_sessions
from rigaudit.orchestrator.bench.run import Approve, Outputs, publish_inference, reach_server
from rigaudit.tools.bench.compare import DEFAULT_SESSION_CV
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.power import detectable, headline_share
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.events.session import Output
from rigaudit.tools.schema.events.sink import EventSink

MAX_SESSIONS = 100
MAX_GAP_S = 3600.0


def session_path(json_path: Path, index: int) -> Path:
    """``base.json`` → ``base-s01.json`` (index from 0)."""
    return json_path.with_name(f"{json_path.stem}-s{index + 1:02d}{json_path.suffix or '.json'}")


def sessions_power(spec: LoadSpec, sessions: int, confidence: float = 0.95) -> str:
    """What ``sessions`` a side can detect at the default spread between sessions, as one line."""
    share = headline_share(1.0 - confidence, len(spec.concurrency))
    found = detectable(DEFAULT_SESSION_CV, sessions, alpha=share, paired=False)
    said = f"about {found:.0%}" if found is not None else "nothing"
    return (
        f"with {sessions} sessions a side, at a spread of {DEFAULT_SESSION_CV:.0%} between sessions (what the 1x H200 "
        f"measured; bench calibrate measures this host's), bench compare resolves changes of output tok/s of {said} "
        "(found 80% of the time)"
    )


def run_inference_sessions(
    spec: LoadSpec, sessions: int, gap_s: float, *, approve: Approve, emit: EventSink, outputs: Outputs
) -> list[BenchResult]:
    """Say what they can detect, ask once, run the sessions, write and publish each; the results in order."""
    if not 2 <= sessions <= MAX_SESSIONS or not 0 <= gap_s <= MAX_GAP_S:
        raise UsageError(f"--sessions wants 2 to {MAX_SESSIONS} and --gap-s 0 to {MAX_GAP_S:g}")
    if outputs.json is None or str(outputs.json) == "-":
        raise UsageError("--sessions writes one result a session: give --json FILE (written as FILE-s01.json, ...)")
    json_path = outputs.json
    reach_server(spec, emit)
    emit(Output(text=sessions_power(spec, sessions)))
    total = sessions * spec.total_requests(spec.repeat)
    approve(
        f"send {total} streaming requests to {spec.base_url} in {sessions} sessions, {gap_s:g} s apart",
        [
            f"each session a fresh process with new connections: model {spec.model}, {spec.api} API, concurrency "
            f"{','.join(map(str, spec.concurrency))}, {spec.repeat} repeat(s), {spec.prompt_tokens} prompt / "
            f"{spec.max_tokens} output tokens each",
            "a production server serves these requests alongside its real traffic",
        ],
    )

    def keep(index: int, result: BenchResult) -> None:
        publish_inference(result, emit=emit, outputs=Outputs(json=session_path(json_path, index), report=outputs.report))

    results = run_sessions(spec, sessions, gap_s, emit, "sessions", keep)
    names = " ".join(str(session_path(json_path, i)) for i in range(sessions))
    emit(Output(text=f"{sessions} sessions written: {names}; compare them with: rigaudit bench compare {names} --against ..."))
    return results
