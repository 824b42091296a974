"""Real engines for the fleet tests: prepared node snapshots, OpenSSH servers, a one-node Slurm.

- :func:`prepared_fleet_snapshots`: the seed recorded through the collectors (what a node's
  ``rigaudit snapshot --stdout`` would send), plus a copy with a degraded GPU link (GPU3 at
  16 GT/s x8) and one with another driver version.
- :class:`NamespaceFleet`: hosts as network namespaces of the test's own, on a private subnet that
  exists only inside them (10.77.0.0/24 behind a bridge in a hub namespace): each node runs its own
  ``sshd`` on its namespace address with host keys and a user key made in a temporary folder, and
  ``sshd``'s ``SetEnv`` gives its sessions a PATH (with or without rigaudit) and
  ``RIGAUDIT_SNAPSHOT_SOURCE`` (the prepared snapshot it serves). The coordinator's ``ssh`` runs in
  the hub namespace (``--ssh-command "ip netns exec HUB ssh"``). Nothing touches the machine's own
  network or kernel settings.
- :class:`LoopbackSshd`: one ``sshd`` on 127.0.0.1 (this machine, as a node without rigaudit).
- :class:`OneNodeSlurm`: ``slurmctld`` and ``slurmd`` from Debian's packages with a private
  configuration (``auth/none``, spool, state and logs in a temporary folder).

Everything skips with its reason (``pytest.skip``) when not root, without ``ip netns``, ``sshd``
or Slurm (``.ci/fleet-setup.sh`` installs them); daemons and namespaces are removed by finalizers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.recording import RecordingHost
from rigaudit.tools.hosts.snapshot import SnapshotHost
from tests.support.mutate import set_file, set_nvml

SSHD = Path("/usr/sbin/sshd")
SUBNET = "10.77.0"
HUB_ADDRESS = f"{SUBNET}.1"
DEGRADED_GPU = "0000:44:00.0"  # GPU3 of the seed
OLD_DRIVER, NEW_DRIVER = "580.95.05", "575.57.08"
RIGAUDIT = Path(sys.executable).parent / "rigaudit"


# -- skips -------------------------------------------------------------------------------------


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip() or result.returncode}")
    return result


def require_sshd() -> None:
    if os.geteuid() != 0:
        pytest.skip("fleet SSH tests need root (they start sshd and create network namespaces)")
    missing = [p for p in ("ssh", "ssh-keygen") if shutil.which(p) is None]
    if not SSHD.exists() or missing:
        pytest.skip(f"no OpenSSH {'server' if not SSHD.exists() else ', '.join(missing)}: run .ci/fleet-setup.sh")
    if not RIGAUDIT.exists():
        pytest.skip(f"no rigaudit executable next to {sys.executable}")


def require_netns() -> None:
    require_sshd()
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2): cannot make namespace hosts")
    name = f"rgfprobe{os.getpid()}"
    made = _run(["ip", "netns", "add", name], check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot create network namespaces here: {made.stderr.strip()}")
    _run(["ip", "netns", "del", name], check=False)


# -- prepared snapshots -------------------------------------------------------------------------


def record_snapshot(source: Path, target: Path) -> Path:
    """What ``rigaudit snapshot`` on a machine like ``source`` records: the collectors' reads only."""
    from rigaudit.orchestrator.hosts.snapshots import collect_all

    async def main() -> None:
        host = RecordingHost(SnapshotHost(source))
        await collect_all(Probe(host, concurrency=16))
        await host.write_snapshot(target, hostname="gpu-node")

    anyio.run(main)
    return target


def degrade_link(root: Path, bdf: str = DEGRADED_GPU, index: int = 3) -> None:
    """The GPU's link trained at Gen4 x8 (16 GT/s, half its lanes)."""
    host = SnapshotHost(root)
    set_file(root, host.resolve(f"/sys/bus/pci/devices/{bdf}/current_link_speed"), "16.0 GT/s PCIe\n")
    set_file(root, host.resolve(f"/sys/bus/pci/devices/{bdf}/current_link_width"), "8\n")
    set_nvml(root, "nvmlDeviceGetCurrPcieLinkGeneration", [index], 4)
    set_nvml(root, "nvmlDeviceGetCurrPcieLinkWidth", [index], 8)


