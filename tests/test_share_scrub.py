"""The share bundle's pieces: stable placeholders by shape and by name, and serial numbers in binary files."""

from __future__ import annotations

import struct

import pytest

from rigaudit.tools.pci import DSN_ID, mask_vpd, parse_config, zero_dsn
from rigaudit.tools.share._harvest import Harvest
from rigaudit.tools.share._pseudonyms import Pseudonyms
from rigaudit.tools.share._rewrite import Rewriter
from rigaudit.tools.share._scrub import Scrubber
from rigaudit.tools.share._tree import Tree
from tests.support.diff import GPU0_CONFIG, SEED

GPU_A = "GPU-5a1c0000-7e2d-4c1b-9f0a-3b8e0d6c0000"
GPU_B = "GPU-5a1c0001-7e2d-4c1b-9f0a-3b8e0d6c0001"
EFI = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


def _scrubber(*, hostnames: tuple[str, ...] = ("pve-gpu01",), contextual: tuple[str, ...] = (), corpus: str = "") -> Scrubber:
    found = Harvest()
    for name in hostnames:
        found.add_hostname(name)
    found.contextual = set(contextual)
    found.gpu_uuids = [GPU_A[4:], GPU_B[4:]]
    found.add_serial("1782523000000")
    found.add_serial("48-b0-2d-ff-ff-8e-1a-2c")
    found.efi_guids = {EFI}
    return Scrubber(Pseudonyms(taken=lambda p: p in corpus), found)


def test_addresses_are_replaced_and_generic_ones_kept() -> None:
    s = _scrubber()
    text = (
        "2: eno1np0: <UP> link/ether 3c:ec:ef:12:34:56 brd ff:ff:ff:ff:ff:ff\n"
        "    inet 10.1.2.3/24 brd 10.1.2.255 scope global eno1np0\n"
        "    inet6 fe80::3eec:efff:fe12:3456/64 scope link\n"
        "    inet6 2a01:4f8:1:2::17/64 scope global\n"
        "lo: inet 127.0.0.1/8 mask 255.255.255.0 dns 8.8.8.8 any 0.0.0.0 ::1 mcast 01:00:5e:00:00:01\n"
    )
    out = s.text(text)
    assert "link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff" in out
    assert "inet 192.0.2.1/24 brd 192.0.2.2 " in out
    assert "inet6 fe80::db8:3/64" in out and "inet6 2001:db8::4/64" in out
    assert out.endswith("lo: inet 127.0.0.1/8 mask 255.255.255.0 dns 8.8.8.8 any 0.0.0.0 ::1 mcast 01:00:5e:00:00:01\n")
    assert s.text("MAC 3C:EC:EF:12:34:56 again, 10.1.2.3 again") == "MAC 02:00:00:00:00:01 again, 192.0.2.1 again"


def test_versions_bus_addresses_and_times_are_not_addresses() -> None:
    s = _scrubber()
    text = (
        "libnccl.so.2.21.5 v1.2.3.4 580.95.05 VBIOS 96.00.89.00.01 at 09:14:03 0000:03:00.0 "
        "IR-PCI-MSIX-0000:03:00.0 7f12a000-7f12b000 r-xp 00000000 08:01 1234\n"
    )
    assert s.text(text) == text
    assert s.ps.counts() == {}  # values known but none replaced: nothing is counted


def test_gpu_uuids_keep_their_shape_and_their_numbering() -> None:
    s = _scrubber()
    out = s.text(f"{GPU_B} {GPU_A} MIG-{GPU_A[4:]} {GPU_A[4:].upper()} {GPU_A.lower()}")
    first, second = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
    assert out == f"GPU-{second} GPU-{first} MIG-{first} {first} gpu-{first}"


def test_other_uuids_are_replaced_but_efi_vendor_guids_and_the_nil_uuid_kept() -> None:
    s = _scrubber()
    out = s.text(
        f"product_uuid=4c4c4544-0042-3510-8052-b4c04f4e3432 root=UUID=0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9 "
        f"SecureBoot-{EFI} 00000000-0000-0000-0000-000000000000"
    )
    assert out == (
        "product_uuid=00000000-0000-0000-0001-000000000001 root=UUID=00000000-0000-0000-0001-000000000002 "
        f"SecureBoot-{EFI} 00000000-0000-0000-0000-000000000000"
    )


def test_infiniband_addresses_and_guids() -> None:
    s = _scrubber()
    ib = "00:00:10:49:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:16:5a:7e"
    broadcast = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
    out = s.text(f"{ib}\n{broadcast}\nnode_guid 0c42:a103:0016:5a7e zero 0000:0000:0000:0000\n")
    assert out == (
        "00:00:10:49:fe:80:00:00:00:00:00:00:02:00:00:00:00:00:00:01\n"
        f"{broadcast}\nnode_guid 0200:0000:0000:0002 zero 0000:0000:0000:0000\n"
    )


