"""The command policy's rules, as data. Read this first (and docs/policy.md).

How a command is vetted
-----------------------
``deny`` means: no approval could make this safe *in the agents' shell*. The command is known to
change state (GPU, kernel parameters, modules, services, files, firmware, packages, processes,
power), to escalate privilege or switch namespace, to reach the network, to run code it is handed
(interpreters, shells, ``find -exec``, ``xargs``, wrappers), to read credentials, memory, device
nodes or registers, or to go through another process's root, cwd or open files; or its text cannot
be vetted reliably (shell operators, expansions, environment prefixes, look-alike or invisible
characters, NUL bytes, over-long input, a program outside the standard bin directories, a path
someone untrusted could swap). A known program that can change the system, in a form none of its
read-only grammars accepts, is ``deny`` too: deny lists cannot foresee every spelling
(abbreviations, aliases). Changes to the host are never made through this shell: they are typed,
journaled Actions that the person approves in a plan (``rigaudit apply``). Telling the model
"deny" with a reason lets it rewrite the command as a plain read-only one.

``ask`` means: plausibly harmless, but this policy cannot prove it, so a person decides. Unknown
programs; programs that only read (``reads_only``), in forms no read-only grammar accepts; read-only
forms that run until killed (``journalctl`` without ``-n``, ``tail -f``); reads off the allow-list;
reads with real diagnostic value that may expose secrets (``/proc/PID/environ``, ``env``);
languages whose program text must be read (awk, sed without ``--sandbox``); and loads on the GPUs
(``dcgmi diag``). Without an approver, ``ask`` is a refusal.

``allow`` is a whitelist, never a blacklist: a program's whole argument list must parse as one
of its rule's read-only forms (every option known in any spelling its parser accepts, every value
matching its pattern, every path resolved as the kernel will and on the read allow-list), and no
guard, ``deny`` or ``ask`` rule may match.

Order: line guards, then POSIX splitting (no expansion), then argv guards, then the program's own
rules, most severe first. Every guard and rule that applies is heard and the most severe verdict
wins: deny dominates ask dominates allow, whatever the order of the arguments.

Every rule carries examples; the tests vet each (on a model host,
:data:`~tools.policy.fsview.EXAMPLE_HOST`) and fail if one is vetted differently, so these tables
cannot drift from their behaviour. ``Policy(rules)`` vets them when it loads; the default policy
(:data:`~tools.policy.vet.POLICY`) does not, to start fast (``tests/test_policy_rules.py``).
"""

from __future__ import annotations

from rigaudit.tools.policy.rules.changes import CHANGES
from rigaudit.tools.policy.rules.files import FILES
from rigaudit.tools.policy.rules.gpu import GPU
from rigaudit.tools.policy.rules.guards import GUARDS
from rigaudit.tools.policy.rules.hardware import HARDWARE
from rigaudit.tools.policy.rules.info import INFO
from rigaudit.tools.policy.rules.system import SYSTEM
from rigaudit.tools.policy.schema import Rule

RULES: tuple[Rule, ...] = (*GUARDS, *HARDWARE, *CHANGES, *GPU, *SYSTEM, *FILES, *INFO)

__all__ = ["RULES"]
