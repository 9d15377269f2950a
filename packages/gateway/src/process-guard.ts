import type { Logger } from '@mcp-identity/common';
import type { GatewayMetrics } from './metrics.js';

/**
 * The last line of defence: an error no handler caught is logged and counted instead of ending
 * the process, so one bad exchange cannot take every proxy down. Each occurrence is a bug to fix
 * where the error arises; the counter makes it visible. Returns the uninstaller.
 */
export function installProcessGuard(logger: Logger, metrics: GatewayMetrics): () => void {
  const onError = (kind: 'exception' | 'rejection') => (error: unknown) => {
    metrics.recordUncaught(kind);
    logger.error({ err: error, kind }, 'uncaught error contained; the gateway keeps serving');
  };
  const onException = onError('exception');
  const onRejection = onError('rejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
