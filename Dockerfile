# linerate in a container: `linerate agent` on each load-generating host, `linerate serve` as the
# controller (docs/kubernetes.md deploys both on Kubernetes).
#
#   docker build -t linerate .            # or: podman build -t linerate .
#
# Two stages: a Rust image builds the release binary (clang compiles the XDP programs in bpf/,
# which crates/xdp/build.rs embeds in the binary: no BPF object ships beside it), and a slim
# Debian image runs it with only the two shared libraries it links beyond libc (libelf, zlib;
# `ldd linerate`). Both base images are build arguments, so a registry mirror or a locally
# imported base can stand in for Docker Hub (docs/kubernetes.md says how this one was built
# without a registry).
#
# What the container needs at run time, for an agent (ports on this host's NICs):
#   --network host        the agent drives the host's interfaces; a pod network has none of them
#   --cap-drop ALL and only these added (not --privileged). Each was taken away in turn from a
#   container of this image on a veth pair (docs/kubernetes.md has the table); what then failed:
#     NET_ADMIN  loading any XDP program (receive, sink, the live transmitter): EPERM
#     NET_RAW    opening an AF_XDP or an AF_PACKET socket
#     BPF        bpf(2) itself (kernel 5.8 and later; before, it takes CAP_SYS_ADMIN)
#     PERFMON    the verifier refuses linerate's XDP programs (EACCES, "pointer -= pointer
#                prohibited": a frame's length, data_end - data, is pointer arithmetic that
#                it allows only to a loader with CAP_PERFMON)
#     IPC_LOCK   registering the AF_XDP UMEM: its pages count against RLIMIT_MEMLOCK unless the
#                process holds CAP_IPC_LOCK (ENOBUFS under a 64 KiB limit)
#   SYS_ADMIN is NOT needed, except for a port named IFACE@NETNS (setns(2) into a network
#   namespace requires CAP_SYS_ADMIN, and the host's /run/netns must be mounted in) and on a
#   kernel older than 5.8 (no CAP_BPF/CAP_PERFMON there).
#   seccomp: the runtime's default profile must let bpf(2) through for CAP_BPF, as containerd's
#   does since 1.6.9 and containers/common's (podman, CRI-O) since 0.60. An older one (Debian
#   12's podman 4.3) allows bpf(2) to CAP_SYS_ADMIN only: every BPF load fails with EPERM, so
#   give the agent --security-opt seccomp=unconfined there rather than SYS_ADMIN.
#   No bpffs mount: linerate pins BPF objects only for its own veth labs (`linerate lab`), which
#   an agent does not make.
# The controller (`linerate serve` driving agents only) needs no capability and runs as the
# non-root user `linerate` (uid 10001) below. The agent runs as uid 0 inside the container with
# the capabilities above: Kubernetes gives added capabilities to root only (no ambient
# capabilities), and a file capability on the binary would make every exec fail where the
# runtime does not grant all of them (`docker run linerate --help` under the default set).
#
#   docker run --rm --network host --cap-drop ALL \
#     --cap-add NET_ADMIN --cap-add NET_RAW --cap-add BPF --cap-add PERFMON --cap-add IPC_LOCK \
#     -v /etc/linerate:/etc/linerate:ro linerate \
#     agent --listen 192.0.2.10:8443 --token-file /etc/linerate/agent-token

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
# The build dependencies scripts/setup.sh installs for the binary: clang and llvm for the XDP
# programs, libelf, zlib, pkg-config and make for libbpf. Skipped when the base has them already
# (a prepared base builds with no network).
RUN pkgs="clang llvm libelf-dev zlib1g-dev pkg-config make linux-libc-dev"; \
    if ! dpkg-query -W $pkgs >/dev/null 2>&1; then \
        apt-get update && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs && \
        rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY . .
# --locked: the versions in Cargo.lock, as CI builds them. Only the linerate binary.
RUN cargo build --release --locked -p linerate --bin linerate && \
    install -D -m 0755 target/release/linerate /out/linerate

FROM ${RUNTIME_IMAGE} AS runtime
RUN pkgs="libelf1 zlib1g"; \
    if ! dpkg-query -W $pkgs >/dev/null 2>&1; then \
        apt-get update && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs && \
        rm -rf /var/lib/apt/lists/*; \
    fi && \
    groupadd --gid 10001 linerate && \
    useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin linerate
COPY --from=build /out/linerate /usr/local/bin/linerate
# The API port of both `serve` and `agent` (docs/kubernetes.md).
EXPOSE 8443
# linerate handles SIGTERM itself (it detaches its programs and closes its ports), so it can be
# PID 1. No USER: an agent needs uid 0 for its capabilities (above); the controller is given
# uid 10001 by its manifest (or `--user 10001`).
ENTRYPOINT ["/usr/local/bin/linerate"]
CMD ["--help"]
