// Test server on the real TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0, loaded from the
// node_modules folder named by MCPTAP_TS_SDK). Usage: node ts_server.mjs stdio | http PORT.
// One factory serves both eras: over stdio through serveStdio (the opening exchange picks the era:
// `initialize` or a 2026-07-28 request), over HTTP through createMcpHandler with its default
// 2025-era posture, the stateless fallback (each legacy POST gets a fresh transport with
// `sessionIdGenerator: undefined`; GET and DELETE are answered 405 "Method not allowed.").
// Tools: echo, add, slow (progress `steps` times), wait (holds the call until the client cancels
// it, at most WAIT_BOUND_MS), note (logs at info, then answers). A resource, a prompt with a
// completable argument.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import path from 'node:path';

const require = createRequire(path.join(process.env.MCPTAP_TS_SDK, 'noop.js'));
const { McpServer, createMcpHandler, completable } = require('@modelcontextprotocol/server');
const { serveStdio } = require('@modelcontextprotocol/server/stdio');
const { toNodeHandler } = require('@modelcontextprotocol/node');
const z = require('zod');

const WAIT_BOUND_MS = 30000;

function factory() {
    const server = new McpServer({ name: 'mcptap-test-ts-server', version: '2.4.0' },
        { capabilities: { logging: {}, completions: {} } });
    const text = (t) => ({ content: [{ type: 'text', text: t }] });
    server.registerTool('echo', { description: 'Return the text.', inputSchema: { text: z.string() } },
        async ({ text: t }) => text(t));
    server.registerTool('add', { description: 'Add two integers.', inputSchema: { a: z.number().int(), b: z.number().int() } },
        async ({ a, b }) => text(String(a + b)));
    server.registerTool('slow', { description: 'Report progress `steps` times.', inputSchema: { steps: z.number().int() } },
        async ({ steps }, ctx) => {
            const token = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                if (token !== undefined) {
                    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
                }
            }
            return text(`done after ${steps} steps`);
        });
    server.registerTool('wait', { description: 'Hold the call until the client cancels it.' },
        async (ctx) => {
            await new Promise((resolve) => {
                const timer = setTimeout(resolve, WAIT_BOUND_MS);
                ctx.mcpReq.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
            });
            return text(ctx.mcpReq.signal.aborted ? 'cancelled' : 'nobody cancelled');
        });
    server.registerTool('note', { description: 'Log a line at info, then answer.', inputSchema: { line: z.string() } },
        async ({ line }, ctx) => {
            await ctx.mcpReq.log('info', line, 'ts-server');
            return text(`noted ${line}`);
        });
    server.registerResource('readme', 'mcptap://readme', { mimeType: 'text/plain', description: 'A fixed note.' },
        async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'héllo from the TypeScript SDK ✓' }] }));
    const colours = ['red', 'green', 'blue'];
    server.registerPrompt('colour', {
        description: 'Ask about a colour.',
        argsSchema: { colour: completable(z.string(), (value) => colours.filter((c) => c.startsWith(value))) },
    }, async ({ colour }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Why is ${colour} nice?` } }] }));
    return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === 'stdio') {
    serveStdio(factory);
} else if (mode === 'http') {
    const handler = toNodeHandler(createMcpHandler(factory));
    const httpServer = createServer((req, res) => {
        if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        handler(req, res);
    });
    httpServer.listen(Number(port), '127.0.0.1');
    const stop = () => { httpServer.close(() => process.exit(0)); httpServer.closeAllConnections(); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
} else {
    console.error('usage: ts_server.mjs stdio | http PORT');
    process.exit(2);
}
