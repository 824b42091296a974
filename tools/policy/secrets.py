"""Where credentials live: never read, never listed, whatever the allow-list says.

The allow-list (:mod:`.readlist`) already keeps every other unknown file at ``ask``; these are the
ones known to hold keys, tokens or passwords, so naming them is ``deny`` (and the model is told why).
"""

from __future__ import annotations

from rigaudit.tools.policy.globs import compile_globs

SECRET_TREES = (
    "/etc/ssl/private",
    "/etc/ssh",
    "/etc/pve/priv",
    "/etc/kubernetes",
    "/etc/apt/auth.conf.d",
    "/etc/nvidia/ClientConfigToken",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/letsencrypt",
    "/etc/containerd",
    "/etc/rancher",
    "/etc/cloud",
    "/var/lib/cloud",
    "/var/lib/kubelet",
    "/var/lib/docker",
    "/root",
    "/home",
)
"""Literal trees with credentials inside (what :func:`holds_secrets` looks for below a path)."""

SECRET_PATHS = compile_globs(
    (
        # accounts and host keys
        "/etc/{shadow,gshadow,shadow-,gshadow-,security/opasswd,ssh/*key*,ssh/ssh_host_*}",
        "/var/backups/{shadow,gshadow}*",
        "/etc/{ssl/private,letsencrypt/live,letsencrypt/archive,letsencrypt/keys,pki/tls/private,pki/CA/private}/**",
        "/etc/{krb5.keytab,ipsec.secrets,ipsec.d/private/**,ppp/*-secrets,openvpn/**,wireguard/**,strongswan/**}",
        "/etc/{NetworkManager/system-connections,wpa_supplicant,netplan,sssd,credstore,credstore.encrypted}/**",
        "/etc/{ldap.secret,nslcd.conf,pam_ldap.conf,libnss-ldap.conf,ldap/ldap.conf,postfix/sasl_passwd*,fetchmailrc}",
        "/etc/{exim4/passwd.client,samba/smbpasswd,rsyncd.secrets,davfs2/secrets,ceph/*keyring*}",
        # package, database and CI credentials
        "/etc/apt/{auth.conf,auth.conf.d/**,apt.conf.d/**}",
        "/etc/{mysql/debian.cnf,mysql/**/*.cnf,redis/**,gitlab-runner/**,gitlab/**}",
        # Kubernetes, containers, clouds
        "/etc/kubernetes/{admin.conf,super-admin.conf,kubelet.conf,controller-manager.conf,scheduler.conf,pki/**}",
        "/etc/kubernetes/**/*.{conf,kubeconfig,yaml,yml}",
        "/var/lib/{kubelet,rancher,etcd,docker,containerd,containers,lxc,lxd,incus,libvirt,machines}/**",
        "/etc/{rancher,containerd,libvirt/secrets}/**",
        "/etc/{containers/auth.json,docker/key.json}",
        "/run/{containers,user/*/containers}/**/auth.json",
        "/run/{secrets,credentials,user/*/credentials}/**",
        "/var/run/secrets/**",
        "/var/lib/cloud/**",
        "/run/cloud-init/**",
        "/var/log/cloud-init*",
        "/etc/cloud/{cloud.cfg.d/**,cloud.cfg}",
        "/var/lib/waagent/**",
        "/etc/{google_authenticator,oauth2,tailscale,zerotier}/**",
        "/{etc,run,usr/lib,usr/local/lib}/{credstore,credstore.encrypted}/**",
        # firmware tables that carry a licence key (the OEM Windows product key)
        "/sys/firmware/acpi/tables/{MSDM,MSDM[0-9]*}",
        "/var/lib/{tailscale,zerotier-one,sss/secrets,samba/private,pve-cluster,ceph,vault,consul,nomad}/**",
        # Proxmox, NVIDIA licensing tokens, MOK and module signing keys
        "/etc/pve/priv/**",
        "/etc/pve/{authkey.key,pve-root-ca.key,local/pve-ssl.key,nodes/*/pve-ssl.key}",
        "/etc/pve/{user.cfg,token.cfg,shadow.cfg,tfa.cfg,ceph.conf,storage.cfg,corosync.conf}",
        "/etc/corosync/authkey",
        "/etc/nvidia/ClientConfigToken/**",
        "/var/lib/{dkms,shim-signed/mok}/**/*.{key,priv,der.priv}",
        "/var/lib/shim-signed/mok/**",
        "/usr/src/**/certs/signing_key.{pem,x509,priv}",
        # home directories: shell history and the dot-files of credential tools
        "/{root,home/*}/{.profile,.bashrc,.bash_profile,.zshrc,.zprofile,.zshenv,.cshrc,.tcshrc,.bash_logout,.lesshst}",
        "/{root,home/*}/{.my.cnf,.mylogin.cnf,.pgpass,.netrc,.git-credentials,.gitconfig,.s3cfg,.boto,.wgetrc,.curlrc}",
        "/{root,home/*}/{.config/gh,.config/hub,.config/rclone,.config/containers,.config/gcloud,.config/doctl}/**",
        "/{root,home/*}/{.terraform.d,.huggingface,.cache/huggingface/token,.local/share/keyrings,.mozilla,.vnc}/**",
        "/{root,home/*}/{.wandb,.netrc,.config/wandb,.cache/wandb,.ngrok2,.config/ngrok,.oci,.ibmcloud}/**",
    )
)
"""Credential files and trees (the whole of a home directory but its Python packages is asked about anyway)."""

