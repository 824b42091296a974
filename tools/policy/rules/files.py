"""Reading files: the readers, grep and find, and the text tools that are languages (awk, sed)."""

from __future__ import annotations

from rigaudit.tools.policy.schema import READ_PATH, Form, Rule

_N = r"[+-]?[0-9]+[kKmMbB]?"

FILES: tuple[Rule, ...] = (
    Rule(
        "read-files",
        "allow",
        "reads files under the readable roots",
        examples=(
            "cat /proc/cmdline",
            "cat /sys/bus/pci/devices/0000:03:00.0/current_link_speed",
            "cat /etc/modprobe.d/nvidia.conf",
            "cat /var/log/syslog",
            "zcat /proc/config.gz",
            "wc -l /proc/interrupts",
            "cat /proc/driver/nvidia/version",
            "md5sum /lib/modules/6.8.12-11-pve/modules.dep",
            "file -b /sys/firmware/acpi/tables/DMAR",
        ),
        programs=("cat", "zcat", "wc", "md5sum", "sha256sum", "sha1sum", "file", "strings", "nl", "tac"),
        form=Form(
            flags=(
                r"-[AbeEnstTuvlwcmLzkBiN]+",
                r"--(lines|words|bytes|chars|max-line-length|number|number-nonblank|show-all"
                r"|show-ends|show-tabs|squeeze-blank|brief|mime|mime-type|dereference|zero)",
            ),
            operands="read",
            min_operands=1,
        ),
    ),
    Rule(
        "cut-files",
        "allow",
        "cuts fields from files under the readable roots",
        examples=("cut -d ' ' -f1 /proc/loadavg", "cut -c1-20 /proc/cmdline"),
        programs=("cut",),
        form=Form(
            flags=(
                r"-[fcb][0-9,-]+",
                r"-[sz]+",
                r"--(only-delimited|complement|zero-terminated)",
                r"--(fields|characters|bytes)=[0-9,-]+",
                r"--delimiter=[^\n]{1,4}",
            ),
            valued={"-d": r"[^\n]{1,4}", "-f": r"[0-9,-]+", "-c": r"[0-9,-]+", "-b": r"[0-9,-]+"},
            operands="read",
            min_operands=1,
        ),
    ),
    Rule(
        "read-file-ends",
        "allow",
        "reads the head or tail of files under the readable roots (never following them)",
        examples=(
            "head -n 20 /var/log/syslog",
            "tail -n 100 /var/log/kern.log",
            "head -c 64 /sys/bus/pci/devices/0000:03:00.0/config",
            "tail -50 /var/log/syslog",
            "head /proc/meminfo",
        ),
        programs=("head", "tail"),
        form=Form(
            flags=(r"-[qvz]+", r"-[0-9]+", r"--(quiet|silent|verbose|zero-terminated)", r"--(lines|bytes)=" + _N, r"-[nc][0-9]+"),
            valued={"-n": _N, "-c": _N},
            operands="read",
            min_operands=1,
        ),
    ),
    Rule(
        "dump-files",
        "allow",
        "dumps bytes of files under the readable roots (PCI config space, firmware tables)",
        examples=(
            "hexdump -C /sys/bus/pci/devices/0000:03:00.0/config",
            "od -An -tx1 /sys/firmware/acpi/tables/DMAR",
            "xxd -l 256 /sys/bus/pci/devices/0000:03:00.0/config",
        ),
        programs=("hexdump", "od", "xxd"),
        form=Form(
            flags=(r"-[Cvxbcdop]+", r"-An", r"-t[a-z0-9]+", r"-A[doxn]"),
            valued={
                "-n": r"[0-9]+",
                "-s": r"[0-9]+",
                "-l": r"[0-9]+",
                "-c": r"[0-9]+",
                "-g": r"[0-9]+",
                "-N": r"[0-9]+",
                "-j": r"[0-9]+",
                "-w": r"[0-9]+",
                "-t": r"[a-z0-9]+",
                "-A": r"[doxn]",
            },
            operands="read",
            min_operands=1,
            max_operands=1,
        ),
    ),
    Rule(
        "list-files",
        "allow",
        "lists directories or resolves links",
        examples=(
            "ls /dev",
            "ls -la /sys/class/drm",
            "ls -l /dev/nvidia0",
            "readlink -f /sys/bus/pci/devices/0000:03:00.0/driver",
            "realpath /sys/class/drm/card0",
            "ls",
            "ls -ld /dev/shm",
        ),
        programs=("ls", "readlink", "realpath"),
        form=Form(
            flags=(
                r"-[laAhd1inFLtrSsZRcuUvXgoHfemqxz]+",
                r"--(all|almost-all|human-readable|directory|dereference|full-time"
                r"|color=never|classify|inode|numeric-uid-gid|canonicalize|canonicalize-existing|canonicalize-missing)",
            ),
            operands="list",
        ),
    ),
    Rule(
        "stat-files",
        "allow",
        "reads file metadata",
        examples=(
            "stat /dev/nvidia-uvm",
            "stat -c %a /dev/nvidia0",
            "stat -L -c '%s %n' /sys/bus/pci/devices/0000:03:00.0/resource0",
        ),
        programs=("stat",),
        form=Form(
            flags=(r"-[Lft]+", r"--(dereference|file-system|terse)", r"--(format|printf)=[^\n]+"),
            valued={"-c": r"[^\n]+", "--format": r"[^\n]+", "--printf": r"[^\n]+"},
            operands="list",
            min_operands=1,
        ),
    ),
    Rule(
        "grep-files",
        "allow",
        "searches files under the readable roots (recursively only through trees without secrets)",
        examples=(
            "grep -i nvrm /var/log/kern.log",
            "grep -r nvidia /etc/modprobe.d",
            "grep -c processor /proc/cpuinfo",
            "grep -E 'Xid|NVRM' /var/log/syslog",
            "grep -rn iommu /etc/default/grub /etc/kernel/cmdline",
            "grep -e MemTotal -e HugePages /proc/meminfo",
            "egrep 'a|b' /proc/cpuinfo",
            "grep -m 5 -i error /var/log/syslog",
        ),
        programs=("grep", "egrep", "fgrep", "zgrep"),
        form=Form(
            flags=(
                r"-[inclLvwxEFGPosHhqrIaZzTUb]+",
                r"--(ignore-case|line-number|count|files-with-matches|files-without-match"
                r"|invert-match|word-regexp|line-regexp|extended-regexp|fixed-strings|perl-regexp|only-matching|no-messages"
                r"|with-filename|no-filename|quiet|silent|recursive|text|null)",
                r"--(include|exclude|exclude-dir)=[^/\n]+",
                r"--color=never",
                r"-[mABC][0-9]+",
            ),
            valued={
                "-e": r"[^\n]+",
                "--regexp": r"[^\n]+",
                "-f": READ_PATH,
                "--file": READ_PATH,
                "-m": r"[0-9]+",
                "--max-count": r"[0-9]+",
                "-A": r"[0-9]+",
                "-B": r"[0-9]+",
                "-C": r"[0-9]+",
            },
            operands="grep",
            recursive=(r"-[a-zA-Z]*r[a-zA-Z]*", r"--recursive"),
        ),
    ),
    Rule(
        "grep-recursive-secrets",
        "deny",
        "recursive search through a tree that holds secrets (/, /etc, /proc, /root, /home ...): search the specific directory",
        examples=("grep -r password /", "grep -rn x /etc", "grep -R token /proc", "grep --recursive key /home"),
        programs=("grep", "egrep", "fgrep", "zgrep"),
        check="recursive-over-secrets",
    ),
    Rule(
        "find-names",
        "allow",
        "finds files by name or type (no actions)",
        examples=(
            "find /sys/class/drm -maxdepth 1 -name 'card*'",
            "find /etc/modprobe.d -type f",
            "find /dev -name 'nvidia*'",
            "find /sys/bus/pci/drivers/nvidia -maxdepth 1 -type l -printf '%f\\n'",
        ),
        programs=("find",),
        form=Form(
            flags=(
                r"-(print|print0|ls|xdev|mount|empty|readable|writable|executable|not|a|o|and|or|depth|prune|quit|true|false"
                r"|nouser|nogroup|P|H)",
                r"!",
                r"\(",
                r"\)",
            ),
            valued={
                k: r"[^\n/]*(/[^\n]*)?"
                for k in ("-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-lname", "-ilname", "-printf")
            }
            | {
                "-type": r"[bcdpflsD,]+",
                "-xtype": r"[bcdpflsD,]+",
                "-maxdepth": r"[0-9]+",
                "-mindepth": r"[0-9]+",
                "-size": r"[+-]?[0-9]+[bckwMG]?",
                "-perm": r"[-/]?[0-7ugoa=+,rwxst]+",
                "-user": r"[A-Za-z0-9_-]+",
                "-group": r"[A-Za-z0-9_-]+",
                "-mtime": r"[+-]?[0-9]+",
                "-mmin": r"[+-]?[0-9]+",
                "-links": r"[+-]?[0-9]+",
                "-regextype": r"[a-z-]+",
                "-fstype": r"[a-z0-9]+",
                "-inum": r"[0-9]+",
            },
            operands="list",
        ),
    ),
    Rule(
        "read-raw-disk",
        "deny",
        "reads a raw disk or partition (it holds every file, secrets included)",
        examples=("cat /dev/sda", "head -c 512 /dev/nvme0n1", "hexdump -C /dev/mapper/pve-root", "strings /dev/disk/by-id/x"),
        programs=(
            "cat",
            "zcat",
            "head",
            "tail",
            "hexdump",
            "od",
            "xxd",
            "strings",
            "wc",
            "md5sum",
            "sha256sum",
            "sha1sum",
            "file",
            "grep",
            "egrep",
            "fgrep",
            "zgrep",
            "cut",
            "nl",
            "tac",
        ),
        any_arg=(r"(.*=)?/dev/(sd|hd|vd|xvd|nvme|mmcblk|dm-|md|zd|loop|sr|sg|mapper/|disk/|pve/|zvol/).*",),
    ),
    Rule(
        "awk-program",
        "ask",
        "awk is a programming language: a person should read the program",
        examples=("awk '{print $1}' /proc/loadavg", "awk -F: '{print $1}' /etc/passwd"),
        programs=("awk", "gawk", "mawk", "nawk"),
    ),
    Rule(
        "sed-script",
        "ask",
        "sed scripts can write files (w) and run commands (e): a person should read the script",
        examples=("sed -n 1,5p /etc/fstab",),
        programs=("sed",),
    ),
)
