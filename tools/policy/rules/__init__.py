"""The command policy's rules, as data. Read this first.

How a command is judged
-----------------------
``deny`` means: no approval could make this safe *in the agents' shell*. The command is known to
change state (GPU, kernel parameters, modules, services, files, firmware, packages, processes,
power), to escalate privilege or switch namespace, to reach the network, to run code it is handed
(interpreters, shells, ``find -exec``, ``xargs``, wrappers), or to read credentials; or its text
cannot be judged reliably (shell operators, expansions, environment prefixes, look-alike or
invisible characters, NUL bytes, over-long input, a program outside the standard bin directories).
Changes to the host are never made through this shell: they are typed, journaled Actions that the
person approves in a plan (``rigaudit apply``). Telling the model "deny" with a reason lets it
rewrite the command as a plain read-only one.

``ask`` means: plausibly harmless, but this policy cannot prove it, so a person decides. Unknown
programs; known programs in forms that no read-only grammar accepts (including unbounded ones,
such as ``nvidia-smi dmon`` without ``-c``); reads outside the readable roots; reads with real
diagnostic value that may expose secrets (``/proc/PID/environ``, ``env``); languages whose
program text must be read (awk, sed); and loads on the GPUs (``dcgmi diag``). Without an
approver, ``ask`` is a refusal.

``allow`` is a whitelist, never a blacklist: a program's whole argument list must parse as one
of its rule's read-only forms (every option known, every value matching its pattern, every path
normalized and under a readable root), and no guard, ``deny`` or ``ask`` rule may match.

Order: line guards, then POSIX splitting (no expansion), then argv guards, then the program's own
rules, most severe first; the first that matches decides. An unknown program is ``ask``.

Every rule carries examples; :class:`~tools.policy.engine.Policy` judges each when it loads and
refuses to load if one is judged differently, so these tables cannot drift from their behaviour.
"""

from __future__ import annotations

from rigaudit.tools.policy.rules.changes import CHANGES
from rigaudit.tools.policy.rules.files import FILES
from rigaudit.tools.policy.rules.gpu import GPU
from rigaudit.tools.policy.rules.guards import GUARDS
from rigaudit.tools.policy.rules.info import INFO
from rigaudit.tools.policy.rules.system import SYSTEM
from rigaudit.tools.policy.schema import Rule

RULES: tuple[Rule, ...] = (*GUARDS, *CHANGES, *GPU, *SYSTEM, *FILES, *INFO)

__all__ = ["RULES"]