def change_driver(root: Path, old: str = OLD_DRIVER, new: str = NEW_DRIVER) -> None:
    """Another driver release, everywhere the snapshot mentions the version."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if old.encode() in data:
                path.write_bytes(data.replace(old.encode(), new.encode()))


def set_hostname(root: Path, name: str) -> None:
    import json

    manifest = root / "snapshot.json"
    value = json.loads(manifest.read_text())
    value["hostname"] = name
    manifest.write_text(json.dumps(value))


@dataclass(frozen=True)
class FleetSnapshots:
    base: Path
    degraded: Path
    other_driver: Path


_PREPARED: dict[Path, FleetSnapshots] = {}


def fleet_snapshots(seed: Path) -> FleetSnapshots:
    """Prepared once per test session, in RAM when there is /dev/shm (read-only to the tests)."""
    key = seed.resolve()
    if key not in _PREPARED:
        shm = Path("/dev/shm")
        base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        folder = Path(tempfile.mkdtemp(prefix="rigaudit-fleet-snapshots-", dir=base))
        atexit.register(shutil.rmtree, folder, True)
        _PREPARED[key] = prepared_fleet_snapshots(seed, folder)
    return _PREPARED[key]


def prepared_fleet_snapshots(seed: Path, folder: Path) -> FleetSnapshots:
    base = record_snapshot(seed, folder / "base")
    degraded = folder / "degraded"
    shutil.copytree(base, degraded)
    degrade_link(degraded)
    other = folder / "other-driver"
    shutil.copytree(base, other)
    change_driver(other)
    return FleetSnapshots(base, degraded, other)


# -- keys and sshd ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    folder: Path
    host_key: Path
    user_key: Path
    authorized: Path

    @classmethod
    def make(cls, folder: Path) -> Keys:
        folder.mkdir(parents=True, exist_ok=True)
        host, user = folder / "host_ed25519", folder / "user_ed25519"
        for key in (host, user):
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rigaudit-test", "-f", str(key)])
        authorized = folder / "authorized_keys"
        shutil.copy(f"{user}.pub", authorized)
        return cls(folder, host, user, authorized)

    def host_line(self, pattern: str) -> str:
        kind, blob = Path(f"{self.host_key}.pub").read_text().split()[:2]
        return f"{pattern} {kind} {blob}\n"

    def client_config(self, path: Path, known_hosts: str, *, port: int | None = None) -> Path:
        (path.parent / "known_hosts").write_text(known_hosts)
        lines = [
            "Host *",
            "  User root",
            f"  IdentityFile {self.user_key}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {path.parent / 'known_hosts'}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  UpdateHostKeys no",
            "  ControlMaster no",
            "  LogLevel ERROR",
        ]
        if port is not None:
            lines.append(f"  Port {port}")
        path.write_text("\n".join(lines) + "\n")
        return path


def _sshd_config(path: Path, keys: Keys, listen: str, env: dict[str, str]) -> Path:
    settings = [
        f"ListenAddress {listen}",
        f"HostKey {keys.host_key}",
        f"PidFile {path.parent / 'sshd.pid'}",
        f"AuthorizedKeysFile {keys.authorized}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PrintMotd no",
        "PrintLastLog no",
        "UseDNS no",
        "MaxStartups 128:30:256",
        "LogLevel INFO",
        "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()),
    ]
    path.write_text("\n".join(settings) + "\n")
    return path


class Sshd:
    """One ``sshd -D -e`` (optionally inside a namespace), ready when it says it listens."""

    def __init__(self, config: Path, *, netns: str | None = None) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        argv = [str(SSHD), "-D", "-e", "-f", str(config)]
        if netns is not None:
            argv = ["ip", "netns", "exec", netns, *argv]
        self.log: list[str] = []
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_listening()

    def _wait_listening(self, timeout_s: float = 15.0) -> None:
        assert self.process.stderr is not None
        stream = self.process.stderr
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                    break
                line = stream.readline().decode(errors="replace")
                if not line:
                    raise RuntimeError(f"sshd exited: {' | '.join(self.log[-5:])}")
                self.log.append(line.strip())
                if "Server listening on" in line:
                    os.set_blocking(stream.fileno(), True)
                    self._drain()
                    return
        self.stop()
        raise RuntimeError(f"sshd did not start listening: {' | '.join(self.log[-5:])}")

    def _drain(self) -> None:
        """Keep reading sshd's log (a full pipe would stall it)."""
        import threading

        def run() -> None:
            assert self.process.stderr is not None
            for raw in iter(self.process.stderr.readline, b""):
                self.log.append(raw.decode(errors="replace").strip())

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


