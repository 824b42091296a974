"""Small read-only system information tools (each with its own option whitelist)."""

from __future__ import annotations

from rigaudit.tools.policy.schema import Form, Rule

_COLUMNS = r"[A-Za-z0-9_,%:+-]+"
_PACKAGE = r"[A-Za-z0-9_.+:*-]+"
_IFACE = r"(eth|en|eno|ens|enp|ib|bond|vmbr|br|lo|wl|mlx|docker|veth|tap|fwbr|fwpr|fwln|virbr|wg|tailscale)[A-Za-z0-9_.@-]*"
_WORD = r"[A-Za-z0-9_.-]+"

INFO: tuple[Rule, ...] = (
    Rule(
        "kernel-info",
        "allow",
        "reads the kernel name and version",
        examples=("uname -r", "uname -a", "uname", "uname -rs", "uname --kernel-release"),
        programs=("uname",),
        form=Form(
            flags=(
                r"-[asnrvmpio]+",
                r"--(all|kernel-name|nodename|kernel-release|kernel-version|machine|processor"
                r"|hardware-platform|operating-system|version)",
            ),
        ),
    ),
    Rule(
        "cpu-info",
        "allow",
        "reads the CPU layout",
        examples=("lscpu", "lscpu -e", "lscpu -e=CPU,NODE,SOCKET", "lscpu --json", "nproc", "nproc --all"),
        programs=("lscpu", "nproc"),
        form=Form(
            flags=(
                r"-[aebcpJxyBCV]+",
                r"-[ep]=[A-Za-z,-]+",
                r"--(all|extended|parse|json|hex|physical|bytes|caches|online|offline|version|output-all)(=[A-Za-z,-]+)?",
            ),
        ),
    ),
    Rule(
        "memory-info",
        "allow",
        "reads memory usage and NUMA memory statistics",
        examples=("free -h", "free -g -w", "lsmem", "numastat", "numastat -m", "numastat -p 4242"),
        programs=("free", "lsmem", "numastat"),
        form=Form(
            flags=(
                r"-[bkmgthlwvaJnrsSmcz]+",
                r"--(bytes|kilo|mega|giga|tera|human|si|total|wide|lohi|committed|all|json|noheadings"
                r"|raw|summary|split)",
            ),
            valued={"-p": r"[0-9A-Za-z_.-]+", "-o": _COLUMNS, "--output": _COLUMNS},
        ),
    ),
    Rule(
        "identity-info",
        "allow",
        "prints the current user and groups",
        examples=("id", "id -u", "whoami", "groups", "id nobody"),
        programs=("id", "whoami", "groups"),
        form=Form(flags=(r"-[unGgrz]+",), operands="match", operand_re=_WORD, max_operands=1),
    ),
    Rule(
        "platform-info",
        "allow",
        "reads the virtualization platform and distribution",
        examples=(
            "systemd-detect-virt",
            "systemd-detect-virt --container",
            "systemd-detect-virt -c",
            "systemd-detect-virt --vm",
            "pveversion",
            "pveversion -v",
            "lsb_release -a",
            "uptime",
            "uptime -p",
        ),
        programs=("systemd-detect-virt", "pveversion", "lsb_release", "uptime"),
        form=Form(
            flags=(
                r"-[cvrqaidsp]+",
                r"--(container|vm|chroot|quiet|private-users|list|cvm|list-cvm|verbose|all|id"
                r"|description|release|codename|short|pretty|since)",
            ),
        ),
    ),
    Rule(
        "sensors-set",
        "deny",
        "writes sensor chip settings (-s)",
        examples=("sensors -s",),
        programs=("sensors",),
        any_arg=(r"-[a-zA-Z]*s[a-zA-Z]*|--set",),
    ),
    Rule(
        "devices-info",
        "allow",
        "reads hardware sensors and USB devices",
        examples=("sensors", "sensors -u", "sensors -j", "lsusb", "lsusb -t", "lsusb -v -d 0bda:"),
        programs=("sensors", "lsusb"),
        form=Form(
            flags=(r"-[uAjfvtV]+",),
            valued={"-d": r"[0-9a-fA-F]*:[0-9a-fA-F]*", "-s": r"[0-9:.]+"},
            operands="match",
            operand_re=r"[A-Za-z0-9_*-]+",
        ),
    ),
    Rule(
        "storage-info",
        "allow",
        "reads block devices and file systems",
        examples=("df -h", "df -hT /", "lsblk", "lsblk -o NAME,SIZE,MODEL", "findmnt", "findmnt -t hugetlbfs", "df -h /dev/shm"),
        programs=("df", "lsblk", "findmnt"),
        form=Form(
            flags=(r"-[ahHiklmnpPTSJbdfrsuxzADOM]+", r"--[a-z][a-z-]*(=[A-Za-z0-9_,]+)?"),
            valued={
                "-o": _COLUMNS,
                "--output": _COLUMNS,
                "-t": r"[a-z0-9,]+",
                "--type": r"[a-z0-9,]+",
                "-x": r"[A-Z]+",
                "-e": r"[0-9,]+",
                "-I": r"[0-9,]+",
            },
            operands="list",
        ),
    ),
    Rule(
        "clock-and-name-read",
        "allow",
        "prints the host name, time and locale",
        examples=(
            "hostname",
            "hostname -f",
            "hostname -I",
            "hostnamectl",
            "hostnamectl status",
            "timedatectl",
            "date",
            "date -u",
            "date +%s",
            "timedatectl show",
        ),
        programs=("hostname", "hostnamectl", "timedatectl", "date", "localectl"),
        form=Form(
            flags=(
                r"-[fsdAiIauR]",
                r"--(fqdn|short|domain|all-fqdns|ip-address|all-ip-addresses|utc|rfc-email|no-pager)",
                r"-I(date|hours|minutes|seconds|ns)?",
                r"--iso-8601(=[a-z]+)?",
            ),
            operands="match",
            operand_re=r"status|show|\+[A-Za-z0-9%:_ ./-]*",
            max_operands=1,
        ),
    ),
    Rule(
        "processes-read",
        "allow",
        "lists processes (never their environment: the BSD 'e' option is not accepted)",
        examples=("ps aux", "ps -ef", "ps -eo pid,comm,rss", "ps -o pid,psr,comm -p 4242", "ps axo pid,comm"),
        programs=("ps",),
        form=Form(
            flags=(r"-[AacdefFHjlLMmNqsTtuvwxyZ]+", r"--(no-headers|headers|forest|cumulative|sort=[a-z%,+-]+|version)"),
            valued={
                "-o": _COLUMNS,
                "-eo": _COLUMNS,
                "-O": _COLUMNS,
                "--format": _COLUMNS,
                "-p": r"[0-9,]+",
                "--pid": r"[0-9,]+",
                "-C": r"[A-Za-z0-9_.,-]+",
                "-u": r"[A-Za-z0-9_,-]+",
                "-U": r"[A-Za-z0-9_,-]+",
                "-g": r"[A-Za-z0-9_,-]+",
                "-t": r"[A-Za-z0-9/,]+",
            },
            operands="match",
            operand_re=r"[abcfhjlmnrsuvwxzAHLMSTX]+o?|pid,[A-Za-z0-9_,%:+-]*|[a-z]+,[A-Za-z0-9_,%:+-]*",
        ),
    ),
    Rule(
        "process-lookup",
        "allow",
        "finds processes by name",
        examples=("pgrep -a python3", "pgrep -f sglang", "pidof nvidia-persistenced"),
        programs=("pgrep", "pidof"),
        form=Form(
            flags=(r"-[aflnoxicsvwz]+",), valued={"-u": r"[A-Za-z0-9_,-]+"}, operands="match", operand_re=r"[A-Za-z0-9_.:-]+"
        ),
    ),
    Rule(
        "sockets-read",
        "allow",
        "lists sockets (never killing them: -K is not accepted)",
        examples=("ss -tlnp", "ss -s", "ss -tunap"),
        programs=("ss",),
        form=Form(
            flags=(r"-[tulnpaxsmie46HOwr0S]+", r"--(tcp|udp|listening|numeric|processes|all|summary|unix|info|memory|extended)"),
        ),
    ),
    Rule(
        "vmstat-read",
        "allow",
        "reads virtual memory statistics once",
        examples=("vmstat", "vmstat -s", "vmstat -w"),
        programs=("vmstat",),
        form=Form(flags=(r"-[asdDmtwSn]+",), valued={"-S": r"[kKmM]"}),
    ),
    Rule(
        "ip-change",
        "deny",
        "changes network configuration",
        examples=(
            "ip link set eth0 down",
            "ip addr add 10.0.0.1/24 dev eth0",
            "ip route flush all",
            "ip netns exec x sh",
            "ip -batch /tmp/cmds",
            "ip -s link set eth0 up",
        ),
        programs=("ip",),
        any_arg=(
            r"add|del|delete|set|change|replace|flush|append|prepend|save|restore|exec|attach|detach|deleteall|up|down",
            r"-b|-batch|--batch|-force|-n|-netns",
        ),
    ),
    Rule(
        "ip-read",
        "allow",
        "reads network interfaces and routes",
        examples=(
            "ip -br link",
            "ip -br addr",
            "ip link show",
            "ip addr show dev eth0",
            "ip -d link show",
            "ip route",
            "ip -s link",
            "ip -j addr show vmbr0",
        ),
        programs=("ip",),
        form=Form(
            flags=(r"-(br|brief|d|details|s|stats|j|json|p|pretty|4|6|o|oneline|h|human|c=never)",),
            operands="match",
            operand_re=r"link|addr|address|route|neigh|rule|maddr|show|list|dev|" + _IFACE,
        ),
    ),
    Rule(
        "ethtool-change",
        "deny",
        "changes or tests a network device (settings, offloads, rings, firmware, self-test, LED)",
        examples=("ethtool -s eth0 speed 100", "ethtool -K eth0 tso off", "ethtool -t eth0", "ethtool -f eth0 fw.bin"),
        programs=("ethtool",),
        any_arg=(
            r"-[sKGLACEfWrptNUXQM]|--(change|set-.*|flash|reset|features|offload|identify|test|negotiate|config-.*|coalesce"
            r"|pause|ring|channels)",
        ),
    ),
    Rule(
        "ethtool-read",
        "allow",
        "reads a network device's driver, statistics and settings",
        examples=("ethtool eth0", "ethtool -i eth0", "ethtool -S mlx5_0", "ethtool --show-ring eth0"),
        programs=("ethtool",),
        form=Form(
            flags=(
                r"-[iSkglacmTP]",
                r"--(driver|statistics|show-features|show-ring|show-channels|show-pause|show-coalesce"
                r"|module-info|show-time-stamping|show-permaddr)",
            ),
            operands="match",
            operand_re=r"[A-Za-z0-9_.@-]+",
            min_operands=1,
            max_operands=1,
        ),
    ),
    Rule(
        "network-tools",
        "deny",
        "network configuration tools (firewall, traffic control, interfaces) are not diagnostics here",
        examples=("iptables -F", "tc qdisc del dev eth0 root", "ifdown eth0", "nmcli con down x"),
        programs=("tc", "bridge", "ifconfig", "ifup", "ifdown", "nmcli", "iptables", "ip6tables", "nft", "devlink", "brctl"),
    ),
    Rule(
        "hardware-tables",
        "allow",
        "reads the firmware's hardware tables",
        examples=("dmidecode -t memory", "dmidecode -t 17", "dmidecode -s system-product-name", "dmidecode"),
        programs=("dmidecode",),
        form=Form(
            flags=(r"-q|--quiet|-u|--dump|--version",),
            valued={"-t": r"[a-z0-9,-]+", "--type": r"[a-z0-9,-]+", "-s": r"[a-z-]+", "--string": r"[a-z-]+"},
        ),
    ),
    Rule(
        "dpkg-read",
        "allow",
        "reads installed package versions",
        examples=(
            "dpkg -l",
            "dpkg -l 'nvidia*'",
            "dpkg -s nvidia-driver",
            "dpkg-query -W -f '${Version}' nvidia-kernel-common",
            "dpkg --print-architecture",
        ),
        programs=("dpkg", "dpkg-query"),
        form=Form(
            flags=(
                r"-l|--list|-s|--status|-L|--listfiles|-S|--search|-p|--print-avail|-W|--show|--get-selections|--version",
                r"--print-architecture",
                r"--showformat=[^\n]+",
            ),
            valued={"-f": r"[^\n]+", "--showformat": r"[^\n]+"},
            operands="match",
            operand_re=_PACKAGE,
        ),
    ),
    Rule(
        "apt-read",
        "allow",
        "reads package candidates and installed versions (from the local cache)",
        examples=(
            "apt-cache policy nvidia-driver",
            "apt-cache show nvidia-kernel-common",
            "apt list --installed",
            "apt list --installed 'nvidia*'",
        ),
        programs=("apt-cache", "apt"),
        form=Form(
            flags=(r"--installed|--upgradable|-a|--all-versions|-q|--names-only|--full",),
            verbs=("policy", "show", "showpkg", "depends", "rdepends", "madison", "search", "list", "pkgnames"),
            operands="match",
            operand_re=_PACKAGE,
        ),
    ),
    Rule(
        "dkms-read",
        "allow",
        "reads the DKMS module build status",
        examples=("dkms status", "dkms status -m nvidia"),
        programs=("dkms",),
        form=Form(
            valued={"-m": _WORD, "-v": _WORD, "-k": _WORD}, verbs=("status",), operands="match", operand_re=r"[A-Za-z0-9_./-]+"
        ),
    ),
    Rule(
        "print-environment",
        "ask",
        "prints the environment, which often holds secrets (tokens, keys)",
        examples=("env", "printenv", "printenv HF_TOKEN"),
        programs=("env", "printenv"),
    ),
    Rule(
        "print-text",
        "allow",
        "prints its arguments",
        examples=("echo hello", "printf %s x", "true", "false"),
        programs=("echo", "printf", "true", "false"),
        form=Form(flags=(r"-[neE]+",), operands="match", operand_re=r"[^\n]*"),
    ),
    Rule(
        "ldconfig-rebuild",
        "deny",
        "rebuilds the shared library cache (only -p/--print-cache reads it)",
        examples=("ldconfig", "ldconfig -v", "ldconfig /usr/local/cuda/lib64"),
        programs=("ldconfig",),
        unless_only=(r"-p|--print-cache",),
    ),
    Rule(
        "ldconfig-read",
        "allow",
        "prints the shared library cache",
        examples=("ldconfig -p",),
        programs=("ldconfig",),
        form=Form(flags=(r"-p|--print-cache",), required=("-p", "--print-cache")),
    ),
    Rule(
        "locate-program",
        "allow",
        "finds where a program is installed",
        examples=("which nvidia-smi", "which -a python3", "whereis nvcc", "whereis -b nvidia-smi"),
        programs=("which", "whereis"),
        form=Form(flags=(r"-a|-b|-m|-s|-l",), operands="match", operand_re=r"[A-Za-z0-9_.+-]+", min_operands=1),
    ),
    Rule(
        "tuned-read",
        "allow",
        "reads the tuned profile",
        examples=("tuned-adm active", "tuned-adm list", "tuned-adm recommend", "tuned-adm verify"),
        programs=("tuned-adm",),
        form=Form(verbs=("active", "list", "recommend", "verify"), operands="none"),
    ),
    Rule(
        "interpreter-version",
        "allow",
        "prints an interpreter's version",
        examples=("python3 --version", "python3.11 -V", "bash --version", "perl --version"),
        programs=("python", "pypy", "perl", "ruby", "node", "bash", "sh", "dash", "zsh"),
        form=Form(flags=(r"--version|-V",)),
    ),
)
