"""The plumbing rigaudit's loopback test servers share (:mod:`.loopback`), and the bench statistics model.

The test doubles live beside the code they fake: the scripted model server and ``ScriptedModel`` in
:mod:`rigaudit.agents.llm.testing`, the fake inference server in :mod:`rigaudit.tools.bench.fake_server`.
"""