# -- namespace hosts ----------------------------------------------------------------------------


@dataclass
class Node:
    alias: str
    namespace: str
    address: str
    home: Path
    sshd: Sshd | None = None


@dataclass
class NamespaceFleet:
    """A hub namespace with a bridge, and node namespaces hanging off it (see the module docstring)."""

    root: Path
    keys: Keys
    prefix: str = field(default_factory=lambda: f"rgf{os.getpid()}")
    nodes: list[Node] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    hub: str = ""
    ssh_config: Path | None = None

    def __post_init__(self) -> None:
        self.hub = f"{self.prefix}hub"
        self._netns_add(self.hub)
        ip = ["ip", "-n", self.hub]
        _run([*ip, "link", "set", "lo", "up"])
        _run([*ip, "link", "add", "br0", "type", "bridge"])
        _run([*ip, "addr", "add", f"{HUB_ADDRESS}/24", "dev", "br0"])
        _run([*ip, "link", "set", "br0", "up"])
        self._write_ssh_config()

    def _write_ssh_config(self) -> None:
        """Every node reachable by its alias (``node3``) as well as its address, as in a user's ~/.ssh/config."""
        path = self.root / "ssh_config"
        self.keys.client_config(path, self.keys.host_line(f"{SUBNET}.*"))
        aliases = "".join(f"Host {n.alias}\n  HostName {n.address}\n" for n in self.nodes)
        path.write_text(aliases + path.read_text())
        self.ssh_config = path

    def _netns_add(self, name: str) -> None:
        _run(["ip", "netns", "add", name])
        self.namespaces.append(name)

    @property
    def ssh_command(self) -> str:
        return f"ip netns exec {self.hub} ssh"

    def add_node(
        self, snapshot: Path | None, *, rigaudit: bool | Path = True, serve: bool = True, env: dict[str, str] | None = None
    ) -> Node:
        """A namespace host; ``rigaudit`` puts rigaudit (or the program given) on its PATH, ``serve=False`` runs no sshd."""
        number = len(self.nodes) + 1
        name = f"{self.prefix}n{number}"
        address = f"{SUBNET}.{10 + number}"
        self._netns_add(name)
        _run(["ip", "-n", self.hub, "link", "add", f"h{number}", "type", "veth", "peer", "name", "eth0", "netns", name])
        _run(["ip", "-n", self.hub, "link", "set", f"h{number}", "master", "br0", "up"])
        _run(["ip", "-n", name, "addr", "add", f"{address}/24", "dev", "eth0"])
        _run(["ip", "-n", name, "link", "set", "eth0", "up"])
        _run(["ip", "-n", name, "link", "set", "lo", "up"])
        folder = self.root / name
        home, bin_dir = folder / "home", folder / "bin"
        home.mkdir(parents=True)
        bin_dir.mkdir()
        if rigaudit:
            (bin_dir / "rigaudit").symlink_to(RIGAUDIT if rigaudit is True else rigaudit)
        session = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C", **(env or {})}
        if snapshot is not None:
            session["RIGAUDIT_SNAPSHOT_SOURCE"] = str(snapshot)
        node = Node(f"node{number}", name, address, home)
        if serve:
            node.sshd = Sshd(_sshd_config(folder / "sshd_config", self.keys, f"{address}:22", session), netns=name)
        self.nodes.append(node)
        self._write_ssh_config()
        return node

    def close(self) -> None:
        for node in self.nodes:
            if node.sshd is not None:
                node.sshd.stop()
        for name in reversed(self.namespaces):
            _run(["ip", "netns", "del", name], check=False)


@contextlib.contextmanager
def namespace_fleet(root: Path) -> Iterator[NamespaceFleet]:
    require_netns()
    fleet = NamespaceFleet(root, Keys.make(root / "keys"))
    try:
        yield fleet
    finally:
        fleet.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LoopbackSshd:
    """An sshd on 127.0.0.1: this machine as a node, with PATH ``/usr/bin:/bin`` (no rigaudit)."""

    root: Path
    keys: Keys
    port: int
    home: Path
    sshd: Sshd
    ssh_config: Path

    @classmethod
    @contextlib.contextmanager
    def start(cls, root: Path, env: dict[str, str] | None = None) -> Iterator[LoopbackSshd]:
        require_sshd()
        keys = Keys.make(root / "keys")
        port = free_port()
        home = root / "home"
        home.mkdir()
        environment = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C", **(env or {})}
        sshd = Sshd(_sshd_config(root / "sshd_config", keys, f"127.0.0.1:{port}", environment))
        config = keys.client_config(root / "ssh_config", keys.host_line(f"[127.0.0.1]:{port}"), port=port)
        try:
            yield cls(root, keys, port, home, sshd, config)
        finally:
            sshd.stop()


