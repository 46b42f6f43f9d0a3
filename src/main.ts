import { ConfigError, loadConfig } from './config.js';
import { startService, type RunningService } from './server.js';
import { createLogger } from './observability/log.js';

/**
 * The entry point (`npm start`, `node dist/src/main.js`): runs the service until SIGTERM or SIGINT,
 * then stops gracefully and exits 0. The Node flags it runs best with are given where the process
 * is started (package.json's `start`, the container's command; see the README's Operations).
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  // Signals are taken from the first moment: one that arrives while the service is still starting
  // (migrating, say) stops it as soon as it has started, gracefully, instead of killing it midway.
  let service: RunningService | undefined;
  let signalled = false;
  const stop = () => {
    service!.stop().then(
      () => {
        log.flush();
        process.exit(0);
      },
      (err) => {
        log.error('stop failed', { error: (err as Error).name, message: (err as Error).message });
        log.flush();
        process.exit(1);
      },
    );
  };
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    log.info('stopping', { signal });
    if (service) stop();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  service = await startService(config, log);
  if (service.firstToken) {
    // Printed once, on stdout, and never logged: it is the only way in on a new database.
    process.stdout.write(
      `\nNo token existed, so a first one with scope "*" was created. Keep it; it is not shown again:\n\n  ${service.firstToken}\n\n`,
    );
  }
  process.stdout.write(`User and token service listening on ${service.url} (${service.db.kind} database)\n`);
  if (signalled) stop();
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
  process.stderr.write(`Could not start: ${message}\n`);
  process.exit(1);
});
