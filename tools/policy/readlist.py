"""What a diagnostic may read: an allow-list of what audits need, and the lists that outrank it.

Built from what the investigators and the snapshot recorder read (``agents/``, the fixtures'
``files/`` trees) and what an investigator agent plausibly needs: kernel state (sysfs, procfs
status-like files), distribution and boot configuration, module and sysctl settings, NVIDIA and
container-runtime configuration without tokens, installed software versions, and logs that carry
no secrets. Anything else is not a secret *known* to this module, but is not read without a person
(``ask``). Judged on the resolved path (:mod:`.resolve`).

Outranking the allow-list, always ``deny``: secrets (:mod:`.secrets`), :data:`SIDE_EFFECTS`
(reading has effects or reaches raw memory or registers) and every device node but
:data:`SAFE_DEVICES`.
"""

from __future__ import annotations

from rigaudit.tools.policy.globs import compile_globs

_ROTATED = "{,.[0-9],.[0-9][0-9],.[0-9].gz,.[0-9][0-9].gz,-[0-9]*}"

READABLE = compile_globs(
    (
        # procfs: system state (status-like files, never memory or the log queue)
        "/proc/{cmdline,cpuinfo,meminfo,version,version_signature,modules,devices,interrupts,softirqs,stat,loadavg}",
        "/proc/{uptime,vmstat,zoneinfo,buddyinfo,pagetypeinfo,swaps,partitions,diskstats,filesystems,mounts,misc}",
        "/proc/{iomem,ioports,cgroups,consoles,locks,schedstat,mdstat,config.gz,dma,execdomains,fb,cpusets}",
        "/proc/{sys,driver,pressure,irq,bus/pci,tty/drivers,fs/nfsd/versions}/**",
        # procfs: a process's status-like files (its environment is asked about; its memory never read)
        "/proc/<pid>/{status,stat,statm,cmdline,comm,limits,cgroup,cpuset,numa_maps,maps,smaps,smaps_rollup}",
        "/proc/<pid>/{sched,schedstat,io,oom_score,oom_score_adj,oom_adj,mountinfo,mounts,mountstats,wchan}",
        "/proc/<pid>/{loginuid,sessionid,personality,autogroup,attr/current,net/**,fdinfo/*,setgroups,uid_map,gid_map}",
        # sysfs, except what SIDE_EFFECTS and the exclusions below take out
        "/sys/**",
        # distribution, identity, boot and kernel configuration
        "/etc/{os-release,lsb-release,debian_version,redhat-release,system-release,centos-release,issue,issue.net}",
        "/etc/{hostname,hosts,machine-id,timezone,localtime,fstab,mtab,passwd,group,nsswitch.conf,resolv.conf,shells}",
        "/etc/{ld.so.conf,ld.so.preload,modules,modprobe.conf,sysctl.conf,nccl.conf,sysctl.d/**,modprobe.d/**}",
        "/etc/{ld.so.conf.d,modules-load.d,udev,systemd,tmpfiles.d,kernel,initramfs-tools,dracut.conf.d,tuned}/**",
        "/etc/{dracut.conf,selinux/config,irqbalance.env,gai.conf,adjtime,inittab,rc.conf,environment.d/README}",
        "/etc/default/{grub,grub.d/**,irqbalance,cpufrequtils,cpupower,nvidia*,tuned,kdump-tools,numad,keyboard,locale}",
        "/etc/sysconfig/{grub,irqbalance,kernel,cpupower,nvidia*}",
        "/etc/security/{limits.conf,limits.d/**}",
        "/etc/alternatives/**",
        "/run/systemd/resolve/{resolv,stub-resolv}.conf",
        # NVIDIA, CUDA and container runtime configuration (never vGPU client tokens: see secrets)
        "/etc/nvidia/**",
        "/etc/{nvidia-container-runtime,nvidia-container-toolkit,nvidia-imex,nvidia-fabricmanager,cdi,dcgm}/**",
        "/etc/{X11/xorg.conf,X11/xorg.conf.d/**,OpenCL/vendors/**,vulkan/**,docker/daemon.json,dkms/**}",
        # package sources (never apt credentials: see secrets)
        "/etc/apt/{sources.list,sources.list.d/**,preferences,preferences.d/**,trusted.gpg.d/**}",
        "/etc/{yum.repos.d,zypp/repos.d}/**",
        # Proxmox guest definitions (GPU passthrough, LXC device mounts)
        "/etc/pve/{lxc,qemu-server}/*.conf",
        "/etc/pve/nodes/*/{lxc,qemu-server}/*.conf",
        "/etc/pve/{.version,.members,.vmlist}",
        # boot files: kernel configs, boot entries, kernel images (not the initramfs: it can carry keys)
        "/boot/{config-*,vmlinuz*,System.map-*,grub/grub.cfg,grub2/grub.cfg,loader/entries/*.conf}",
        "/boot/efi/loader/entries/*.conf",
        "/boot/efi/EFI/*/grub.cfg",
        # installed software: the vendor tree, kernel modules and firmware, Python packages, DKMS
        "/usr/{bin,sbin,lib,lib32,lib64,libx32,libexec,include,share,src}/**",
        "/usr/local/{bin,sbin,lib,lib64,include,share,src,cuda*,nvidia,nccl*,mpi}/**",
        "/{lib,lib64,lib32}/**",
        "/opt/**/{site-packages,dist-packages}/**",
        "/opt/{nvidia,cuda*,rocm*,mellanox}/**",
        "/{root,home/*}/**/{site-packages,dist-packages}/**",
        "/{root,home/*}/.nccl.conf",
        "/var/lib/dkms/**",
        "/var/lib/nvidia-persistenced/**",
        "/var/tmp/rigaudit/**",
        # logs that carry no secrets (kernel, package and NVIDIA service logs, with their rotations)
        "/var/log/{syslog,kern.log,messages,dmesg,boot.log,dpkg.log,alternatives.log}" + _ROTATED,
        "/var/log/{fabricmanager.log,nv-hostengine.log,nvidia-installer.log,cuda-installer.log}" + _ROTATED,
        "/var/log/{Xorg.*.log,Xorg.*.log.old,apt/history.log*,apt/term.log*,nvidia*/**,dcgm/**,nv-fabricmanager/**}",
        "/var/log/{installer/syslog,installer/hardware-summary,tuned/tuned.log*,nvidia-persistenced.log*}",
        "/var/log/journal/**",
    )
)