# -- Slurm --------------------------------------------------------------------------------------

SLURM_PROGRAMS = ("slurmctld", "slurmd", "srun", "scontrol", "sinfo")


def require_slurm() -> None:
    if os.geteuid() != 0:
        pytest.skip("the Slurm test needs root (it starts slurmctld and slurmd)")
    missing = [p for p in SLURM_PROGRAMS if shutil.which(p) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): run .ci/fleet-setup.sh (slurm-wlm packages)")
    plugins = [Path(d) for d in ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm", "/usr/lib/slurm")]
    if not any((d / "auth_none.so").exists() for d in plugins):
        pytest.skip("this Slurm has no auth/none plugin: the one-node test cluster needs it (no munge key is made)")


@dataclass
class OneNodeSlurm:
    """slurmctld + slurmd on this machine, one node named after its short hostname."""

    root: Path
    node: str
    env: dict[str, str]
    daemons: list[subprocess.Popen[bytes]]

    @classmethod
    @contextlib.contextmanager
    def start(cls, root: Path, extra: Sequence[str] = (), node: str = "", gres: str = "") -> Iterator[OneNodeSlurm]:
        """``extra``: more slurm.conf lines (Prolog=, HealthCheckProgram=, ...); ``node``: more of the node's line
        (``Gres=gpu:h200:2``); ``gres``: gres.conf's text, written beside slurm.conf."""
        require_slurm()
        options, node = node, socket.gethostname().split(".")[0]
        if gres:
            (root / "gres.conf").write_text(gres)
        for sub in ("state", "spool", "log"):
            (root / sub).mkdir(parents=True)
        ctld_port, slurmd_port = free_port(), free_port()
        conf = root / "slurm.conf"
        conf.write_text(
            "\n".join(
                [
                    "ClusterName=rigauditci",
                    f"SlurmctldHost={node}(127.0.0.1)",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={slurmd_port}",
                    "AuthType=auth/none",
                    "CredType=cred/none",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    f"StateSaveLocation={root / 'state'}",
                    f"SlurmdSpoolDir={root / 'spool'}",
                    f"SlurmctldPidFile={root / 'slurmctld.pid'}",
                    f"SlurmdPidFile={root / 'slurmd.pid'}",
                    f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
                    f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "MpiDefault=none",
                    "SchedulerType=sched/builtin",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_CPU",
                    "ReturnToService=2",
                    *extra,
                    f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN {options}".rstrip(),
                    f"PartitionName=rigaudit Nodes={node} Default=YES MaxTime=INFINITE State=UP",
                ]
            )
            + "\n"
        )
        env = {**os.environ, "SLURM_CONF": str(conf)}
        daemons: list[subprocess.Popen[bytes]] = []
        try:
            for argv in (["slurmctld", "-D", "-i"], ["slurmd", "-D", "-N", node]):
                daemons.append(
                    subprocess.Popen(
                        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                )
            cluster = cls(root, node, env, daemons)
            cluster._wait_idle()
            yield cluster
        finally:
            for daemon in daemons:
                if daemon.poll() is None:
                    daemon.terminate()
            for daemon in daemons:
                try:
                    daemon.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait(timeout=5)

    def _wait_idle(self, timeout_s: float = 30.0) -> None:
        """A first job step: srun itself waits (queued) until slurmd has registered the node."""
        try:
            result = subprocess.run(
                ["srun", "--job-name=rigaudit-ready", "--nodes=1", "true"],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            result = None
        for daemon in self.daemons:
            if daemon.poll() is not None:
                logs = [p for p in (self.root / "log").glob("*.log") if p.stat().st_size]
                tail = " | ".join(p.read_text(errors="replace").strip().splitlines()[-1] for p in logs)
                raise RuntimeError(f"a Slurm daemon exited ({daemon.args}): {tail}")
        if result is None or result.returncode != 0:
            said = f"no answer within {timeout_s:g} s" if result is None else (result.stderr.strip() or str(result.returncode))
            raise RuntimeError(f"the one-node Slurm cluster does not run jobs: {said}")
