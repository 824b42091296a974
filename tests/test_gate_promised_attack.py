"""Crafted scheduler promises: a node object or a Slurm configuration gives one line, never a crash or a hang."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest

from rigaudit.orchestrator.gate.kube_node import load
from rigaudit.orchestrator.gate.slurm_gres import expand_hostlist, read_slurm_gres
from tests.test_gate_promised import H200, check, node_object, status


@pytest.mark.parametrize("capacity", ["²", "9" * 5000, "٨"])
def test_a_capacity_that_is_no_count_is_could_not_check(tmp_path: Path, capacity: str) -> None:
    node = tmp_path / "node.json"
    node.write_text(json.dumps(node_object(capacity)))
    result = check(tmp_path, H200, "--kube-node", str(node))
    assert (result.exit_code, status(result, "promised.kubernetes")) == (3, "unknown")
    observed = next(c.observed for c in result.checks if c.check == "promised.kubernetes")
    assert observed.endswith("is not a count") and len(observed) < 200


def test_a_node_object_nested_past_the_bound_is_could_not_check(tmp_path: Path) -> None:
    node = tmp_path / "node.json"
    node.write_text('{"kind": "Node", "status": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = check(tmp_path, H200, "--kube-node", str(node))
    assert (result.exit_code, status(result, "promised.kubernetes")) == (3, "unknown")
    observed = next(c.observed for c in result.checks if c.check == "promised.kubernetes")
    assert "not a JSON node object (nested deeper than" in observed  # the reason line is cut to fit, by path length


def test_a_host_list_of_many_ranges_is_refused_before_it_is_walked() -> None:
    for names in ("n[0-4000][0-4000]", "n[0-4000][0-4000][0-4000]", "n" + "[1]" * 5000, "a" * 100_000 + "[0-4000]"):
        with pytest.raises(ValueError, match=r"more than 4096 nodes|longer than 1024 characters"):
            expand_hostlist(names)  # a walk of 4001**3 names would not end within the test's timeout
    assert expand_hostlist("rack[1-2]node[01-02]") == ["rack1node01", "rack1node02", "rack2node01", "rack2node02"]


def test_a_gres_count_in_other_digits_or_too_long_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    for count in ("²", "9" * 5000):
        conf.write_text(f"NodeName=gpu01 Gres=gpu:{count}\n")
        error = read_slurm_gres(conf, "gpu01").error
        assert error is not None and error.startswith("not a GRES count") and len(error) < 80


def test_a_node_object_s_redirect_is_never_followed(tmp_path: Path) -> None:
    """Followed, a redirect took the pod's service-account token to the host it named, over plain http too."""
    reached: list[str] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            reached.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(node_object("8")).encode())

        def log_message(self, *args: object) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=other.serve_forever, daemon=True).start()

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_address[1]}/api/v1/nodes/gpu-7")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        node = load(f"http://127.0.0.1:{server.server_address[1]}/api/v1/nodes/gpu-7")
    finally:
        server.shutdown()
        other.shutdown()
    assert reached == [] and node.error is not None and "a redirect to http://127.0.0.1:" in node.error
