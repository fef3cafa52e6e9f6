#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, from Debian's slurm-wlm and munge, for tests/workflows/test_slurm.py.
#
#   tests/slurm/cluster.sh up DIR     write DIR/slurm.conf, start munged, slurmctld and slurmd (as the
#                                     current user: root in CI), wait until the node is idle
#   tests/slurm/cluster.sh down DIR   stop the daemons started by `up DIR`
#
# Then run clients with SLURM_CONF=DIR/slurm.conf and PATH=DIR/bin:$PATH (see below).
#
# Everything (configuration, keys, sockets, state, logs) lives under DIR; nothing under /etc is read
# or changed, and ports are picked free, so two clusters can run side by side. The node declares two
# GPUs (a GRES on two stand-in device files), so that jobs asking for `--gpus=1` are scheduled as on
# a GPU partition; what they run finds no CUDA device (torch's CPU build) and runs on the CPU, as the
# workflow's GPU rules do on any node without a GPU. No accounting daemon: job states come from
# slurmctld through squeue (MinJobAge keeps finished jobs visible for 10 minutes).
set -euo pipefail

cmd=${1:?usage: cluster.sh up|down DIR}
dir=$(realpath -m "${2:?usage: cluster.sh up|down DIR}")

stop() {
    # the jobs still queued or running on this cluster (a failed or interrupted run), then each
    # daemon by the pid it wrote: slurmd, slurmctld, munged
    if [[ -s $dir/slurmctld.pid && -f $dir/slurm.conf ]]; then
        SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
        local t0=$SECONDS
        while ((SECONDS - t0 < 15)); do
            [[ -z $(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -t R,CG 2>/dev/null) ]] && break
            sleep 0.5
        done
    fi
    for name in slurmd slurmctld munged; do
        pidfile="$dir/$name.pid"
        [[ -s $pidfile ]] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$pidfile"
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case $cmd in
down)
    stop
    exit 0
    ;;
up) ;;
*)
    echo "usage: cluster.sh up|down DIR" >&2
    exit 2
    ;;
esac

for exe in munged slurmctld slurmd sinfo sbatch squeue srun scancel; do
    command -v "$exe" >/dev/null || {
        echo "cluster.sh: $exe not found (apt-get install slurm-wlm munge)" >&2
        exit 3
    }
done

fail() {
    echo "cluster.sh: $1; logs in $dir" >&2
    tail -n 20 "$dir"/*.log >&2 2>/dev/null || true
    stop
    exit 1
}
trap 'fail "a command failed (line $LINENO)"' ERR

mkdir -p "$dir"/{state,spool,munge}
chmod 700 "$dir" "$dir/munge"
user=$(id -un)
cpus=$(nproc)
# memory the node offers: what is available now, less 1 GiB for the daemons and the submitting process
mem_mb=$(awk '/MemAvailable/ {print int($2 / 1024) - 1024}' /proc/meminfo)

# munge: a private key and socket
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"

cat >"$dir/slurm.conf" <<CONF
ClusterName=probunlearn
SlurmctldHost=localhost
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
KillWait=5
GresTypes=gpu
NodeName=localhost NodeHostname=localhost CPUs=$cpus RealMemory=$mem_mb Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
# two GPU device files: slurmd drops a GPU without one; character devices (like /dev/null) where
# mknod is allowed, else plain files (slurmd then logs an error, and schedules them all the same)
for i in 0 1; do
    mknod "$dir/gpu$i" c 1 3 2>/dev/null || touch "$dir/gpu$i"
done
cat >"$dir/gres.conf" <<CONF
NodeName=localhost Name=gpu File=$dir/gpu[0-1]
CONF

# snakemake's slurm-jobstep executor drops every SLURM_* variable but the job's ids from the
# environment of the srun it calls inside a job, SLURM_CONF included: on a real cluster srun then
# reads /etc/slurm/slurm.conf; here DIR/bin/srun (put DIR/bin first on PATH) points it back at DIR.
mkdir -p "$dir/bin"
cat >"$dir/bin/srun" <<SH
#!/bin/sh
SLURM_CONF="$dir/slurm.conf" exec $(command -v srun) "\$@"
SH
chmod +x "$dir/bin/srun"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N localhost

# wait until the node is idle (at most 60 s)
while ((SECONDS < 60)); do
    state=$(timeout 5 sinfo -h -n localhost -o %t 2>/dev/null || true)
    case $state in
    idle)
        echo "cluster.sh: node localhost idle ($cpus CPUs, $mem_mb MB, 2 GPUs); SLURM_CONF=$SLURM_CONF"
        exit 0
        ;;
    inval* | drain* | down*) break ;;
    esac
    sleep 0.5
done
fail "the node did not become idle (state: ${state:-none})"
