// The TypeScript SDK's OAuth client (an OAuthClientProvider given to StreamableHTTPClientTransport as
// its authProvider) against an OAuth-protected MCP server, loaded from the node_modules folder named by
// MCPTAP_TS_SDK. Usage: node ts_oauth_client.mjs SDK MODE URL [PROXY] [FAULT]
//   SDK    v1: @modelcontextprotocol/sdk 1.32, v2: @modelcontextprotocol/client 2.4
//   MODE   legacy (the initialize handshake) or auto (v2 only: 2026-07-28 where the server speaks it)
//   PROXY  an explicit HTTP proxy (http://HOST:PORT) every request goes through: the MCP server's, the
//          authorization server's and the browser step's; '-' for none (a host under mcptap.test is then
//          dialled on 127.0.0.1)
//   FAULT  planted in what the client sends: 'token-in-query' (every MCP request also carries its
//          access token as the query parameter access_token), 'no-resource' (the authorization and
//          token requests without their `resource` parameter)
// The flow is the SDK's as an application drives it: the first connection is refused (401), the SDK
// discovers (RFC 9728, RFC 8414), registers, makes the PKCE authorization URL and hands it to
// redirectToAuthorization; the browser step is done headlessly (the URL is fetched without following
// its redirect, and the code read from its Location); then finishAuth(code) and a new connection with
// the token. Every wait is bounded (DEADLINE_MS). Prints one JSON line: the protocol version, the
// tools, an echo.
import { createRequire } from 'node:module';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';

const DEADLINE_MS = 60000;
const REDIRECT = 'http://127.0.0.1:1/callback'; // never dialled: the redirect's Location is read instead

const require = createRequire(path.join(process.env.MCPTAP_TS_SDK, 'noop.js'));
const [sdk, mode, url, proxyArg = '-', fault = ''] = process.argv.slice(2);
const proxy = proxyArg === '-' ? null : new URL(proxyArg);
setTimeout(() => {
    process.stderr.write(`ts_oauth_client: no end after ${DEADLINE_MS} ms\n`);
    process.exit(3);
}, DEADLINE_MS).unref();

function load() {
    if (sdk === 'v1') {
        return {
            Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
            Http: require('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport,
            Unauthorized: require('@modelcontextprotocol/sdk/client/auth.js').UnauthorizedError,
        };
    }
    const client = require('@modelcontextprotocol/client');
    return { Client: client.Client, Http: client.StreamableHTTPClientTransport, Unauthorized: client.UnauthorizedError };
}

// fetch on node:http: through an explicit HTTP proxy (node 20's fetch takes none) in absolute form, or
// straight to the server, where a name under mcptap.test is dialled on 127.0.0.1 (the test servers
// name hosts there; nothing resolves them); the answer streamed back as a web Response
function dial(input, init = {}) {
    const target = new URL(input instanceof Request ? input.url : String(input));
    const request = input instanceof Request ? input : null;
    const method = init.method || request?.method || 'GET';
    const headers = new Headers(init.headers || request?.headers || {});
    headers.set('host', target.host);
    const where = proxy ? { host: proxy.hostname, port: proxy.port, path: target.href }
        : { host: target.hostname, port: target.port || 80, path: target.pathname + target.search,
            lookup: (name, options, done) => (name.endsWith('.mcptap.test')
                ? (options?.all ? done(null, [{ address: '127.0.0.1', family: 4 }]) : done(null, '127.0.0.1', 4))
                : done(new Error(`not dialled: ${name}`))) };
    return new Promise((resolve, reject) => {
        const req = http.request({ ...where, method, headers: Object.fromEntries(headers) }, (res) => {
            const out = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
                for (const v of [].concat(value)) out.append(name, v);
            }
            const empty = res.statusCode === 204 || res.statusCode === 304 || method === 'HEAD';
            const body = empty ? null : Readable.toWeb(res);
            if (empty) res.resume();
            resolve(new Response(body, { status: res.statusCode, statusText: res.statusMessage, headers: out }));
        });
        req.on('error', reject);
        const signal = init.signal || request?.signal;
        signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
        const body = init.body ?? null;
        if (body === null) req.end();
        else req.end(typeof body === 'string' || body instanceof Uint8Array ? body : String(body));
    });
}

const baseFetch = (input, init) => {
    const host = new URL(input instanceof Request ? input.url : String(input)).hostname;
    return proxy || host.endsWith('.mcptap.test') ? dial(input, init) : fetch(input, init);
};
let tokens;

// the planted faults: what the client sends, changed on its way out
function planted(input, init = {}) {
    let target = new URL(input instanceof Request ? input.url : String(input));
    if (fault === 'token-in-query' && tokens && target.href.startsWith(new URL(url).origin + new URL(url).pathname)) {
        target.searchParams.set('access_token', tokens.access_token);
    }
    if (fault === 'no-resource') {
        target.searchParams.delete('resource');
        if (typeof init.body === 'string' || init.body instanceof URLSearchParams) {
            const form = new URLSearchParams(String(init.body));
            if (form.has('resource')) {
                form.delete('resource');
                init = { ...init, body: form.toString() };
            }
        }
    }
    return baseFetch(input instanceof Request ? new Request(target, input) : target, init);
}

const doFetch = fault ? planted : baseFetch;
let code;
let callback;
const provider = {
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
        return { client_name: 'mcptap ts test', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'],
                 response_types: ['code'], token_endpoint_auth_method: 'client_secret_post', scope: 'mcp' };
    },
    clientInformation() { return this.client; },
    saveClientInformation(info) { this.client = info; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    saveCodeVerifier(v) { this.verifier = v; },
    codeVerifier() { return this.verifier; },
    saveDiscoveryState(state) { this.discovery = state; },
    discoveryState() { return this.discovery; },
    async redirectToAuthorization(authorizationUrl) {
        let where = new URL(authorizationUrl);
        if (fault === 'no-resource') where.searchParams.delete('resource');
        const got = await doFetch(where, { redirect: 'manual' });
        const location = new URL(got.headers.get('location'));
        code = location.searchParams.get('code');
        callback = location.searchParams;
    },
};

const { Client, Http, Unauthorized } = load();

async function connect() {
    const transport = new Http(new URL(url), { authProvider: provider, fetch: doFetch });
    const client = new Client({ name: 'mcptap-ts-oauth', version: '1.0.0' }, sdk === 'v2' ? { versionNegotiation: { mode } } : {});
    await client.connect(transport);
    return { client, transport };
}

let connected;
try {
    connected = await connect();
} catch (err) {
    if (!(err instanceof Unauthorized) && err?.name !== 'UnauthorizedError') throw err;
    if (!code) throw new Error(`refused, and no authorization code: ${err}`);
    const transport = new Http(new URL(url), { authProvider: provider, fetch: doFetch });
    await (sdk === 'v2' ? transport.finishAuth(callback) : transport.finishAuth(code));
    connected = await connect();
}
const { client } = connected;
const out = {};
out.protocol_version = sdk === 'v2' ? client.getNegotiatedProtocolVersion() : (connected.transport.protocolVersion ?? 'handshake');
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const echoed = await client.callTool({ name: 'echo', arguments: { text: 'behind oauth' } });
out.echo = echoed.content[0].text;
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
