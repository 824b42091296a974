"""The default policy loads lazily (no examples vetted, no pattern compiled) and vets as an eager one does."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from rigaudit.tools.policy import POLICY, Form, Policy, Rule, RuleError
from rigaudit.tools.policy.globs import Globs, compile_globs
from rigaudit.tools.policy.rules import RULES
from tests.support.policy_host import MODEL_HOST
from tests.test_policy_corpus import CASES


@pytest.fixture(scope="module")
def eager() -> Policy:
    return Policy(RULES)


def test_the_rules_pass_their_examples_at_an_eager_load(eager: Policy) -> None:
    assert eager.examples_checked == sum(len(r.examples) for r in RULES) >= 500
    assert eager.compiled == len(RULES)


def test_a_lazy_load_vets_no_example_and_compiles_only_what_it_vets() -> None:
    lazy = Policy(RULES, check_examples=False, lazy=True)
    assert (lazy.examples_checked, lazy.compiled) == (0, 0)
    assert lazy.vet_argv(["uname", "-r"]).decision == "allow"
    uname = {r.name for r in RULES if "uname" in r.programs}
    assert 0 < lazy.compiled == len(uname) < len(RULES)
    assert lazy.programs() == Policy(RULES, check_examples=False).programs()


def test_lazy_and_eager_give_the_same_verdict_on_every_corpus_line_and_example(eager: Policy) -> None:
    lazy = Policy(RULES, check_examples=False, lazy=True)
    lines = [command for _, _, command in CASES] + [e for r in RULES for e in r.examples]
    for line in lines:
        assert lazy.vet_line(line, MODEL_HOST) == eager.vet_line(line, MODEL_HOST), line
    assert lazy.compiled == len(RULES) - sum(1 for r in RULES if not r.programs)


def test_the_default_policy_is_lazy_and_passes_every_example() -> None:
    assert POLICY.rules == tuple(RULES)
    POLICY.check_examples()
    assert POLICY.examples_checked >= sum(len(r.examples) for r in RULES)


def test_a_bad_pattern_in_a_lazy_policy_fails_closed_when_its_program_is_vetted() -> None:
    bad = Rule("bad", "allow", "a broken form", examples=("tool -x",), programs=("tool",), form=Form(flags=("[",)))
    lazy = Policy([*RULES, bad], check_examples=False, lazy=True)
    verdict = lazy.vet_argv(["tool", "-x"])
    assert (verdict.decision, verdict.rule) == ("deny", "policy-error")
    with pytest.raises(RuleError, match="bad pattern"):
        Policy([*RULES, bad], check_examples=False)


def test_a_lazy_load_still_checks_each_rule_shape() -> None:
    with pytest.raises(RuleError, match="allow rule needs programs and a form"):
        Policy([Rule("x", "allow", "d", examples=("a",), programs=("a",))], check_examples=False, lazy=True)


def test_globs_translate_when_first_matched_and_a_malformed_pattern_raises_then() -> None:
    globs = compile_globs(("/proc/<pid>/{status,stat}", "/sys/**"))
    assert globs._regex is None
    assert globs.fullmatch("/proc/self/status") and globs.fullmatch("/sys/bus/pci") and not globs.fullmatch("/proc/1/mem")
    malformed = compile_globs(("/etc/{a,b",))
    with pytest.raises(ValueError, match="unbalanced"):
        malformed.fullmatch("/etc/a")


def test_every_path_list_of_the_policy_translates() -> None:
    """The lists translate only when first matched: here each one is, so a malformed pattern fails this test,
    never a user's check."""
    import rigaudit.tools.policy as policy

    names = [info.name for info in pkgutil.walk_packages(policy.__path__, policy.__name__ + ".")]
    modules = [importlib.import_module(name) for name in names]
    lists = {f"{m.__name__}.{k}": v for m in modules for k, v in vars(m).items() if isinstance(v, Globs)}
    assert {"rigaudit.tools.policy.readlist.READABLE", "rigaudit.tools.policy.secrets.SECRET_PATHS"} <= set(lists)
    for name, globs in lists.items():
        assert globs.patterns, name
        assert globs.regex.pattern == globs.source, name
