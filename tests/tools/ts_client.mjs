// Test client on the real TypeScript SDK, loaded from the node_modules folder named by MCPTAP_TS_SDK.
// Usage: node ts_client.mjs SDK MODE PLAN (--stdio CMD [ARGS...] | --url URL)
//   SDK   v1: @modelcontextprotocol/sdk 1.32 (handshake era only), v2: @modelcontextprotocol/client 2.4
//   MODE  legacy (the initialize handshake) or auto (v2 only: a server/discover probe, 2026-07-28
//         where the server speaks it, else the handshake)
//   PLAN  JSON: what to do beyond the generic part. The generic part does what the server declares:
//         ping (handshake era), logging/setLevel, tools/list, resources/list and templates, prompts/list.
//         {"calls": [[tool, args], ...], "progress": [tool, args], "cancel": [tool, args, ms],
//          "reads": [uri, ...], "prompts": [[name, args], ...], "complete": [[ref, arg, value], ...],
//          "subscribe": uri, "log_level": "debug", "roots": [uri, ...] (the answer to roots/list),
//          "env": {...} (added to the stdio server's environment)}
//         `cancel` aborts the call `ms` after sending it (the SDK sends notifications/cancelled, or in
//         2026-07-28 over HTTP closes the request), then pings in the handshake era.
// Server requests (sampling, elicitation, roots) are answered with canned values. Every wait is bounded
// (REQUEST_TIMEOUT_MS, DEADLINE_MS). Prints one JSON line summarising what happened.
import { createRequire } from 'node:module';
import path from 'node:path';

const REQUEST_TIMEOUT_MS = 15000;
const DEADLINE_MS = 50000;

const require = createRequire(path.join(process.env.MCPTAP_TS_SDK, 'noop.js'));
const [sdk, mode, planText, how, ...target] = process.argv.slice(2);
const plan = JSON.parse(planText);
const ROOTS = (plan.roots || ['file:///tmp/mcptap-ts-client']).map((uri) => ({ uri, name: 'scratch' }));