def test_home_folders_and_user_variables_name_no_one() -> None:
    s = _scrubber()
    out = s.text("HOME=/home/alice USER=alice LOGNAME=bob SUDO_USER=root --model /home/alice/models/GLM alice")
    assert out == "HOME=/home/user-1 USER=user-1 LOGNAME=user-2 SUDO_USER=root --model /home/user-1/models/GLM alice"


def test_host_names_serials_and_where_they_are_kept() -> None:
    s = _scrubber(hostnames=("pve-gpu01.corp.example.com", "node1"))
    text = "Linux pve-gpu01 6.8.12-11-pve; pve-gpu01.corp.example.com; mail.corp.example.com; node1 up; SN 1782523000000"
    assert s.text(text) == (
        "Linux host-1 6.8.12-11-pve; host-1.domain-1.invalid; host-3.domain-1.invalid; host-2 up; SN serial-1"
    )
    assert s.text("Device Serial Number 48-b0-2d-ff-ff-8e-1a-2c") == "Device Serial Number 00-00-00-00-00-00-00-02"
    assert s.path("/sys/devices/system/node/node1/cpulist") == "/sys/devices/system/node/node1/cpulist"  # a kernel object
    assert s.path("/etc/pve/nodes/node1/lxc/101.conf") == "/etc/pve/nodes/host-2/lxc/101.conf"
    assert s.text("17825230000001 x1782523000000") == "17825230000001 x1782523000000"  # whole words only


def test_a_host_named_like_a_program_is_replaced_only_where_host_names_are_written() -> None:
    s = _scrubber(hostnames=("sglang",), contextual=("sglang",))
    assert s.text("python3 -m sglang.launch_server --host sglang") == "python3 -m sglang.launch_server --host sglang"
    assert s.text("sglang\n", identity=True) == "host-1\n"


def test_a_placeholder_found_in_the_original_is_never_used() -> None:
    s = _scrubber(corpus="ssh host-1 and 192.0.2.1 and 02:00:00:00:00:01")
    assert s.text("pve-gpu01 10.9.9.9 3c:ec:ef:12:34:56") == "host-2 192.0.2.2 02:00:00:00:00:02"


def _with_dsn(config: bytes, serial: bytes) -> bytes:
    """Hang a Device Serial Number capability at 0xF00 from the end of the extended list."""
    data = bytearray(config)
    last = parse_config(bytes(data)).extended[-1].offset
    header = struct.unpack_from("<I", data, last)[0]
    struct.pack_into("<I", data, last, (header & 0x000FFFFF) | (0xF00 << 20))
    assert not any(data[0xF00:0xF0C])
    struct.pack_into("<I", data, 0xF00, DSN_ID | (1 << 16))
    data[0xF04:0xF0C] = serial
    return bytes(data)


def test_the_pcie_device_serial_number_is_zeroed_and_nothing_else_moves() -> None:
    original = (SEED / "files" / GPU0_CONFIG.lstrip("/")).read_bytes()
    with_serial = _with_dsn(original, bytes.fromhex("2c1a8effff2db048"))
    assert parse_config(with_serial).extended_capability(DSN_ID) is not None
    result = zero_dsn(with_serial)
    assert result is not None
    zeroed, found = result
    assert found and zeroed[0xF04:0xF0C] == bytes(8)
    assert zeroed[:0xF04] == with_serial[:0xF04] and zeroed[0xF0C:] == with_serial[0xF0C:]
    assert zero_dsn(original) == (original, False)  # the seed's GPUs carry none
    assert zero_dsn(b"not a config space") is None


def _vpd() -> bytes:
    ident = b"NVIDIA ConnectX-7"
    fields = b"PN" + bytes([8]) + b"MCX75310" + b"SN" + bytes([12]) + b"MT2142X12345" + b"RV" + bytes([1])
    body = bytes([0x82, len(ident), 0]) + ident + bytes([0x90, len(fields) + 1, 0]) + fields
    return body + bytes([-sum(body) & 0xFF]) + bytes([0x78])


def test_vpd_serial_numbers_are_masked_and_the_checksum_stays_right() -> None:
    vpd = _vpd()
    assert sum(vpd[: vpd.index(b"RV") + 4]) & 0xFF == 0
    masked, count = mask_vpd(vpd)
    assert count == 1 and b"MT2142X12345" not in masked and b"SN\x0c000000000000" in masked
    assert sum(masked[: masked.index(b"RV") + 4]) & 0xFF == 0 and b"MCX75310" in masked


@pytest.mark.parametrize("value", ["Not Specified", "To Be Filled By O.E.M.", "0123456789", "0000000000", "ab"])
def test_placeholder_serials_are_not_serials(value: str) -> None:
    found = Harvest()
    found.add_serial(value, need_digit=False)
    assert found.serials == []


