// npm links a package's command at install time, before anything is compiled, so the command's
// file is plain JavaScript: it hands its compiled entry point to this module, which runs it or
// says how to build it. Plain JavaScript too, for the same reason.

/**
 * Imports `entry` (the compiled command); when it is not built yet, says so and exits 1.
 * @param {string} command the installed command's name, for the message
 * @param {URL} entry the compiled entry point, e.g. `new URL('../dist/bin.js', import.meta.url)`
 */
export function runCompiled(command, entry) {
  return import(entry.href).catch((error) => {
    if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bin.js')) {
      process.stderr.write(
        `${command} is not built yet: run \`npm run build\` at the repository root.\n`,
      );
      process.exit(1);
    }
    throw error;
  });
}
