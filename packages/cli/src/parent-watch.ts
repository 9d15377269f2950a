/**
 * Preloaded into every service the supervisor starts (`node --import`). The
 * supervisor spawns services with an IPC channel; when the channel closes
 * because the supervisor exited, even by SIGKILL, the service shuts down as on
 * SIGTERM, so no service outlives the stack that started it.
 *
 * A service's own cluster workers (the gateway's `--workers`) inherit this
 * preload, but their channel leads to the service's primary process, which
 * already stops them; watching it there would only unref the channel a worker
 * needs while it starts.
 */
import cluster from 'node:cluster';

if (process.channel && cluster.isPrimary) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The channel alone must not keep a service that is done running alive.
  process.channel.unref();
}