SECRET_COMPONENTS = frozenset(
    {
        ".ssh",
        ".aws",
        ".azure",
        ".gnupg",
        ".kube",
        ".docker",
        ".password-store",
        ".vault-token",
        ".netrc",
        ".pgpass",
        ".git-credentials",
        ".pypirc",
        ".npmrc",
        ".yarnrc",
        ".env",
        ".envrc",
        ".bash_history",
        ".zsh_history",
        ".sh_history",
        ".history",
        ".python_history",
        ".psql_history",
        ".mysql_history",
        ".sqlite_history",
        ".rediscli_history",
        ".node_repl_history",
        ".lesshst",
        ".viminfo",
        ".my.cnf",
        ".kaggle",
        ".databrickscfg",
        ".cargo-credentials",
        "secrets",
        "credentials",
    }
)
"""Path components that mark credentials wherever they are (home directories, containers, application trees)."""

SECRET_FILE_NAMES = compile_globs(
    (
        "id_{rsa,dsa,ecdsa,ed25519,xmss}*",
        "ssh_host_*_key",
        "*.{pem,key,p12,pfx,jks,keystore,keytab,kdbx,keyring,ovpn,psk,tok}",
        "{shadow,gshadow}*",
        "auth.json",
        "{.,}htpasswd*",
        ".env{,.*}",
        "user-data{,.txt,.i}",
        "vendor-data{,.txt,.i}",
    )
)
"""File names that mark credentials wherever they are, even named bare (``cat id_rsa``)."""

SECRET_NAME_WORDS = compile_globs(("*{kubeconfig,credential,password,secret,api_key,apikey}*", "*{token,tokens}", "*.env"))
"""Words that mark credentials in a file name within a path (``/opt/app/hf_token``), never in a bare word."""

SECRET_BEARING = ("/etc", "/root", "/home", "/var", "/run", "/proc", "/opt", "/srv", "/mnt", "/media", "/tmp", "/usr/local/etc")
"""Trees that hold credentials somewhere inside: never read or listed whole."""


def is_secret(path: str) -> bool:
    """Whether the absolute, normalized ``path`` names credentials (a known file or tree, a marked component or name)."""
    if SECRET_PATHS.fullmatch(path):
        return True
    parts = [p for p in path.split("/") if p]
    if any(p in SECRET_COMPONENTS for p in parts):
        return True
    return bool(parts) and bool(SECRET_FILE_NAMES.fullmatch(parts[-1]) or SECRET_NAME_WORDS.fullmatch(parts[-1]))


def is_secret_name(word: str) -> bool:
    """Whether a bare word (no slash) names a credential file (``id_rsa``, ``server.key``)."""
    return word in SECRET_COMPONENTS or SECRET_FILE_NAMES.fullmatch(word) is not None


def holds_secrets(path: str) -> bool:
    """Whether the tree at ``path`` holds credentials (``/``, ``/etc``, ``/home``..., or a secret tree itself)."""
    if is_secret(path) or path == "/":
        return True
    prefix = path.rstrip("/") + "/"
    return any(root == path or root.startswith(prefix) for root in (*SECRET_BEARING, *SECRET_TREES))