def test_serial_numbers_are_found_where_they_are_written_down() -> None:
    from rigaudit.tools.share._harvest import harvest
    from rigaudit.tools.share._tree import Tree

    tree = Tree(
        manifest={"hostname": "gpu-node-7.corp.example.com"},
        files={
            "/sys/class/dmi/id/product_serial": b"S4KX9A12\n",
            "/sys/class/dmi/id/board_serial": b"To Be Filled By O.E.M.\n",
            "/sys/class/nvme/nvme0/serial": b"  S5GXNX0T123456  \n",
            "/etc/machine-id": b"8f3a2b1c4d5e6f708192a3b4c5d6e7f8\n",
            "/proc/77/comm": b"python3\n",
        },
        commands=[
            {"argv": ["dmesg"], "stdout": "Serial: 8250/16550 driver, 4 ports\nusb 1-1: Product=2, SerialNumber=3\n"},
            {"argv": ["nvidia-smi", "-q"], "stdout": "    Serial Number                         : 1320123456789\n"},
            {
                "argv": ["lspci", "-vvv"],
                "stdout": "[SN] Serial number: MT2142X12345\nDevice Serial Number 48-b0-2d-ff-ff-8e-1a-2c",
            },
        ],
        nvml=[{"fn": "nvmlDeviceGetSerial", "args": [0], "result": "1652722001234"}],
    )
    found = harvest(tree)
    dsn = "48-b0-2d-ff-ff-8e-1a-2c"
    assert found.serials == ["1652722001234", "S4KX9A12", "S5GXNX0T123456", "1320123456789", "MT2142X12345", dsn]
    assert found.hostnames == ["gpu-node-7"] and found.domains == ["corp.example.com"]
    assert found.machine_ids == ["8f3a2b1c4d5e6f708192a3b4c5d6e7f8"] and found.contextual == set()


def test_counts_are_of_what_was_replaced() -> None:
    s = _scrubber(hostnames=("pve-gpu01.corp.example.com",))
    out = s.text("pve-gpu01 10.1.2.3 pve-gpu01.corp.example.com 10.1.2.3 SN 1782523000000")
    assert out == "host-1 192.0.2.1 host-1.domain-1.invalid 192.0.2.1 SN serial-1"
    assert s.ps.counts() == {"hostname": (2, 2), "domain": (1, 1), "serial": (1, 1), "ip": (1, 2)}  # the short name and the FQDN


def test_nfs_servers_and_docker_names_are_where_names_are_written() -> None:
    from rigaudit.tools.share._places import find

    log = "[ 9.1] nfs: server nas-store01 not responding, still trying\n"
    mounts = "nas-store02:/export/models /mnt/models nfs4 rw 0 0\n"
    docker = 'CONTAINER ID   IMAGE   COMMAND   NAMES\n3f4e5d6c7b8a   vllm    "python"  vllm-blue-42\n'
    found = [
        m.group("v")
        for text, src in ((log, "cmd:dmesg"), (mounts, "/proc/1/mounts"), (docker, "cmd:docker"))
        for _, m in find(src, text)
    ]
    assert {"nas-store01", "nas-store02", "vllm-blue-42"} <= set(found)


def test_binary_files_of_formats_rigaudit_does_not_read_are_left_out_and_counted() -> None:
    """#35 item 4: a binary key (``munge.key``) is never copied; PCI config space and NUL-separated text are."""
    key = bytes(range(256)) * 4
    config = b"\xde\x10\x33\x23" + bytes(60)
    tree = Tree(
        manifest={},
        files={
            "/etc/munge/munge.key": key,
            "/sys/bus/pci/devices/0000:03:00.0/config": config,
            "/proc/1/cmdline": b"python3\x00-m\x00sglang\x00",
        },
    )
    scrub = _scrubber()
    rewriter = Rewriter(scrub, scrub.ps)
    out = rewriter.tree(tree)
    assert not any(key in data for data in out.files.values()) and len(out.files) == 2
    assert config in out.files.values() and rewriter.stats.binary_left_out == 1


def test_credential_files_the_read_policy_denies_are_left_out_and_counted() -> None:
    """Third attack pass: a snapshot holding ``/etc/ipsec.secrets`` or a Kaggle key gave it to the bundle verbatim."""
    secret_files = {
        "/etc/ipsec.secrets": b': PSK "lemonEgret09y"\n',
        "/etc/ppp/chap-secrets": b"alice * goldenIbis70u *\n",
        "/etc/openvpn/ta.key": b"-----BEGIN OpenVPN Static key V1-----\n9f86d081884c7d65\n-----END OpenVPN Static key V1-----\n",
        "/root/.kaggle/kaggle.json": b'{"username":"alice","key":"9f86d081884c7d659a2feaa0c55ad015"}\n',
    }
    tree = Tree(manifest={}, files={**secret_files, "/etc/modprobe.d/nvidia.conf": b"options nvidia NVreg_X=1\n"})
    scrub = _scrubber()
    rewriter = Rewriter(scrub, scrub.ps)
    out = rewriter.tree(tree)
    assert list(out.files) == ["/etc/modprobe.d/nvidia.conf"]
    assert rewriter.stats.credential_files_left_out == len(secret_files)
