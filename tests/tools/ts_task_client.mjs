// Test client on the real TypeScript SDK v1 (loaded from MCPTAP_TS_SDK) with its experimental tasks:
// usage `node ts_task_client.mjs -- CMD [ARGS...]`. Calls the tool `bake` as a task
// (client.experimental.tasks.callToolStream: the call, tasks/get polls, tasks/result) and prints one
// JSON line: the negotiated version, the task's statuses as the stream gave them, and the result's text.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.MCPTAP_TS_SDK, 'noop.js'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { CallToolResultSchema } = require('@modelcontextprotocol/sdk/types.js');

const sep = process.argv.indexOf('--');
const [command, ...args] = process.argv.slice(sep + 1);
const client = new Client({ name: 'mcptap-test-ts-task-client', version: '1.32.2' });
await client.connect(new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' }));
const out = { protocol_version: client.getNegotiatedProtocolVersion?.() ?? null, statuses: [], text: null };
await client.listTools();
const stream = client.experimental.tasks.callToolStream({ name: 'bake', arguments: { ms: 150 } }, CallToolResultSchema,
    { task: { ttl: 60000 } });
for await (const message of stream) {
    if (message.type === 'taskCreated' || message.type === 'taskStatus') out.statuses.push(message.task.status);
    else if (message.type === 'result') out.text = message.result.content[0].text;
    else if (message.type === 'error') out.error = String(message.error);
}
await client.close();
console.log(JSON.stringify(out));
