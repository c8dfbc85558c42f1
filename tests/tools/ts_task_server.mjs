// Test server on the real TypeScript SDK v1 (@modelcontextprotocol/sdk, loaded from the node_modules
// folder named by MCPTAP_TS_SDK) with its experimental tasks (MCP 2025-11-25), over stdio: the tool
// `bake` runs as a task (taskSupport required) that completes after `ms` milliseconds; the task
// store is the SDK's InMemoryTaskStore.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.MCPTAP_TS_SDK, 'noop.js'));
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { InMemoryTaskStore, InMemoryTaskMessageQueue } = require('@modelcontextprotocol/sdk/experimental/tasks');
const z = require('zod');

const server = new McpServer({ name: 'mcptap-test-ts-task-server', version: '1.32.2' }, {
    capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } },
    taskStore: new InMemoryTaskStore(),
    taskMessageQueue: new InMemoryTaskMessageQueue(),
});
server.experimental.tasks.registerToolTask('bake', {
    description: 'Bake for `ms` milliseconds, as a task.',
    inputSchema: { ms: z.number().int() },
    execution: { taskSupport: 'required' },
}, {
    async createTask({ ms }, { taskStore, taskRequestedTtl }) {
        const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 20 });
        setTimeout(() => {
            taskStore.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: `baked for ${ms} ms` }] });
        }, ms);
        return { task };
    },
    async getTask(_args, { taskId, taskStore }) {
        return await taskStore.getTask(taskId);
    },
    async getTaskResult(_args, { taskId, taskStore }) {
        return await taskStore.getTaskResult(taskId);
    },
});
await server.connect(new StdioServerTransport());