NOT_READABLE = compile_globs(
    (
        "/sys/firmware/efi/efivars/**",
        "/sys/firmware/efi/vars/**",
        "/sys/power/wakeup_count",
        "/sys/kernel/{security,config}/**",
        "/sys/kernel/vmcoreinfo",
        "/sys/**/config",
        "/sys/fs/{bpf,pstore,fuse/connections}/**",
        "/sys/**/{vpd,remove,rescan,reset,bind,unbind,new_id,remove_id,uevent}",
        "/etc/systemd/credstore{,.encrypted}/**",
    )
)
"""Inside the allow-listed trees but not needed (and not known to be safe): ``ask``. Whole PCI config spaces
ask whatever program reads them, as ``lspci -xxx`` does (some devices hang or misbehave on reads beyond the
standard header); ``vmcoreinfo`` gives the kernel's memory layout (symbol addresses) to whoever reads it."""

PROCESS_FDS = compile_globs(("/proc/<pid>/{fd,fd/*,map_files,map_files/*}",))
"""A process's open-file table (what it has open: files, sockets, pipes): listing it ``ask``s."""

ABOVE_PROCESS_FDS = compile_globs(("/proc", "/proc/<pid>", "/proc/<pid>/task"))
"""Trees that hold open-file tables: listing one recursively (``ls -lR``, ``find -ls``) lists them too."""

ALSO_READABLE = compile_globs(
    (
        "/sys/firmware/efi/efivars/{SecureBoot,SetupMode,AuditMode,DeployedMode}-*",
        "/sys/kernel/security/lockdown",
    )
)
"""What the checks read from the excluded trees (Secure Boot state, kernel lockdown)."""

SIDE_EFFECTS = compile_globs(
    (
        "/dev/{mem,kmem,port,crash,nvram,snapshot,watchdog*,cpu/*/msr,cpu/*/cpuid}",
        "/proc/{kcore,kmsg,kpagecount,kpageflags,kpagecgroup,kpageidle}",
        "/proc/<pid>/{mem,pagemap}",
    )
)
"""Paths that are never named, whatever the program: raw or process memory, I/O ports and MSRs, the
watchdog (opening it arms it), the kernel log queue (reading consumes it). Other device nodes are
vetted by kind when read (see :func:`~.paths.vet_read`)."""

REGISTERS = compile_globs(
    (
        "/sys/**/{resource[0-9]*,rom,legacy_io,legacy_mem}",
        "/sys/kernel/{debug,tracing}/**",
    )
)
"""Files whose *reading* reaches device registers (PCI BARs, ROMs, legacy I/O) or debug and trace
files, where a read can have side effects or block: never read (``stat`` is fine)."""

DEVICES = compile_globs(("/dev/**",))
TMPFS_UNDER_DEV = compile_globs(("/dev/{shm,hugepages,mqueue}/**",))
"""Under ``/dev`` but plain files (shared memory, huge pages, message queues)."""
SAFE_DEVICES = compile_globs(("/dev/{null,zero,full,random,urandom}",))
"""The device nodes known to be safe to read (still not needed: ``ask``); every other one is ``deny``:
raw disks hold every file, ``/dev/mem`` and ``/dev/port`` reach memory and ports, opening
``/dev/watchdog`` arms it, reading a tty steals its input, ``/dev/kmsg`` and ``/dev/rtc`` block."""

RECURSIVE = compile_globs(
    (
        "/etc/{modprobe.d,modules-load.d,sysctl.d,kernel,systemd,udev,apt/sources.list.d}/**",
        "/etc/{pve/lxc,pve/qemu-server,tuned,nvidia-container-runtime,nvidia-container-toolkit,cdi,dkms}/**",
        "/var/log/{apt,nvidia*,dcgm}/**",
        "/proc/{sys,driver,pressure,irq}/**",
        "/sys/{module,class/net,kernel/mm,devices/system/cpu,devices/system/node,bus/pci/drivers}/**",
        "/{lib,usr/lib}/{modules,modprobe.d,sysctl.d,udev/rules.d,systemd/system,firmware/nvidia}/**",
        "/usr/{share/doc,share/nvidia,include,src,local/cuda*}/**",
        "/opt/**/{site-packages,dist-packages}/**",
        "/var/lib/dkms/**",
    )
)
"""Trees a diagnostic may read whole (``grep -r``): no secrets, no device registers, no debug files."""
