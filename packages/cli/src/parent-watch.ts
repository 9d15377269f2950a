import cluster from 'node:cluster';

/**
 * Preloaded into every service the supervisor starts (`node --import`). The
 * supervisor spawns services with an IPC channel; when the channel closes
 * because the supervisor exited, even by SIGKILL, the service shuts down as on
 * SIGTERM, so no service outlives the stack that started it.
 *
 * A service's cluster workers (the gateway's `--workers`) inherit the preload,
 * but their channel leads to the service's primary, not to the supervisor, and
 * they wait on it for their configuration: unref-ing it would let a starting
 * worker exit. Node's cluster already ends a worker whose primary is gone.
 */
if (process.channel && !cluster.isWorker) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The channel alone must not keep a service that is done running alive.
  process.channel.unref();
}
