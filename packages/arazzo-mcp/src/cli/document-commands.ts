import { openArazzoMcp } from '../service.js';
import type { DocumentOptions } from './command-line.js';
import type { CliIo } from './io.js';

/** `validate`: load the files and build the tools, then say how many there are. */
export async function validate(options: DocumentOptions, io: CliIo): Promise<number> {
  const opened = await openArazzoMcp({ ...options, env: io.env });
  await opened.close();
  const names = opened.catalog.tools.map((tool) => tool.name).join(', ');
  io.out(`OK: ${opened.loaded.location}: ${opened.catalog.tools.length} tools (${names})`);
  return 0;
}

/** `tools`: the tools/list entries and the credential variables each scheme reads, as JSON. */
export async function listTools(options: DocumentOptions, io: CliIo): Promise<number> {
  const opened = await openArazzoMcp({ ...options, env: io.env });
  await opened.close();
  const { credentials } = opened.loaded;
  io.out(JSON.stringify({ tools: opened.catalog.list(), credentials }, null, 2));
  return 0;
}
