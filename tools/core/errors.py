"""The one exception root of rigaudit, and the three kinds of failure a command ends with.

Every error rigaudit raises is a :class:`RigauditError`; ``cli.main`` catches it once, prints
``rigaudit: <message>`` (one line) and exits with the error's :attr:`~RigauditError.exit_code`.
The classes live beside the code that raises them; this is the whole tree (exit status, module):

    RigauditError                 1  the root
    ├── UsageError                2  bad arguments, or an input that cannot be used
    │   ├── InputError            2  tools.bounded: an input file refused (not regular, too big) or damaged
    │   │   ├── SnapshotError     2  tools.hosts.snapshot: not a snapshot, or one that cannot be read
    │   │   ├── TranscriptError   2  transcripts.errors: not a transcript, an unsupported version
    │   │   ├── BundleError       2  tools.share._unpack: a share bundle refused or damaged
    │   │   └── JournalReadError  2  tools.journal: not a journal, or one that cannot be read
    │   ├── JsonError             2  tools.bounded: text that is not JSON, or nested too deep
    │   ├── SnapshotTargetError   2  tools.hosts.snapshot_writer: the folder to write is taken
    │   ├── JournalRefused        2  tools.actions.provenance: a journal this apply did not write for this host
    │   ├── PlanRefused           2  orchestrator.change.trust: a plan file not rigaudit's own for this machine
    │   ├── SealError             2  tools.actions.seal: the journal key missing, or not in this user's custody
    │   ├── BenchUnavailable      2  tools.bench.errors: torch, GPUs or a tool missing here
    │   ├── BenchInputError       2  tools.bench.errors: a result file, config.json or size list unfit
    │   │   └── WorkloadMismatch  2  tools.bench.like: two results of different workloads compared
    │   ├── TransportError        2  tools.remote.transport: a target or option unsafe to pass to ssh
    │   ├── RealModelBlocked      2  agents.llm.errors: RIGAUDIT_BLOCK_REAL_LLM refuses the endpoint
    │   ├── CommandError          2  orchestrator.chat.steps: a chat /command that does not parse
    │   ├── ReportRefused         2  orchestrator.report: a report of another machine, or a file that is not one
    │   ├── OutputRefused         2  tools.files.outputs: an output path that cannot or must not be written
    │   ├── EndpointError         2  tools.bench.endpoint: a server URL that cannot take the load (what to change)
    │   └── NotDerived            2  orchestrator.bench.step_arms: a restart step whose arms cannot be derived
    ├── NotApprovedError          3  a change or a benchmark without the approval it needs
    └── OperationError            1  the work itself failed
        ├── HostWriteError        1  tools.hosts.base: a write to the host failed
        ├── MirrorError           1  tools.hosts.mirror: a read of a snapshot's files refused or failed
        ├── ProgramError          1  tools.hosts.launch: a program not run (outside the system directories)
        ├── ActionError           1  tools.actions.ops: a target could not be read, set or restored
        ├── PciConfigError        1  tools.pci: bytes that are not a configuration space
        ├── PciRegisterError      1  tools.pci: a register that cannot be located or written
        ├── SnapshotWriteError    1  tools.hosts.snapshot_writer: the snapshot could not be written
        ├── JournalError          1  tools.journal: the journal could not be written
        ├── ShareError            1  tools.share.bundle: the share bundle could not be written
        ├── BenchFailed           1  tools.bench.errors: a benchmark started and failed
        ├── SwitchFailed          1  orchestrator.bench_ab: an A/B switch did not verify, or the server stopped
        ├── HttpError             1  tools.bench._http: a connection failed or broke the protocol
        ├── RuleError             1  tools.policy.schema: a policy rule is malformed
        ├── RegistryError         1  agents.registry: an area package that does not declare itself
        ├── ArchiveError          1  tools.remote.tarstream: a stream that is not a snapshot archive
        ├── PayloadError          1  tools.remote.payload: a module the node program needs is missing
        ├── NodeServerError       1  tools.remote.client: the node server broke the protocol
        ├── NodeError             1  tools.remote.session: collection on a node failed
        ├── InjectedError         1  tools.bench.fake_server: a test generator's scripted HTTP failure
        ├── DropStream            1  tools.bench.fake_server: a test generator cuts its stream
        └── LlmError              1  agents.llm.errors: the model could not be used
            ├── BudgetExhausted   1  the token budget is spent
            ├── StepBudgetExhausted 1 an agent used its steps without an answer
            ├── PromptTooLong     1  the server refused a prompt longer than its context
            └── InvalidAnswer     1  the model's answers never validated

``tests/test_errors.py`` keeps this drawing true: every exception class of rigaudit is in it, under
the parent and with the exit status drawn. This module uses the standard library only (it is
shipped to nodes inside the node server's payload).
"""

from __future__ import annotations

__all__ = ["NotApprovedError", "OperationError", "RigauditError", "UsageError"]


class RigauditError(Exception):
    """Any failure of rigaudit; the message is one line a person can act on."""

    exit_code: int = 1
    """The command's exit status when this error ends it."""


class UsageError(RigauditError):
    """Bad arguments, or an input (file, folder, option value) that cannot be used."""

    exit_code = 2


class NotApprovedError(RigauditError):
    """A change or a benchmark needs an approval it did not get."""

    exit_code = 3


class OperationError(RigauditError):
    """The work itself failed (a write refused, a benchmark crashed, a node unreachable)."""

    exit_code = 1
