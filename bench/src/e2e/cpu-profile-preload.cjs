// Loaded with `node --require` (through NODE_OPTIONS, which refuses --cpu-prof on Node 20) into
// each service bench:e2e --profile starts: profiles the process with V8's sampling profiler and
// writes <dir>/<pid>.cpuprofile when it exits. The in-thread inspector session answers
// synchronously, so the 'exit' handler can still collect the profile.
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.env.E2E_BENCH_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error)
        writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
