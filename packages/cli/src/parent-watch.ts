/**
 * Preloaded into every service the supervisor starts (`node --import`). The
 * supervisor spawns services with an IPC channel; when the channel closes
 * because the supervisor exited, even by SIGKILL, the service shuts down as on
 * SIGTERM, so no service outlives the stack that started it.
 */
if (process.channel) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The channel alone must not keep a service that is done running alive.
  process.channel.unref();
}