function load() {
    if (sdk === 'v1') {
        const types = require('@modelcontextprotocol/sdk/types.js');
        return {
            Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
            Stdio: require('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport,
            Http: require('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport,
            // v1 names handlers by zod schema, v2 by method
            method: {
                'sampling/createMessage': types.CreateMessageRequestSchema,
                'elicitation/create': types.ElicitRequestSchema,
                'roots/list': types.ListRootsRequestSchema,
            },
        };
    }
    const client = require('@modelcontextprotocol/client');
    return {
        Client: client.Client,
        Stdio: require('@modelcontextprotocol/client/stdio').StdioClientTransport,
        Http: client.StreamableHTTPClientTransport,
        method: Object.fromEntries(['sampling/createMessage', 'elicitation/create', 'roots/list'].map((m) => [m, m])),
    };
}

function textOf(result) {
    return (result.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n').slice(0, 200);
}

function elicited(schema) {
    // an answer for each requested property, by type
    const content = {};
    for (const [name, prop] of Object.entries(schema?.properties || {})) {
        if (prop.enum) content[name] = prop.enum[0];
        else if (prop.oneOf) content[name] = prop.oneOf[0].const;
        else if (prop.type === 'boolean') content[name] = true;
        else if (prop.type === 'number' || prop.type === 'integer') content[name] = prop.minimum ?? 7;
        else if (prop.type === 'array') content[name] = [prop.items?.enum?.[0] ?? prop.items?.anyOf?.[0]?.const].filter((v) => v !== undefined);
        else if (prop.format === 'email') content[name] = 'ada@example.com';
        else content[name] = 'Ada Lovelace';
    }
    return content;
}

async function main() {
    const api = load();
    const out = { sdk, mode, server_requests: {}, notifications: {} };
    const count = (table, key) => { table[key] = (table[key] || 0) + 1; };
    const options = { capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } } };
    if (sdk === 'v2') options.versionNegotiation = { mode };
    const client = new api.Client({ name: `mcptap-ts-client-${sdk}`, version: '1.0.0' }, options);
    client.setRequestHandler(api.method['sampling/createMessage'], async () => {
        count(out.server_requests, 'sampling/createMessage');
        return { role: 'assistant', model: 'mcptap-canned', content: { type: 'text', text: 'a canned answer' }, stopReason: 'endTurn' };
    });
    client.setRequestHandler(api.method['elicitation/create'], async (request) => {
        count(out.server_requests, 'elicitation/create');
        if (request.params.mode === 'url') return { action: 'accept' };
        return { action: 'accept', content: elicited(request.params.requestedSchema) };
    });
    client.setRequestHandler(api.method['roots/list'], async () => {
        count(out.server_requests, 'roots/list');
        return { roots: ROOTS };
    });
    client.fallbackNotificationHandler = async (notification) => count(out.notifications, notification.method);

    let transport;
    if (how === '--stdio') {
        const [command, ...args] = target;
        transport = new api.Stdio({ command, args, env: { ...process.env, ...(plan.env || {}) }, stderr: 'inherit' });
    } else {
        transport = new api.Http(new URL(target[0]));
    }
    const opts = { timeout: REQUEST_TIMEOUT_MS };
    await client.connect(transport, opts);
    const caps = client.getServerCapabilities() || {};
    out.protocol_version = sdk === 'v2' ? client.getNegotiatedProtocolVersion() : (transport.protocolVersion ?? 'handshake');
    const modern = /^2026-/.test(out.protocol_version || '');
    out.server = client.getServerVersion()?.name;
    out.capabilities = Object.keys(caps).sort();
    // v1's callTool takes a result schema before the options
    const call = (params, o = opts) => (sdk === 'v1' ? client.callTool(params, undefined, o) : client.callTool(params, o));

    if (!modern) await client.ping(opts);
    if (caps.logging && !modern) await client.setLoggingLevel(plan.log_level || 'debug', opts);
    if (caps.tools) out.tools = (await client.listTools(undefined, opts)).tools.map((t) => t.name).sort();
    if (caps.resources) {
        out.resources = (await client.listResources(undefined, opts)).resources.map((r) => r.uri).sort();
        out.templates = (await client.listResourceTemplates(undefined, opts)).resourceTemplates.map((t) => t.uriTemplate).sort();
    }
    if (caps.prompts) out.prompts = (await client.listPrompts(undefined, opts)).prompts.map((p) => p.name).sort();

    out.calls = [];
    for (const [name, args] of plan.calls || []) {
        const result = await call({ name, arguments: args });
        out.calls.push({ name, is_error: Boolean(result.isError), text: textOf(result) });
    }
    if (plan.progress) {
        const [name, args] = plan.progress;
        out.progress = [];
        const result = await call({ name, arguments: args }, { ...opts, onprogress: (p) => out.progress.push([p.progress, p.total]) });
        out.progress_result = textOf(result);
    }
    if (plan.cancel) {
        const [name, args, ms] = plan.cancel;
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort('mcptap: cancelled by the test client'), ms);
        try {
            await call({ name, arguments: args }, { ...opts, signal: controller.signal });
            out.cancel = 'answered';
        } catch (error) {
            out.cancel = controller.signal.aborted ? 'cancelled' : `error: ${error.message}`;
        }
        clearTimeout(timer);
        // the SDK sends notifications/cancelled without waiting: a ping after it lets it out before
        // a close could cut it off (as a host that goes on working would)
        if (!modern) await client.ping(opts);
    }
    out.reads = [];
    for (const uri of plan.reads || []) {
        const result = await client.readResource({ uri }, opts);
        out.reads.push(result.contents.map((c) => (c.text !== undefined ? c.text.slice(0, 80) : `blob:${c.blob.length}`)));
    }
    out.prompt_messages = [];
    for (const [name, args] of plan.prompts || []) {
        out.prompt_messages.push((await client.getPrompt({ name, arguments: args }, opts)).messages.length);
    }
    out.completions = [];
    for (const [ref, arg, value] of plan.complete || []) {
        const result = await client.complete({ ref, argument: { name: arg, value } }, opts);
        out.completions.push(result.completion.values);
    }
    if (plan.subscribe) {
        await client.subscribeResource({ uri: plan.subscribe }, opts);
        await client.unsubscribeResource({ uri: plan.subscribe }, opts);
    }
    await client.close();
    return out;
}

const deadline = setTimeout(() => {
    console.error(`ts_client: not done after ${DEADLINE_MS} ms`);
    process.exit(3);
}, DEADLINE_MS);
main().then((out) => {
    clearTimeout(deadline);
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(0);
}, (error) => {
    console.error(error?.stack || String(error));
    process.exit(1);
});
